"""Simulator jobs for workloads without trace durations (WordCount, TPC-H), from a live run's tasks.

A trace job tells the simulator how long each task takes; a WordCount or TPC-H job does not, so
each live run is simulated from its own tasks' measured work (our reading):

* **a task's work** is its full-share time: launch to finish on its executor, less the time its
  container was shrunk meanwhile (``preemption.json``: a suspend acknowledged until the next
  resume). A shrunk container stretches wall time; this measure does not, so a preempting run and
  a non-preempting one measure the same work. Spark's Executor CPU Time was not usable: PySpark
  runs the job's Python code in a worker process whose CPU Spark does not count (measured on
  kairos-hol under FIFO: a long reduce ran 19.9 s with 0.07 s of Executor CPU Time).
* **a job is one simulator task** holding a slot for its stages in sequence (a stage needs the
  one before it), each stage as long as its longest task (``critical-path``: the stage's tasks in
  parallel) or as all its tasks' work together (``serial``: on one slot). With one task per stage
  (kairos-hol) both give the job's summed task times, as an earlier hand-made trace had them.

The job's runtime estimate is its measured work (what a policy that uses estimates is told).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from bridge.apps.simlive.compare import CompareError
from workloads.model import Job
from workloads.spec import Submission

JOB_MODELS = ("critical-path", "serial")
_STAGE = {"critical-path": "max", "serial": "sum"}


def shrunk_intervals(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Per container, the (start, end) epoch seconds it spent shrunk, from a replay's
    ``preemption.json`` (none if the file does not exist: a run without preemption)."""
    if not path.is_file():
        return {}
    since: dict[str, float] = {}
    intervals: dict[str, list[tuple[float, float]]] = {}
    for command in json.loads(path.read_text()):
        container, at = command["container"], float(command.get("at_epoch", math.nan))
        if math.isnan(at):
            raise CompareError(f"{path}: a command without at_epoch (a replay from before it was recorded)")
        if command["action"] == "suspend" and command["status"] == "ok":
            since.setdefault(container, at)
        elif command["action"] == "resume" and command["status"] != "error" and container in since:
            intervals.setdefault(container, []).append((since.pop(container), at))
    for container, start in since.items():  # never resumed while recorded: shrunk to the end
        intervals.setdefault(container, []).append((start, math.inf))
    return intervals


def overlap(start: float, end: float, intervals: Sequence[tuple[float, float]]) -> float:
    """Seconds of [start, end] covered by ``intervals`` (disjoint)."""
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in intervals)


def task_work(tasks: pd.DataFrame, t0: float, shrunk: Mapping[str, Sequence[tuple[float, float]]]) -> pd.Series:
    """Each task's full-share time (tasks.csv rows; times relative to ``t0``, the replay's start)."""
    return pd.Series([finish - launch - overlap(t0 + launch, t0 + finish, shrunk.get(str(container), ()))
                      for launch, finish, container in zip(tasks["launch_s"], tasks["finish_s"],
                                                           tasks["container_id"])], index=tasks.index, dtype=float)


def measured_jobs(live_dir: Path, submissions: Sequence[Submission], model: str) -> list[Job]:
    """The replay's jobs as the simulator plays them: one task each, of the job's measured work
    under ``model`` (see the module docstring)."""
    if model not in _STAGE:
        raise CompareError(f"job model {model!r}: one of {', '.join(JOB_MODELS)}")
    t0 = float(json.loads((live_dir / "meta.json").read_text())["t0_epoch"])
    tasks = pd.read_csv(live_dir / "tasks.csv")
    tasks = tasks[tasks["status"] == "succeeded"].copy()
    tasks["work"] = task_work(tasks, t0, shrunk_intervals(live_dir / "preemption.json"))
    per_stage = tasks.groupby(["job_id", "stage_id"])["work"].agg(_STAGE[model])
    work = per_stage.groupby(level="job_id").sum()
    if missing := [s.job_id for s in submissions if s.job_id not in work.index]:
        raise CompareError(f"{live_dir / 'tasks.csv'}: no succeeded task of job(s) {missing[:5]} to measure "
                           "its work from (a failed job cannot be simulated)")
    return [Job(s.job_id, s.time_s, (float(work[s.job_id]),), estimate=float(work[s.job_id])) for s in submissions]
