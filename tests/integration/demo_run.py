"""One `schedbridge demo` on the testbed, shared by every test that reads a sim-vs-live comparison
or a Kairos `--preempt` replay (the `demo_run` fixture in conftest.py): the demo's three comparisons
at a reduced size, six Spark applications in all.

- placement: a small trace of sleeping tasks (8 jobs, 18 tasks) under Spark's FAIR scheduler
  (stock-fair: each replayed job its own pool) and Eagle;
- preemption: kairos-hol.toml shrunk (two long CPU-bound WordCount jobs, then two short ones)
  under FIFO and Kairos with `--preempt` (the replay starts a node agent per NodeManager, which
  resizes containers through cgroups: root);
- mission: mission-mini.toml shrunk (a TPC-H query and two WordCount jobs) under stock Spark and
  Hawk (Falcon's live path is test_replay_preempt_testbed.py's), at the rate a first stock run
  measured to offer load 0.5 (`offered_load`), each Spark stage simulated as a job arriving when
  its parents end (`job_model = "stages"`; the preemption comparison keeps `critical-path`, so
  both paths run live); every job short (the cutoff far above them), so the
  classes need no measurement to agree. Hawk gets the runtime estimates built from stock's run
  (`estimates_from`).

The tests recompute what they check from the runs' own files (jobs.csv, tasks.csv, preemption.json,
sim.csv, the event logs), never through the code that wrote the demo's tables."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tests import needs
from tests.integration.process_output import failure_excerpt

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads" / "examples"

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
MEANS = [2, 1, 6, 1.5, 1, 3, 1, 2]  # each trace job's mean task duration (the trace's third column)
TRACE_TASKS = 18
PLACEMENT_CUTOFF = 2.5  # trace jobs 2 and 5 are long
# seconds of measured work: the shrunk long WordCount jobs above, the short ones below. Measured at
# extra_flops 2000: long 6-7 s on a quiet host, 16-17 s under a CI run; the short ones 1.5-2 s
# quiet, up to 4 s under a CI run, and over 3.5 s on a host running the compose cluster beside the
# testbed (every job long: nothing to compare). The long ones now burn 3000 (about 9.5 s quiet).
PREEMPTION_CUTOFF = 6.0
# stock-fair (Spark's FAIR scheduler) for the placement baseline, stock (its FIFO) for the mission's
PLACEMENT, PREEMPTION, MISSION = ("stock-fair", "eagle"), ("fifo", "kairos"), ("stock", "hawk")
MISSION_CUTOFF = 1000.0  # every job short
MISSION_LOAD = 0.5  # the mission comparison runs at the rate a stock run measured to offer this load
KAIROS_Q = 1  # Kairos' live default: one extra executor per NodeManager beside its N = 1

TRACE_WORKLOAD = """\
name = "demo-trace"
seed = 3
[trace]
path = "small.trace"
time_scale = 1.0
task_mode = "sleep"
"""

PLAN = f"""\
[[comparison]]
name = "placement"
title = "placement, small"
workload = "small.toml"
policies = {list(PLACEMENT)!r}
executors = 2
executor_cores = 2
cutoff = {PLACEMENT_CUTOFF}
reading = "short p90"
params = {{ cutoff = "{PLACEMENT_CUTOFF}" }}

[[comparison]]
name = "preemption"
title = "preemption, small"
workload = "hol.toml"
policies = {list(PREEMPTION)!r}
executors = 2
executor_cores = 1
preempt = true
job_model = "critical-path"
cutoff = {PREEMPTION_CUTOFF}
reading = "short p50"

[[comparison]]
name = "mission"
title = "mission, small"
workload = "mission.toml"
policies = {list(MISSION)!r}
executors = 2
executor_cores = 1
job_model = "stages"
cutoff = {MISSION_CUTOFF}
reading = "short p50"
estimates_from = "stock"
offered_load = {MISSION_LOAD}
"""


def mission_workload() -> str:
    """mission-mini.toml shrunk: three jobs, two seconds apart, on 2 MB of words."""
    text = (EXAMPLES / "mission-mini.toml").read_text()
    return (text.replace('name = "mission-mini"', 'name = "mission"').replace("jobs = 8", "jobs = 3")
            .replace("mean_interarrival_s = 4.0", "mean_interarrival_s = 2.0").replace("size_mb = 8", "size_mb = 2"))


def hol_workload() -> str:
    """kairos-hol.toml shrunk: its two long jobs (lighter) and two short ones."""
    text = (EXAMPLES / "kairos-hol.toml").read_text()
    return (text.replace('name = "kairos-hol"', 'name = "hol"').replace("jobs = 14", "jobs = 4")
            .replace("extra_flops = 9000", "extra_flops = 3000"))


@dataclass(frozen=True)
class DemoRun:
    stdout: str
    stderr: str
    out: Path

    def results(self, comparison: str) -> dict:
        """The comparison's results.json (what `sim-vs-live --json` prints)."""
        return json.loads((self.out / comparison / "results.json").read_text())

    def run(self, comparison: str, policy: str) -> dict:
        """The one run of ``policy`` in the comparison's results."""
        [run] = [r for r in self.results(comparison)["runs"] if r["policy"] == policy]
        return run

    def live_dir(self, comparison: str, policy: str) -> Path:
        return Path(self.run(comparison, policy)["live_dir"])


def run_demo(testbed, root: Path) -> DemoRun:
    needs.root("the demo's preemption comparison starts node agents, which write cgroups")
    (root / "small.trace").write_text(TRACE)
    (root / "small.toml").write_text(TRACE_WORKLOAD)
    (root / "hol.toml").write_text(hol_workload())
    (root / "mission.toml").write_text(mission_workload())
    (root / "plan.toml").write_text(PLAN)
    out = root / "out"
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "demo", "--plan", str(root / "plan.toml"),
               "--keep-testbed", "--out", str(out)]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True, timeout=840)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    return DemoRun(done.stdout, done.stderr, out)


def measured_work(live_dir: Path) -> dict[int, float]:
    """Each job's full-share work recomputed from the run's tasks.csv and preemption.json: per stage
    the longest task's launch-to-finish time less what its container's shrinking took (each shrunk
    second counts at the share the agent answered), stages summed."""
    t0 = json.loads((live_dir / "meta.json").read_text())["t0_epoch"]
    preemption = live_dir / "preemption.json"
    shrunk: dict[str, list[tuple[float, float, float]]] = {}
    since: dict[str, tuple[float, float]] = {}
    for c in json.loads(preemption.read_text()) if preemption.exists() else []:
        if c["action"] == "suspend" and c["status"] == "ok":
            since.setdefault(c["container"], (c["at_epoch"] - t0, c["share"]))
        elif c["action"] == "resume" and c["status"] != "error" and c["container"] in since:
            start, share = since.pop(c["container"])
            shrunk.setdefault(c["container"], []).append((start, c["at_epoch"] - t0, share))
    tasks = pd.read_csv(live_dir / "tasks.csv")
    ok = tasks[tasks["status"] == "succeeded"]
    work = [f - s - sum(max(0.0, min(f, b) - max(s, a)) * (1 - share) for a, b, share in shrunk.get(cid, []))
            for s, f, cid in zip(ok["launch_s"], ok["finish_s"], ok["container_id"])]
    per_stage = ok.assign(work=work).groupby(["job_id", "stage_id"])["work"].max()
    return {int(j): float(w) for j, w in per_stage.groupby(level="job_id").sum().items()}


def long_jobs(run: DemoRun, comparison: str) -> dict[int, bool]:
    """Which jobs are long: for the trace, its mean task duration against the cutoff; for the
    WordCount jobs, the first policy's (FIFO's) measured work, which classes them for every run."""
    if comparison == "placement":
        return {j: mean > PLACEMENT_CUTOFF for j, mean in enumerate(MEANS)}
    if comparison == "mission":
        return dict.fromkeys(measured_work(run.live_dir(comparison, MISSION[0])), False)
    return {j: work > PREEMPTION_CUTOFF for j, work in measured_work(run.live_dir(comparison, PREEMPTION[0])).items()}


def percentiles(values: pd.Series) -> dict[str, float]:
    """Count and p50/p90/p99 by numpy's linear interpolation (NaN when there is no value)."""
    v = values.dropna().to_numpy(dtype=float)
    return {"count": len(v), **{f"p{p}": float(np.percentile(v, p)) if len(v) else math.nan for p in (50, 90, 99)}}


def by_class(jct: pd.Series, long: pd.Series) -> dict[str, dict[str, float]]:
    return {"short": percentiles(jct[~long]), "long": percentiles(jct[long])}


def live_figures(run: DemoRun, comparison: str, policy: str) -> dict[str, dict[str, float]]:
    """Per class, the live JCT figures from the replay's own jobs.csv (end - submit)."""
    jobs = pd.read_csv(run.live_dir(comparison, policy) / "jobs.csv")
    assert (jobs["status"] == "succeeded").all(), jobs
    return by_class(jobs["end_s"] - jobs["submit_s"], jobs["job_id"].map(long_jobs(run, comparison)).astype(bool))


def sim_figures(run: DemoRun, comparison: str, policy: str) -> dict[str, dict[str, float]]:
    """Per class, the simulated JCT figures from the simulator's own per-job file."""
    sim = pd.read_csv(run.run(comparison, policy)["sim_file"])
    return by_class(sim["completion_time"], sim["class"] == "long")
