"""Running TPC-H queries on Spark SQL over a Parquet dataset (local path or HDFS)."""
from __future__ import annotations

from pyspark.sql import SparkSession

from workloads.tpch.datagen import table_paths
from workloads.tpch.queries import for_spark, query_texts


def register_tables(spark: SparkSession, data_dir: str) -> None:
    """The eight tables as temporary views of `spark` (use `spark.newSession()` per dataset)."""
    for table, path in table_paths(data_dir).items():
        spark.read.parquet(path).createOrReplaceTempView(table)


def run_query(spark: SparkSession, number: int) -> list[tuple]:
    """Rows of query `number` on the views registered in `spark`."""
    return [tuple(row) for row in spark.sql(for_spark(query_texts()[number])).collect()]
