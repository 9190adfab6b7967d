"""Reference answers: the same query text run by DuckDB over the same Parquet files, and the
check of another engine's answer against them."""
from __future__ import annotations

from pathlib import Path

from workloads.tpch.compare import Comparison, compare_results
from workloads.tpch.datagen import table_paths
from workloads.tpch.queries import connect, is_ordered, query_texts


def duckdb_answers(data_dir: Path, numbers: tuple[int, ...]) -> dict[int, list[tuple]]:
    """Query number -> DuckDB's result rows, over `data_dir/<table>.parquet`."""
    texts = query_texts()
    with connect() as con:
        for table, path in table_paths(str(data_dir)).items():
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{path}')")
        return {n: con.execute(texts[n]).fetchall() for n in numbers}


def check_answer(number: int, actual: list[tuple], expected: list[tuple]) -> Comparison:
    """Query `number`'s rows from another engine against DuckDB's `expected`; row order counts
    only where the query fixes it (ORDER BY)."""
    return compare_results(actual, expected, ordered=is_ordered(query_texts()[number]))
