"""`report` on simulator runs: the per-task file `simulate --tasks-out` writes is a run of its own,
with utilization over time; a class of one job is drawn as a point; figures in PNG, SVG and PDF.
Every simulator run here is the real command on a tiny trace."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.report.cli import cdf_panel
from bridge.apps.report.load import ResultsError, load_run
from bridge.apps.report.measures import busy_series, completed
from bridge.cli import main
from bridge.common import plots

# 2 nodes x 1 slot; one long job (mean task duration above the stated 10 s), the others short
TRACE = """# reporting_cutoff=10
0 1 3 3
0 1 4 4
1 2 2 2 2
2 1 50 50
30 1 1 1
"""


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def run_files(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A FIFO run's per-job file, its per-task file and its --json summary."""
    trace = tmp_path / "tiny.trace"
    trace.write_text(TRACE)
    jobs, tasks = tmp_path / "fifo.csv", tmp_path / "fifo-tasks.csv"
    output = cli("simulate", str(trace), "--policy", "fifo", "--nodes", "2", "--out", str(jobs),
                 "--tasks-out", str(tasks), "--json")
    return jobs, tasks, json.loads(output.strip().splitlines()[-1])


def test_the_per_task_file_is_a_run_with_the_per_job_files_figures(run_files: tuple[Path, Path, dict],
                                                                    tmp_path: Path) -> None:
    jobs, tasks, summary = run_files
    cli("report", str(jobs), str(tasks), "--out", str(tmp_path / "rep"))
    table = pd.read_csv(tmp_path / "rep" / "report.csv", index_col=0)
    by_jobs, by_tasks = table["fifo (sim)"], table["fifo-tasks (sim)"]
    assert by_tasks["jobs"] == summary["jobs"] == 5 and by_tasks["succeeded"] == 5
    assert by_tasks["long jobs finished"] == 1 and by_tasks["short jobs finished"] == 4
    for row in ("short JCT p50 (s)", "short JCT p99 (s)", "long mean JCT (s)", "short slowdown p90",
                "long slowdown p50", "makespan (s)"):
        assert float(by_tasks[row]) == pytest.approx(float(by_jobs[row])), row
    assert float(by_tasks["long slowdown p50"]) == pytest.approx(summary["slowdown"]["long"]["p50"])
    # utilization from the task times is the simulator's own figure, and the per-job file's estimate agrees
    assert float(by_tasks["utilization"]) == pytest.approx(summary["utilization"])
    assert float(by_jobs["utilization"]) == pytest.approx(summary["utilization"])


def test_a_simulator_run_has_a_utilization_curve(run_files: tuple[Path, Path, dict]) -> None:
    jobs, tasks, _ = run_files
    assert busy_series(load_run(jobs)) is None  # a per-job file has no task times
    busy = busy_series(load_run(tasks))
    assert busy is not None and busy["utilization"].max() == 1.0  # both slots busy at the start
    assert busy["utilization"].between(0, 1).all() and busy["utilization"].iloc[-1] == 0.5  # the 50 s task ends last


def test_a_per_task_file_without_its_slots_has_no_utilization(run_files: tuple[Path, Path, dict],
                                                               tmp_path: Path) -> None:
    _, tasks, _ = run_files
    older = tmp_path / "older.csv"
    pd.read_csv(tasks).drop(columns=["cluster_slots"]).to_csv(older, index=False)
    run = load_run(older)
    assert run.n_slots is None and busy_series(run) is None
    broken = tmp_path / "broken.csv"
    pd.read_csv(tasks).assign(cluster_slots=2.5).to_csv(broken, index=False)
    with pytest.raises(ResultsError, match="broken.csv: column cluster_slots: expected a whole number"):
        load_run(broken)
    backwards = tmp_path / "backwards.csv"
    frame = pd.read_csv(tasks)
    frame.loc[1, "end"] = frame.loc[1, "start"] - 1
    frame.to_csv(backwards, index=False)
    with pytest.raises(ResultsError, match="backwards.csv: line 3: end .* is before start"):
        load_run(backwards)


def test_a_class_of_one_job_is_drawn_as_a_point(run_files: tuple[Path, Path, dict]) -> None:
    jobs, _, _ = run_files
    done = {"fifo": completed(load_run(jobs).jobs, 10.0)}
    assert (done["fifo"]["cls"] == "long").sum() == 1
    fig, (short_ax, long_ax) = plt.subplots(1, 2)
    try:
        plots._panel(short_ax, cdf_panel(done, "jct", "short", "JCT (s)", 10.0))
        plots._panel(long_ax, cdf_panel(done, "jct", "long", "JCT (s)", 10.0))
        (one,) = long_ax.get_lines()
        assert one.get_marker() == "o" and len(one.get_xdata()) == 1
        assert short_ax.get_lines()[0].get_marker() in ("None", None, "")  # four jobs: a line, no markers
        assert not long_ax.texts  # a panel with data, not the "no completed jobs" note
    finally:
        plt.close(fig)


def test_figures_in_every_format_asked_for(run_files: tuple[Path, Path, dict], tmp_path: Path) -> None:
    _, tasks, _ = run_files
    out = tmp_path / "rep"
    output = cli("report", str(tasks), "--out", str(out), "--format", "svg,png,pdf")
    heads = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}
    for name in ("jct_cdf", "slowdown_cdf", "utilization"):
        for suffix, head in heads.items():
            assert (out / f"{name}{suffix}").read_bytes()[:len(head)] == head
            assert f"plot: {out / name}{suffix}" in output
    default = tmp_path / "default"
    cli("report", str(tasks), "--out", str(default))
    assert sorted(p.suffix for p in default.iterdir() if p.stem == "utilization") == [".png"]
    for bad, says in (("png,gif", "'gif' is not one of png, svg, pdf"), ("pdf,pdf", "names one twice")):
        result = CliRunner().invoke(main, ["report", str(tasks), "--out", str(tmp_path / bad), "--format", bad])
        assert result.exit_code == 2 and says in result.output and not (tmp_path / bad).exists()
