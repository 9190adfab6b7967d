"""Issue 33, parts 1 and 4: `report` splits short and long jobs like `simulate` (one cutoff rule for
every command), with log-scaled CDF panels and runs of the same file name kept apart; `trace
generate` and `simulate` state the cluster a load refers to; `--list-policies` prints values as
`--param` takes them; `simulate --tasks-out`. Every run here is the real command on a tiny trace."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.report.load import distinguishing_suffixes
from bridge.apps.simlive.session import Comparison
from bridge.cli import main
from bridge.common import metrics, plots
from policies.framework.registry import ConfigError, config_for, default_registry

# 2 nodes x 1 slot; a job is long iff its mean task duration is above the stated 10 s. Short jobs
# wait behind long ones or find the cluster idle, long ones run at once or queue behind 1000 s
# tasks: JCTs and slowdowns of both classes span more than a decade.
TRACE = """# reporting_cutoff=10 (this test's)
0 1 100 100
0 1 100 100
0.5 1 1 1
200 1 1 1
200 1 100 100
200.1 1 100 100
200.2 2 1000 1000 1000
250 1 1 1
301 1 100 100
"""
CUTOFF_ROWS = ("short jobs finished", "long jobs finished")


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def simulate(trace: Path, policy: str, out: Path, *extra: str) -> dict:
    """The summary of a real `simulate` run (--json), its per-job file written to `out`."""
    return json.loads(cli("simulate", "--trace", str(trace), "--policy", policy, "--nodes", "2",
                          "--out", str(out), "--json", *extra).strip().splitlines()[-1])


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.trace"
    path.write_text(TRACE)
    return path


@pytest.fixture
def axes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[tuple[str, str]]]]:
    """Every figure `bridge.common.plots` saves, as (panel title, x scale) of its visible axes, by file name."""
    seen: dict[str, list[tuple[str, str]]] = {}
    save = plots._save

    def spy(fig, path, also=()):  # type: ignore[no-untyped-def]
        seen[path.name] = [(ax.get_title(), ax.get_xscale()) for ax in fig.axes if ax.get_visible()]
        return save(fig, path, also)

    monkeypatch.setattr(plots, "_save", spy)
    yield seen


def test_two_runs_named_run_csv_split_into_short_and_long_with_log_cdf_panels(
        tmp_path: Path, trace: Path, axes: dict[str, list[tuple[str, str]]]) -> None:
    """Done when: `report` over two simulator outputs named run.csv in two folders shows both runs,
    split into short and long jobs, with log-scaled CDF panels."""
    fifo = simulate(trace, "fifo", tmp_path / "a" / "run.csv")
    sparrow = simulate(trace, "sparrow", tmp_path / "b" / "run.csv")
    output = cli("report", str(tmp_path / "a" / "run.csv"), str(tmp_path / "b" / "run.csv"),
                 "--out", str(tmp_path / "rep"))

    assert "reporting cutoff 10 s (recorded by simulate)" in output
    table = pd.read_csv(tmp_path / "rep" / "report.csv", index_col=0)
    assert list(table.columns) == ["run (sim) [a]", "run (sim) [b]"]
    for label, summary in (("run (sim) [a]", fifo), ("run (sim) [b]", sparrow)):
        assert table.loc["short jobs finished", label] == 3 and table.loc["long jobs finished", label] == 6
        for cls in ("short", "long"):
            assert table.loc[f"{cls} JCT p90 (s)", label] == pytest.approx(summary["jct"][cls]["p90"])
            assert table.loc[f"{cls} slowdown p99", label] == pytest.approx(summary["slowdown"][cls]["p99"])
    assert table.loc["short JCT p50 (s)", "run (sim) [a]"] != table.loc["short JCT p50 (s)", "run (sim) [b]"]

    for name in ("jct_cdf.png", "slowdown_cdf.png"):
        assert [(title.split()[0], scale) for title, scale in axes[name]] == [("short", "log"), ("long", "log")]
        assert (tmp_path / "rep" / name).read_bytes()[:4] == b"\x89PNG"
    assert [scale for _, scale in axes["utilization.png"]] == ["linear"]


def test_a_narrow_range_keeps_a_linear_axis() -> None:
    assert not plots.spans_decades([100.0, 900.0]) and plots.spans_decades([1.0, 10.0, 2.0])
    assert not plots.spans_decades([0.0, 5.0, float("nan")])  # one positive value spans nothing


def test_one_cutoff_rule_in_trace_generate_simulate_report_and_sim_vs_live(tmp_path: Path) -> None:
    generated = tmp_path / "y.trace"
    output = cli("trace", "generate", "yahoo", "--jobs", "40", "--seed", "1", "--load", "0.5", "--nodes", "40",
                 "--out", str(generated))
    assert "reporting cutoff 90.5811 s" in output
    summary = simulate(generated, "fifo", tmp_path / "y.csv", "--nodes", "40")
    assert summary["reporting_cutoff"] == 90.5811 and summary["reporting_cutoff_origin"] == "stated by the trace"
    assert "reporting cutoff 90.5811 s (recorded by simulate)" in cli("report", str(tmp_path / "y.csv"))

    # A trace that states no cutoff: the 90th percentile of its jobs' mean task durations, in
    # simulate, in report (recorded, or recomputed from a per-job file without the column) and in
    # sim-vs-live (the same function over the jobs it plays).
    bare = tmp_path / "bare.trace"
    bare.write_text("".join(line + "\n" for line in generated.read_text().splitlines()[1:]))
    means = pd.read_csv(tmp_path / "y.csv")["mean_duration"]
    p90 = metrics.percentile(means, 90)
    summary = simulate(bare, "fifo", tmp_path / "bare.csv", "--nodes", "40")
    assert summary["reporting_cutoff"] == pytest.approx(p90) and p90 != 90.5811
    old = pd.read_csv(tmp_path / "bare.csv").drop(columns=["reporting_cutoff", "cluster_slots"])
    old.to_csv(tmp_path / "old.csv", index=False)
    for per_job in ("bare.csv", "old.csv"):
        head = cli("report", str(tmp_path / per_job)).splitlines()[0]
        assert float(re.search(r"reporting cutoff (\S+) s", head).group(1)) == pytest.approx(p90, rel=1e-5)

    tiny = Path(__file__).resolve().parents[2] / "workloads" / "examples" / "trace-tiny.toml"
    comparison = Comparison.prepare(tiny, ["fifo"], 2, 1, None, None, {}, False, None)
    assert comparison.cutoff == metrics.reporting_cutoff([j.mean_duration for j in comparison.jobs])
    assert comparison.cutoff_origin == "p90 of the jobs' mean task durations"


def test_runs_split_with_different_cutoffs_need_one_given(tmp_path: Path, trace: Path) -> None:
    simulate(trace, "fifo", tmp_path / "a.csv")
    simulate(trace, "fifo", tmp_path / "b.csv", "--report-cutoff", "50")
    refused = CliRunner().invoke(main, ["report", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")])
    assert refused.exit_code == 1 and "a (sim): 10 s, b (sim): 50 s" in refused.output
    assert "--cutoff" in refused.output and "Traceback" not in refused.output
    output = cli("report", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--cutoff", "500")
    assert "reporting cutoff 500 s (as given)" in output
    table = pd.read_csv(tmp_path / "a-report" / "report.csv", index_col=0)
    assert (table.loc["short jobs finished", "a (sim)"], table.loc["long jobs finished", "a (sim)"]) == (8, 1)


def test_counts_are_integers_and_simulator_utilization_is_filled_in(tmp_path: Path, trace: Path) -> None:
    summary = simulate(trace, "fifo", tmp_path / "run.csv")
    cli("report", str(tmp_path / "run.csv"), "--out", str(tmp_path / "rep"))
    rows = dict(line.split(",", 1) for line in (tmp_path / "rep" / "report.csv").read_text().splitlines())
    assert (rows["jobs"], rows["succeeded"], rows["short jobs finished"], rows["long jobs finished"]) == \
        ("9", "9", "3", "6")
    assert float(rows["utilization"]) == pytest.approx(summary["utilization"])


def test_report_files_are_readable_by_the_group(tmp_path: Path, trace: Path) -> None:
    simulate(trace, "fifo", tmp_path / "run.csv")
    old = os.umask(0o022)
    try:
        cli("report", str(tmp_path / "run.csv"), "--out", str(tmp_path / "rep"))
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "rep").iterdir()}
    assert set(modes) == {"report.csv", "report.txt", "jct_cdf.png", "slowdown_cdf.png", "utilization.png"}
    assert set(modes.values()) == {0o644}


def test_labels_keep_the_shortest_distinguishing_end_of_the_path(tmp_path: Path) -> None:
    assert distinguishing_suffixes([tmp_path / "x" / "a" / "run.csv", tmp_path / "y" / "a" / "run.csv"]) == \
        ["x/a", "y/a"]
    assert distinguishing_suffixes([tmp_path / "a" / "run.csv", tmp_path / "a" / "run.parquet"]) == \
        ["run.csv", "run.parquet"]
    assert distinguishing_suffixes([tmp_path / "run.csv", tmp_path / "run.csv"]) == ["#1", "#2"]


def test_trace_generate_states_the_cluster_its_load_is_on(tmp_path: Path) -> None:
    output = cli("trace", "generate", "yahoo", "--jobs", "50", "--seed", "1", "--load", "0.9", "--nodes", "300",
                 "--out", str(tmp_path / "y.trace"))
    assert re.search(r"offered load=0\.\d+ at 300 nodes x 1 slot", output), output
    shrunk = cli("trace", "generate", "yahoo", "--jobs", "50", "--seed", "1", "--load", "0.9", "--nodes", "300",
                 "--shrink", "0.1", "--out", str(tmp_path / "s.trace"))
    assert "the same offered load at 30 nodes x 1 slot" in shrunk


def test_simulate_warns_once_when_the_trace_overloads_its_cluster(tmp_path: Path) -> None:
    trace = tmp_path / "y.trace"
    cli("trace", "generate", "yahoo", "--jobs", "30", "--seed", "1", "--load", "0.9", "--nodes", "40",
        "--out", str(trace))
    args = ["simulate", "--trace", str(trace), "--policy", "fifo"]
    over = CliRunner().invoke(main, [*args, "--nodes", "4"])
    assert over.exit_code == 0, over.output
    warnings = [line for line in over.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "load" in warnings[0] and "4 nodes x 1 slot" in warnings[0], over.stderr
    load = float(re.search(r"offers load (\S+)", warnings[0]).group(1))
    assert load == pytest.approx(json.loads(cli(*args, "--nodes", "4", "--json").splitlines()[-1])["offered_load"],
                                 rel=1e-2) and load > 1
    fits = CliRunner().invoke(main, [*args, "--nodes", "40"])
    assert fits.exit_code == 0 and "warning:" not in fits.stderr


def test_list_policies_prints_values_param_takes_back() -> None:
    output = cli("simulate", "--list-policies")
    assert "reading=roulette" in output and "tie_break=var" in output and "Reading." not in output
    assert "TieBreak." not in output and "=True" not in output and "=False" not in output
    lines = output.splitlines()
    for name in default_registry().names():
        line = next(lines[i + 1] for i, text in enumerate(lines) if text.split()[0] == name)
        given = dict(re.findall(r"(?:^|, )([A-Za-z_]\w*)=(\S*?)(?=,\s|\s\(|$)", line.strip()))
        if line.strip() != "(no parameters)":
            assert given, line
        assert config_for(name, given) == config_for(name), name  # the printed defaults, read back
    with pytest.raises(ConfigError, match="is not one of var, random, sum"):
        config_for("kairos", {"tie_break": "nope"})


def test_tasks_out_writes_one_record_per_run_segment(tmp_path: Path, trace: Path) -> None:
    out = tmp_path / "deep" / "tasks.csv"
    old = os.umask(0o022)
    try:
        output = cli("simulate", "--trace", str(trace), "--policy", "fifo", "--nodes", "2", "--tasks-out", str(out))
    finally:
        os.umask(old)
    assert f"per-task records: {out}" in output and out.stat().st_mode & 0o777 == 0o644
    tasks = pd.read_csv(out)
    assert list(tasks.columns) == ["job_id", "task", "node", "slot", "queued", "start", "end", "done",
                                   "reporting_cutoff", "cluster_slots"]
    assert (tasks["reporting_cutoff"] == 10).all() and (tasks["cluster_slots"] == 2).all()
    assert len(tasks) == 10 and tasks["done"].all()  # FIFO never suspends: one segment per task
    assert sorted(tasks.groupby("job_id").size()) == [1] * 8 + [2]
    submits = {i: float(line.split()[0]) for i, line in enumerate(TRACE.splitlines()[1:])}
    assert (tasks["queued"] == tasks["job_id"].map(submits)).all()
    assert ((tasks["queued"] <= tasks["start"]) & (tasks["start"] < tasks["end"])).all()
    assert set(tasks["node"]) == {0, 1}
    bad = CliRunner().invoke(main, ["simulate", "--trace", str(trace), "--policy", "fifo", "--nodes", "2",
                                    "--tasks-out", str(tmp_path / "t.txt")])
    assert bad.exit_code == 2 and "--tasks-out" in bad.output and not (tmp_path / "t.txt").exists()
