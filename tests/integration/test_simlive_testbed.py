"""`schedbridge sim-vs-live` on the real local testbed: a small sleeping-task trace under stock
Spark and Sparrow, one repeat each; the table's figures are checked against the replay's own
jobs.csv and the simulator's own per-job file, recomputed here from those files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bridge.metrics import percentile
from tests.integration.process_output import failure_excerpt
from workloads.trace import read_trace

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


# A tiny WordCount workload (no trace durations): one long CPU-stretched job, then three short ones,
# FIFO against Kairos with --preempt on one slot per NodeManager (N = 1, Q = 1).
WORDCOUNT = """\
name = "simlive-wc"
seed = 442
jobs = 4
arrival = "fixed"
mean_interarrival_s = 2.0

[inputs.wc]
kind = "wordcount"
size_mb = 1
block_mb = 1

[categories.long]
kind = "wordcount"
input = "wc"
reduces = 1
extra_flops = 1500
probability = 0.3

[categories.short]
kind = "wordcount"
input = "wc"
reduces = 1
probability = 0.7
"""


def _work(tasks: pd.DataFrame, t0: float, preemption: Path) -> dict[int, float]:
    """Each job's full-share work recomputed from tasks.csv and preemption.json: per stage the
    longest task's launch-to-finish time less the time its container was shrunk, stages summed."""
    shrunk: dict[str, list[tuple[float, float]]] = {}
    since: dict[str, float] = {}
    for c in json.loads(preemption.read_text()) if preemption.exists() else []:
        if c["action"] == "suspend" and c["status"] == "ok":
            since.setdefault(c["container"], c["at_epoch"] - t0)
        elif c["action"] == "resume" and c["status"] != "error" and c["container"] in since:
            shrunk.setdefault(c["container"], []).append((since.pop(c["container"]), c["at_epoch"] - t0))
    ok = tasks[tasks["status"] == "succeeded"]
    work = [f - s - sum(max(0.0, min(f, b) - max(s, a)) for a, b in shrunk.get(cid, []))
            for s, f, cid in zip(ok["launch_s"], ok["finish_s"], ok["container_id"])]
    per_stage = ok.assign(work=work).groupby(["job_id", "stage_id"])["work"].max()
    return per_stage.groupby(level="job_id").sum().to_dict()


def test_a_wordcount_workload_is_simulated_from_each_runs_measured_work(testbed, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("node agents need root (cgroups); CI runs as root")
    (tmp_path / "wc.toml").write_text(WORDCOUNT)
    out = tmp_path / "out"
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "sim-vs-live", str(tmp_path / "wc.toml"),
               "--policy", "fifo", "--policy", "kairos", "--preempt", "--executors", "2", "--cutoff", "3",
               "--hadoop-conf-dir", str(testbed.conf_dir), "--out", str(out), "--json"]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    result = json.loads(done.stdout)
    assert result["sim_durations"].startswith("measured from each live run (critical-path)")
    assert "simulated durations: measured from each live run" in (out / "table.txt").read_text()
    for run in result["runs"]:
        live_dir = Path(run["live_dir"])
        jobs = pd.read_csv(live_dir / "jobs.csv")
        assert (jobs["status"] == "succeeded").all()
        t0 = json.loads((live_dir / "meta.json").read_text())["t0_epoch"]
        played = read_trace(Path(run["sim_file"]).with_name("sim.trace"))
        work = _work(pd.read_csv(live_dir / "tasks.csv"), t0, live_dir / "preemption.json")
        assert {j.job_id: j.durations[0] for j in played} == pytest.approx(work, abs=1e-6)
        assert (live_dir / "preemption.json").exists() == (run["policy"] == "kairos")
        # the classes come from the first run's (fifo's) measured work, the same for both runs
        first = read_trace(Path(result["runs"][0]["sim_file"]).with_name("sim.trace"))
        long = jobs["job_id"].map({j.job_id: j.durations[0] > 3 for j in first})
        live = _expected(jobs["end_s"] - jobs["submit_s"], long)
        sim = pd.read_csv(run["sim_file"])
        assert (sim["class"] == long.map({True: "long", False: "short"})).all()
        simulated = _expected(sim["completion_time"], sim["class"] == "long")
        for cls in ("short", "long"):
            assert run["live"][cls] == pytest.approx(live[cls]) and run["sim"][cls] == pytest.approx(simulated[cls])
        assert run["calibration"]["samples"]["tasks"] == 0  # the measured work holds the task overhead
