"""`schedbridge report` on two small hand-made results directories."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.report.cli import report, write_plots
from bridge.apps.report.load import ResultsError, load_runs
from bridge.apps.report.table import build
from bridge.common.tables import cell, text

ALL_SHORT = 100.0  # a reporting cutoff above every job's mean task duration (1 s)
JOB_COLUMNS = ["job_id", "category", "params", "submit_s", "start_s", "end_s", "status",
               "duration_alone_s"]


def make_run(path: Path, policy: str, jcts: list[float], alone: float | None = None,
             failed: int = 0) -> Path:
    """Jobs submitted every 10 s with the given completion times, on a 4-vcore cluster
    where 2 vcores are allocated for the whole run and tasks run 1 s per job."""
    path.mkdir()
    rows = [[i, "c", f'{{"job": {i}}}', 10.0 * i, 10.0 * i, 10.0 * i + jct, "succeeded", alone]
            for i, jct in enumerate(jcts)]
    rows += [[len(jcts) + k, "c", "{}", 0.0, float("nan"), 1.0, "failed", alone] for k in range(failed)]
    pd.DataFrame(rows, columns=JOB_COLUMNS).to_csv(path / "jobs.csv", index=False)
    span = max(r[5] for r in rows)
    pd.DataFrame({"time_s": [0.0, span / 2], "vcores_allocated": [2, 2], "vcores_total": [4, 4]}
                 ).to_csv(path / "utilization.csv", index=False)
    pd.DataFrame({"job_id": range(len(jcts)), "task_id": range(len(jcts)),
                  "launch_s": [10.0 * i for i in range(len(jcts))],
                  "finish_s": [10.0 * i + 1.0 for i in range(len(jcts))]}
                 ).to_csv(path / "tasks.csv", index=False)
    (path / "meta.json").write_text(json.dumps({"policy": policy, "mode": "shared", "source": "live"}))
    return path


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    fifo = make_run(tmp_path / "fifo", "fifo", [10.0, 20.0, 30.0, 40.0, 50.0], failed=1)
    other = make_run(tmp_path / "other", "other", [5.0, 5.0, 5.0, 5.0, 5.0], alone=5.0)
    return [fifo, other]


def test_table_says_who_placed_a_live_runs_tasks(two_runs: list[Path]) -> None:
    meta = json.loads((two_runs[1] / "meta.json").read_text())
    meta["plugin"] = {"placed_tasks": 40, "fallback_rounds": 3, "fallback_tasks": 2, "applications": 1,
                      "last_failure": "policy call exceeded its 50 ms deadline"}  # as replay writes it
    (two_runs[1] / "meta.json").write_text(json.dumps(meta))
    table = build(load_runs(two_runs), ALL_SHORT)
    assert table["other shared (live)"]["tasks placed by policy"] == 40
    assert table["other shared (live)"]["fallback rounds"] == 3
    assert pd.isna(table["fifo shared (live)"]["fallback rounds"])  # no plugin (stock): shown as "-"


def test_table_values(two_runs: list[Path]) -> None:
    table = build(load_runs(two_runs), ALL_SHORT)
    fifo, other = table["fifo shared (live)"], table["other shared (live)"]
    assert (fifo["jobs"], fifo["succeeded"], fifo["failed"]) == (6, 5, 1)
    assert fifo["short JCT p50 (s)"] == 30.0
    assert fifo["short JCT p90 (s)"] == pytest.approx(46.0)
    assert fifo["short mean JCT (s)"] == 30.0
    assert fifo["makespan (s)"] == 90.0            # first submit 0, last end 40 + 50
    assert fifo["SE (vcores)"] == pytest.approx(0.5)
    assert fifo["utilization"] == pytest.approx(5.0 / (4 * 41.0))  # busy 5 s over 4 vcores to the last task end
    assert fifo["UE (vcores)"] == pytest.approx(fifo["utilization"] / 0.5)
    assert other["short JCT p99 (s)"] == 5.0
    assert other["short slowdown p50"] == 1.0            # duration_alone_s given
    assert other["makespan (s)"] == 45.0


def test_slowdown_estimated_from_fastest_same_job(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", "a", [10.0, 40.0])
    b = make_run(tmp_path / "b", "b", [20.0, 10.0])
    table = build(load_runs([a, b]), ALL_SHORT)
    # job 0 alone ~ 10 (run a), job 1 alone ~ 10 (run b)
    assert table["a shared (live)"]["short slowdown p50"] == pytest.approx(2.5)
    assert table["b shared (live)"]["short slowdown p99"] == pytest.approx(1.99)


def test_cli_writes_table_and_plots(two_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(report, [str(p) for p in two_runs] + ["--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "fifo shared (live)" in result.output and "other shared (live)" in result.output
    for name in ("jct_cdf.png", "slowdown_cdf.png", "utilization.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = pd.read_csv(out / "report.csv", index_col=0)
    assert saved.loc["makespan (s)", "fifo shared (live)"] == 90.0


def test_run_without_tasks_or_utilization(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r", "p", [3.0])
    (run / "tasks.csv").unlink()
    (run / "utilization.csv").unlink()
    column = build(load_runs([run]), ALL_SHORT)["p shared (live)"]
    assert column["short JCT p50 (s)"] == 3.0
    assert pd.isna(column["SE (vcores)"]) and pd.isna(column["utilization"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "No artists with labels" from an empty plot
        plots = write_plots(load_runs([run]), tmp_path / "plots", ALL_SHORT)
    assert [p.name for p in plots] == ["jct_cdf.png", "slowdown_cdf.png", "utilization.png"]


def test_same_labels_are_told_apart(tmp_path: Path) -> None:
    runs = load_runs([make_run(tmp_path / "x", "p", [1.0]), make_run(tmp_path / "y", "p", [2.0])])
    assert [r.label for r in runs] == ["p shared (live) [x]", "p shared (live) [y]"]


def test_simulator_per_job_file_beside_a_live_run(two_runs: list[Path], tmp_path: Path) -> None:
    sim = tmp_path / "sim-fifo.csv"
    pd.DataFrame({"job_id": [0, 1, 2], "submit": [0.0, 1.0, 2.0], "finish": [4.0, 9.0, float("nan")],
                  "completion_time": [4.0, 8.0, float("nan")], "slowdown": [1.0, 2.0, float("nan")],
                  "n_tasks": [1, 1, 1], "mean_duration": [4.0, 4.0, 4.0], "rejected": [False, False, True]}
                 ).to_csv(sim, index=False)
    table = build(load_runs([two_runs[0], sim]), ALL_SHORT)
    column = table["sim-fifo (sim)"]
    assert (column["jobs"], column["succeeded"]) == (3, 2)
    assert column["short JCT p50 (s)"] == 6.0
    assert column["short slowdown p99"] == pytest.approx(1.99)  # the simulator's own runtime alone
    assert column["makespan (s)"] == 9.0
    assert pd.isna(column["utilization"])
    result = CliRunner().invoke(report, [str(two_runs[0]), str(sim)])
    assert result.exit_code == 0, result.output
    assert (two_runs[0] / "report" / "jct_cdf.png").is_file()


def test_not_a_results_directory(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="no jobs.csv"):
        load_runs([tmp_path])
    result = CliRunner().invoke(report, [str(tmp_path)])
    assert result.exit_code != 0 and "no jobs.csv" in result.output
    assert "Traceback" not in result.output


def test_missing_column_is_named(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_text("job_id,submit_s\n0,1\n")
    with pytest.raises(ResultsError, match="end_s, status"):
        load_runs([tmp_path])


def test_one_cell_rule_for_every_table() -> None:
    """Counts as integers, other numbers to 3 significant digits without an exponent, missing as -."""
    assert [cell(v) for v in (3.0, 14.8, 0.264, 1234.5, 0.000123456, float("nan"), None, "fifo", True)] == \
        ["3", "14.8", "0.264", "1230", "0.000123", "-", "-", "fifo", "True"]
    assert text([{"a": 1, "b": 2.5}], ["b", "a", "c"]).splitlines() == ["  b a c", "2.5 1 -"]


def stopped_run(path: Path, state: str, statuses: list[str]) -> Path:
    """A replay of len(statuses) jobs whose meta.json says ``state``; jobs with status succeeded
    took 10, 20, ... s, the others have no end."""
    make_run(path, "kairos", [10.0 * (i + 1) for i in range(len(statuses))])
    jobs = pd.read_csv(path / "jobs.csv")
    jobs["status"] = statuses
    jobs.loc[jobs["status"] != "succeeded", "end_s"] = float("nan")
    jobs.to_csv(path / "jobs.csv", index=False)
    meta = json.loads((path / "meta.json").read_text())
    (path / "meta.json").write_text(json.dumps({**meta, "state": state}))
    return path


def test_an_unfinished_replay_is_refused_naming_the_jobs(tmp_path: Path) -> None:
    run = stopped_run(tmp_path / "r", "running", ["succeeded", "succeeded", "running", "pending"])
    result = CliRunner().invoke(report, [str(run)])
    assert result.exit_code == 1
    assert "the replay did not finish (meta.json state 'running')" in result.output
    assert "job(s) never finished: 2, 3" in result.output and "2 of 4 job(s) finished" in result.output
    assert "--partial" in result.output and "Traceback" not in result.output
    assert not (run / "report").exists()


def test_partial_reports_the_finished_jobs_marked(tmp_path: Path) -> None:
    run = stopped_run(tmp_path / "r", "interrupted", ["succeeded", "killed", "succeeded", "failed"])
    result = CliRunner().invoke(report, [str(run), "--partial"])
    assert result.exit_code == 0, result.output
    assert "kairos shared (live) [partial]" in result.output
    assert "partial: " in result.output and "job(s) never finished: 1;" in result.output
    saved = pd.read_csv(run / "report" / "report.csv", index_col=0)
    assert saved.loc["short JCT p50 (s)", "kairos shared (live) [partial]"] == 20.0  # over jobs 0 and 2: 10, 30
    assert "never finished: 1" in (run / "report" / "report.txt").read_text()


def test_a_finished_replay_is_not_marked(two_runs: list[Path]) -> None:
    meta = json.loads((two_runs[0] / "meta.json").read_text())
    (two_runs[0] / "meta.json").write_text(json.dumps({**meta, "state": "complete"}))
    result = CliRunner().invoke(report, [str(p) for p in two_runs])
    assert result.exit_code == 0, result.output
    assert "[partial]" not in result.output and "partial:" not in result.output


def test_an_unknown_state_is_refused(tmp_path: Path) -> None:
    run = stopped_run(tmp_path / "r", "paused", ["succeeded"])
    with pytest.raises(ResultsError, match="state: expected one of complete, running, interrupted"):
        load_runs([run])
