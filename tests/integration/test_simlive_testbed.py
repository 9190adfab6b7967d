"""`schedbridge sim-vs-live` on the real local testbed: a small sleeping-task trace under stock
Spark and Sparrow, one repeat each; the table's figures are checked against the replay's own
jobs.csv and the simulator's own per-job file, recomputed here from those files."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bridge.metrics import percentile
from tests.integration.process_output import failure_excerpt

pytestmark = pytest.mark.integration

TRACE = """\
0 3 2 2 2 2
2 2 1 1 1
4 1 6 6
5 4 1.5 1 2 1 2
8 2 1 1 1
10 3 3 3 3 3
12 1 1 1
14 2 2 2 2
"""
WORKLOAD = """\
name = "simlive-small"
seed = 3
[trace]
path = "small.trace"
time_scale = 1.0
task_mode = "sleep"
"""
MEANS = [2, 1, 6, 1.5, 1, 3, 1, 2]  # each job's mean task duration (the trace's third column)
CUTOFF = 2.5  # jobs 2 and 5 are long


@pytest.fixture(scope="module")
def comparison(testbed, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    root = tmp_path_factory.mktemp("simlive")
    (root / "small.trace").write_text(TRACE)
    (root / "small.toml").write_text(WORKLOAD)
    out = root / "out"
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "sim-vs-live", str(root / "small.toml"),
               "--policy", "stock", "--policy", "sparrow", "--executors", "2", "--executor-cores", "2",
               "--cutoff", str(CUTOFF), "--hadoop-conf-dir", str(testbed.conf_dir), "--out", str(out), "--json"]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    return json.loads(done.stdout), out


def _expected(jct: pd.Series, long: pd.Series) -> dict[str, dict[str, float]]:
    return {cls: {"count": int(jct[mask].notna().sum()),
                  **{f"p{p}": percentile(jct[mask], p) for p in (50, 90, 99)}}
            for cls, mask in (("short", ~long), ("long", long))}


def test_table_matches_the_replay_and_the_simulation(comparison: tuple[dict, Path]) -> None:
    result, out = comparison
    assert (result["executors"], result["executor_cores"], result["slots"]) == (2, 2, 4)
    assert [(r["policy"], r["sim_policy"], r["repeat"]) for r in result["runs"]] == \
        [("stock", "fifo", 1), ("sparrow", "sparrow", 1)]
    table = pd.read_csv(out / "table.csv")
    for run in result["runs"]:
        jobs = pd.read_csv(Path(run["live_dir"]) / "jobs.csv")
        assert (jobs["status"] == "succeeded").all()
        long = jobs["job_id"].map(lambda j: MEANS[j] > CUTOFF)
        live = _expected(jobs["end_s"] - jobs["submit_s"], long)
        sim = pd.read_csv(run["sim_file"])
        assert (sim["class"] == long.map({True: "long", False: "short"})).all()
        simulated = _expected(sim["completion_time"], sim["class"] == "long")
        for cls in ("short", "long"):
            assert run["live"][cls] == pytest.approx(live[cls]) and run["sim"][cls] == pytest.approx(simulated[cls])
        mine = table[table["policy"] == run["policy"]].set_index(["class", "JCT"])
        for cls in ("short", "long"):
            for stat in ("p50", "p90", "p99"):
                row = mine.loc[(cls, stat)]
                assert row["live (s)"] == pytest.approx(run["live"][cls][stat])
                assert row["sim (s)"] == pytest.approx(run["sim"][cls][stat])
                assert row["live/sim"] == pytest.approx(run["live"][cls][stat] / run["sim"][cls][stat])


def test_calibration_comes_from_the_live_run(comparison: tuple[dict, Path]) -> None:
    """Every task of the trace (18) calibrates; the live path adds time to each (a sleeping task
    cannot end before its duration), and the delays the simulator used are the measured ones."""
    result, out = comparison
    for run in result["runs"]:
        cal = run["calibration"]
        assert cal["samples"]["tasks"] == 18 and cal["samples"]["job_starts"] == 8
        assert 0 < cal["task_overhead_s"] < 5 and cal["decision_s"] >= 0
        assert cal["applied"] == pytest.approx({"task_overhead_s": cal["task_overhead_s"],
                                                "network_delay_s": cal["decision_s"] / 2,
                                                "job_overhead_s": cal["job_start_s"] + cal["job_end_s"]})
    text = (out / "table.txt").read_text()
    assert "stock repeat 1: task overhead" in text and "sparrow repeat 1: task overhead" in text
    assert (out / "jct_cdf.png").stat().st_size > 0
