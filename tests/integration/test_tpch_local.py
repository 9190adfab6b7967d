"""All 22 TPC-H queries on Spark (local mode) give DuckDB's answers on the same Parquet data."""
from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from workloads.tpch.datagen import TABLES, generate
from workloads.tpch import QUERY_NUMBERS
from workloads.tpch.queries import query_texts
from workloads.tpch.reference import check_answer, duckdb_answers
from workloads.tpch.spark import register_tables, run_query

SCALE_FACTOR = 0.01


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(SCALE_FACTOR, tmp_path_factory.mktemp("tpch"))


@pytest.fixture(scope="module")
def spark(data_dir: Path):
    session = (SparkSession.builder.master("local[2]").appName("test-tpch-local")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "512m")
               # Paths here are local even if an earlier test module started this
               # process's Spark JVM with the testbed's HADOOP_CONF_DIR (hdfs:// default).
               .config("spark.hadoop.fs.defaultFS", "file:///")
               .config("spark.ui.enabled", "false")
               .getOrCreate())
    register_tables(session, str(data_dir))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def reference(data_dir: Path) -> dict[int, list[tuple]]:
    return duckdb_answers(data_dir, QUERY_NUMBERS)


def test_generator_writes_all_tables(data_dir: Path) -> None:
    assert sorted(p.stem for p in data_dir.glob("*.parquet")) == sorted(TABLES)


def test_generation_is_cached(data_dir: Path) -> None:
    assert generate(SCALE_FACTOR, data_dir.parent) == data_dir


def test_all_queries_come_from_duckdb() -> None:
    texts = query_texts()
    assert sorted(texts) == list(QUERY_NUMBERS)
    assert "l_returnflag" in texts[1]


@pytest.mark.parametrize("number", QUERY_NUMBERS)
def test_spark_matches_duckdb(spark: SparkSession, reference: dict[int, list[tuple]],
                              number: int) -> None:
    verdict = check_answer(number, run_query(spark, number), reference[number])
    assert verdict.equal, f"Q{number}: {verdict.detail}"
