"""TPC-H: Parquet data from tpchgen-cli, query texts and reference answers from DuckDB, runs on Spark SQL."""

QUERY_NUMBERS = tuple(range(1, 23))
