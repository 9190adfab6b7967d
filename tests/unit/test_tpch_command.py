"""`schedbridge tpch` without a cluster: the answers are really checked (a corrupted reference
answer fails the command), the table and results files, and the options refused at parse time."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner, Result

from bridge.apps import tpch
from bridge.apps.tpch import QueryRun, judge
from bridge.cli import main
from workloads.tpch import parse_query_numbers

# Q6 returns one row (revenue); Q1 is ordered by its first two columns.
SPARK = {6: [(123456.789,)], 1: [("A", "F", 10.0), ("N", "O", 20.0)]}


def _invoke(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reference: dict[int, list[tuple]],
            *args: str) -> Result:
    """The command with the cluster and DuckDB replaced: Spark answers `SPARK`, DuckDB `reference`."""
    cluster = SimpleNamespace(describe=lambda: "a fake cluster")
    monkeypatch.setattr(tpch, "_prepare", lambda *a: (cluster, "hdfs:///tpch", tmp_path))
    monkeypatch.setattr(tpch, "duckdb_answers", lambda data, numbers: {n: reference[n] for n in numbers})
    monkeypatch.setattr(tpch, "run_queries", lambda policy, conf, target, data, numbers:
                        [QueryRun(n, 0.5, SPARK[n]) for n in numbers])
    return CliRunner().invoke(main, ["tpch", "--policy", "fifo", "--queries", "6,1",
                                     "--out", str(tmp_path / "out"), *args])


def test_equal_answers_pass_and_are_tabled(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    done = _invoke(monkeypatch, tmp_path, {6: [(123456.789,)], 1: list(SPARK[1])})
    assert done.exit_code == 0, done.output
    assert "all 2 answers equal DuckDB's" in done.output
    rows = list(csv.DictReader((tmp_path / "out" / "queries.csv").open()))
    assert [(r["query"], r["rows"], r["match"]) for r in rows] == [("Q1", "2", "yes"), ("Q6", "1", "yes")]
    assert json.loads((tmp_path / "out" / "answers.json").read_text())["6"] == [[123456.789]]


def test_a_corrupted_reference_answer_fails_the_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    done = _invoke(monkeypatch, tmp_path, {6: [(123999.0,)], 1: list(SPARK[1])})
    assert done.exit_code == 1
    assert "1 of 2 answers are not DuckDB's (Q6)" in done.output
    rows = {r["query"]: r for r in csv.DictReader((tmp_path / "out" / "queries.csv").open())}
    assert rows["Q6"]["match"] == "NO" and "123456.789 != 123999.0" in rows["Q6"]["detail"]
    assert rows["Q1"]["match"] == "yes"


def test_row_order_counts_where_the_query_orders() -> None:
    swapped = {1: list(reversed(SPARK[1]))}
    (verdict,) = judge([QueryRun(1, 0.1, SPARK[1])], swapped)
    assert not verdict.match and "row 0" in verdict.detail


def test_a_failed_query_is_a_mismatch_with_its_error() -> None:
    (verdict,) = judge([QueryRun(6, 0.1, [], "failed: java.lang.OutOfMemoryError")], {6: SPARK[6]})
    assert not verdict.match and verdict.rows == 0 and "OutOfMemoryError" in verdict.detail


def test_query_numbers_are_parsed_sorted_and_once() -> None:
    assert parse_query_numbers("6, 1,6") == (1, 6)
    with pytest.raises(ValueError, match="not 0"):
        parse_query_numbers("0")
    with pytest.raises(ValueError, match="got 'q3'"):
        parse_query_numbers("1,q3")


@pytest.mark.parametrize("args,message", [
    (("--policy", "fifo", "--queries", "1,23"), "TPC-H has queries 1 to 22, not 23"),
    (("--policy", "fifo", "--scale", "nan"), "--scale"),
    (("--policy", "fifo", "--param", "novalue"), "expected KEY=VALUE"),
    (("--policy", "stock", "--param", "a=1"), "stock takes no policy parameters"),
    (("--policy", "stock-fair", "--param", "a=1"), "stock-fair takes no policy parameters"),
])
def test_bad_options_are_refused_before_any_cluster_is_touched(monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...],
                                                               message: str) -> None:
    monkeypatch.setattr(tpch, "resolve", lambda *a: pytest.fail("a cluster was chosen"))
    done = CliRunner().invoke(main, ["tpch", *args])
    assert done.exit_code != 0 and message in done.output


def test_the_estimates_file_reaches_the_policy_by_its_absolute_path(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    (tmp_path / "e.json").write_text("{}")
    confs: list[dict[str, str]] = []
    cluster = SimpleNamespace(describe=lambda: "a fake cluster")
    monkeypatch.setattr(tpch, "_prepare", lambda *a: (cluster, "hdfs:///tpch", tmp_path))
    monkeypatch.setattr(tpch, "duckdb_answers", lambda data, numbers: {n: SPARK[n] for n in numbers})
    monkeypatch.setattr(tpch, "run_queries", lambda policy, conf, target, data, numbers:
                        confs.append(conf) or [QueryRun(n, 0.5, SPARK[n]) for n in numbers])
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["tpch", "--policy", "hawk", "--queries", "6", "--estimates", "e.json",
                                     "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert confs == [{"spark.schedbridge.estimates": str(tmp_path / "e.json")}]
