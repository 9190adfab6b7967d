"""WordCount on Spark (local mode) counts exactly what Python's Counter counts."""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from workloads.wordcount.inputgen import LINE_CHARS, write_input
from workloads.wordcount.job import input_lines, run, word_counts
from workloads.wordcount.reference import reference_digest


@pytest.fixture(scope="module")
def sc():
    session = (SparkSession.builder.master("local[2]").appName("test-wordcount-local")
               .config("spark.driver.memory", "512m")
               # Paths here are local even if an earlier test module started this
               # process's Spark JVM with the testbed's HADOOP_CONF_DIR (hdfs:// default).
               .config("spark.hadoop.fs.defaultFS", "file:///")
               .config("spark.ui.enabled", "false")
               .getOrCreate())
    yield session.sparkContext
    session.stop()


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_input(tmp_path_factory.mktemp("wc") / "input.txt", 200_000, seed=7)


def python_count(path: Path) -> Counter:
    return Counter(path.read_text().split())


def test_input_is_lines_of_100_characters(text: Path) -> None:
    lines = text.read_text().split("\n")
    assert lines[-1] == ""
    assert {len(line) for line in lines[:-1]} == {LINE_CHARS}
    assert text.stat().st_size == 200_000 // (LINE_CHARS + 1) * (LINE_CHARS + 1)


def test_input_is_seeded(text: Path, tmp_path: Path) -> None:
    same = write_input(tmp_path / "same.txt", 200_000, seed=7)
    other = write_input(tmp_path / "other.txt", 200_000, seed=8)
    assert same.read_bytes() == text.read_bytes() != other.read_bytes()


@pytest.mark.parametrize("extra_flops", [0, 50])
def test_counts_equal_python_counter(sc: SparkContext, text: Path, extra_flops: int) -> None:
    counts = dict(word_counts(sc, str(text), reduces=3, extra_flops=extra_flops).collect())
    assert counts == python_count(text)


def test_runs_answer_is_the_reference_digest(sc: SparkContext, text: Path) -> None:
    """What a replay checks a WordCount by: Spark's digest of its counts, Python's of the file."""
    digest = run(sc, str(text), reduces=3)
    assert digest == reference_digest(text) and digest.total == sum(python_count(text).values())


def test_run_writes_output(sc: SparkContext, text: Path, tmp_path: Path) -> None:
    run(sc, str(text), reduces=2, output_path=str(tmp_path / "out"))
    written = sc.textFile(str(tmp_path / "out")).map(ast.literal_eval).collect()
    assert dict(written) == python_count(text)


def test_one_block_input_is_one_map_task(sc: SparkContext, text: Path) -> None:
    """200 kB is one block of the local file system (32 MB): one map task, not textFile's two."""
    assert sc.textFile(str(text)).getNumPartitions() == 2  # what the job would get by default
    assert input_lines(sc, str(text)).getNumPartitions() == 1
