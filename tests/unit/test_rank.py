"""`schedbridge rank`: every listed policy on a trace imported from a real event log (the committed
fixture of test_trace_import), ranked; the ones that cannot run on the cluster are rows saying
why, never dropped; the ranking rule itself on hand-made outcomes."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from bridge.apps import rank
from bridge.apps.rank import MEASURES, Outcome, Point, ranked
from bridge.cli import main
from policies.registry import default_registry
from tests.unit.test_trace_import import FIXTURE


def test_every_listed_policy_is_ranked_or_says_why_not(tmp_path: Path) -> None:
    trace, out = tmp_path / "six.trace", tmp_path / "rank"
    imported = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(FIXTURE), "--out", str(trace)])
    assert imported.exit_code == 0, imported.output
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "2", "--workers", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "6 jobs, 33 tasks" in result.output
    assert "cluster 2 nodes x 1 slots = 2 slots; offered load on it" in result.output
    table = pd.read_csv(out / "ranking.csv")
    assert sorted(table["policy"]) == sorted(default_registry().names())  # all of them, once each
    ran = table[table["rank"] != "-"]
    assert list(ran["rank"].astype(int)) == list(range(1, len(ran) + 1))
    assert {"fifo", "sparrow", "hawk", "eagle"} <= set(ran["policy"])
    finished_all = ran[ran["note"].isna()]  # before those that left jobs unfinished, best score first
    assert finished_all["score"].is_monotonic_increasing and len(finished_all) >= 4
    assert list(ran["note"].notna()) == sorted(ran["note"].notna())
    not_run = table[table["rank"] == "-"]
    assert all(str(note).startswith(("not run: ", "failed: ")) for note in not_run["note"])
    for policy, note in zip(not_run["policy"], not_run["note"]):
        assert policy in result.output and str(note) in result.output
    assert (out / "jct_cdf.png").stat().st_size > 0
    assert (out / "summary.txt").read_text() in result.output


def hawk_exits(point: Point) -> Outcome:
    """rank's run, whose worker process dies on hawk (module-level: the workers import it)."""
    if point.policy == "hawk":
        os._exit(3)
    return rank.run_point(point)


def test_a_policy_whose_worker_dies_fails_by_name_and_the_other_rows_are_written(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    trace, out = tmp_path / "t.trace", tmp_path / "rank"
    trace.write_text("0 2 1 1 1\n1 2 5 5 5\n2 1 1 1\n")
    monkeypatch.setattr(rank, "run_point", hawk_exits)
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "2", "--workers", "2", "--out", str(out),
                                       *(a for p in ("fifo", "hawk", "sparrow", "eagle") for a in ("--policy", p))])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "ranking.csv").set_index("policy")
    assert sorted(table.index) == ["eagle", "fifo", "hawk", "sparrow"]
    assert table.loc["hawk", "rank"] == "-" and table.loc["hawk", "note"].startswith("failed: its worker process died")
    assert (table.drop(index="hawk")["rank"] != "-").all()


def test_an_overloaded_cluster_is_called_out(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("0 4 10 10 10 10 10\n1 4 10 10 10 10 10\n2 1 1 1\n")
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "1", "--policy", "fifo", "--policy", "hawk",
                                       "--workers", "1", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "warning: the trace offers" in result.output and "what 1 slots can run" in result.output


def test_an_unknown_policy_is_refused_before_anything_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["rank", str(tmp_path / "t.trace"), "--nodes", "1", "--policy", "hawkk"])
    assert result.exit_code == 2 and "unknown policy 'hawkk' (did you mean 'hawk'?)" in result.output


def outcome(policy: str, short_p90: float, util: float, unfinished: int = 0) -> Outcome:
    measures = {m: 1.0 for m, _, _ in MEASURES} | {"short p90 (s)": short_p90, "utilization": util,
                                                    "long p50 (s)": math.nan, "long p90 (s)": math.nan}
    return Outcome(policy, measures, unfinished)


def test_the_ranking_rule() -> None:
    rows = ranked([outcome("a", 5.0, 0.5), outcome("b", 2.0, 0.9), outcome("c", 1.0, 0.1, unfinished=3),
                   outcome("d", 2.0, 0.2), Outcome("e", problem="not run: needs capacities")])
    assert [(r["rank"], r["policy"]) for r in rows] == [(1, "b"), (2, "d"), (3, "a"), (4, "c"), ("-", "e")]
    # scored: short p50 and makespan (equal: rank 1 each), short p90 (c 1, b and d tied at 2, a 4) and
    # utilization (b 1, a 2, d 3, c 4); no long job finished anywhere: the long columns are not scored
    by = {r["policy"]: r for r in rows}
    assert [by[p]["score"] for p in "bdac"] == [(1 + 1 + 2 + 1) / 4, (1 + 1 + 2 + 3) / 4, (1 + 1 + 4 + 2) / 4,
                                                (1 + 1 + 1 + 4) / 4]
    assert by["c"]["note"] == "3 jobs unfinished" and by["e"]["note"] == "not run: needs capacities"
