"""The results directory of a replay: what happened to every job, task and the cluster.

Files (CSV, each replaced atomically, so a reader never sees half a file):

* `jobs.csv`: job_id, category, kind, params (JSON), arrival_s, submit_s, start_s, end_s,
  status (succeeded, failed, killed, running, pending), duration_alone_s, n_tasks, app_id, error.
  Times are seconds since the replay started; start_s is the first task's launch.
* `tasks.csv`: one row per task attempt (see `eventlog.TaskRecord`), times as above.
* `utilization.csv`: time_s and the RM's allocated/total vcores and memory, containers, apps.
* `answers.csv`: every job's answer checked against a reference (`bridge.replay.answers`).
* `meta.json`: workload, policy, mode, seed, start time, `state` (running, complete,
  interrupted), the policy parameters, the runtimes alone measured (`--measure-alone`), the
  plugin's counters, under `--preempt` how many preemption commands were issued, and at the
  end how many answers were correct, wrong, missing or none (`answers`).

`jobs.csv` is rewritten on every job event, so an interrupted replay leaves a readable record.
"""
from __future__ import annotations

import json
import math
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from bridge.common import atomic
from bridge.replay.eventlog import TaskRecord
from workloads.spec import Submission, params_to_json

JOB_COLUMNS = ("job_id", "category", "kind", "params", "arrival_s", "submit_s", "start_s",
               "end_s", "status", "duration_alone_s", "n_tasks", "app_id", "error")


def write_frame(path: Path, frame: pd.DataFrame) -> None:
    atomic.write_text(path, frame.to_csv(index=False))


@dataclass(frozen=True)
class JobRecord:
    submission: Submission
    submit_s: float = math.nan
    end_s: float = math.nan
    status: str = "pending"
    error: str = ""


class Ledger:
    """Thread-safe job records of one replay, mirrored to `jobs.csv` on every change."""

    def __init__(self, directory: Path, submissions: tuple[Submission, ...]) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._records = {s.job_id: JobRecord(s) for s in submissions}
        self._flush()

    def update(self, job_id: int, **changes: Any) -> None:
        with self._lock:
            self._records[job_id] = replace(self._records[job_id], **changes)
            self._flush()

    def _flush(self, tasks: list[TaskRecord] | None = None, t0: float = 0.0) -> None:
        write_frame(self.directory / "jobs.csv", jobs_frame(list(self._records.values()), tasks, t0))

    def succeeded(self) -> dict[int, bool]:
        """Job id -> whether it succeeded."""
        with self._lock:
            return {job_id: r.status == "succeeded" for job_id, r in self._records.items()}

    def finish(self, tasks: list[TaskRecord], t0: float) -> None:
        """Final `jobs.csv` with start times and task counts from the event logs."""
        with self._lock:
            self._flush(tasks, t0)


def jobs_frame(records: list[JobRecord], tasks: list[TaskRecord] | None, t0: float) -> pd.DataFrame:
    first_launch: dict[int, float] = {}
    n_tasks: dict[int, int] = {}
    app_ids: dict[int, str] = {}
    for task in tasks or ():
        first_launch[task.job_id] = min(first_launch.get(task.job_id, math.inf), task.launch_epoch_s - t0)
        n_tasks[task.job_id] = n_tasks.get(task.job_id, 0) + 1
        app_ids.setdefault(task.job_id, task.app_id)
    rows = [{
        "job_id": r.submission.job_id, "category": r.submission.category,
        "kind": r.submission.kind, "params": params_to_json(r.submission.params),
        "arrival_s": r.submission.time_s, "submit_s": r.submit_s,
        "start_s": first_launch.get(r.submission.job_id, math.nan), "end_s": r.end_s,
        "status": r.status, "duration_alone_s": r.submission.duration_alone_s,
        "n_tasks": n_tasks.get(r.submission.job_id, 0),
        "app_id": app_ids.get(r.submission.job_id, ""), "error": r.error,
    } for r in records]
    return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


def tasks_frame(tasks: list[TaskRecord], t0: float) -> pd.DataFrame:
    frame = pd.DataFrame([asdict(t) for t in tasks], columns=list(TaskRecord.__dataclass_fields__))
    frame.insert(frame.columns.get_loc("launch_epoch_s"), "launch_s", frame["launch_epoch_s"] - t0)
    frame.insert(frame.columns.get_loc("finish_epoch_s"), "finish_s", frame["finish_epoch_s"] - t0)
    return frame.drop(columns=["launch_epoch_s", "finish_epoch_s"])


USER_JOBS = "user-jobs.csv"   # each user job's runtime estimate as the live policy was told it


def write_meta(directory: Path, meta: dict[str, object]) -> None:
    atomic.write_text(directory / "meta.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")


PLUGIN_COUNTERS = ("policy_rounds", "late_rounds", "fallback_rounds", "failed_reports", "placed_tasks",
                   "fallback_tasks", "unmanaged_tasks")


def plugin_counters(directory: Path) -> dict[str, object] | None:
    """The Spark plugin's counters of every application of a run (``spark.schedbridge.stats.file``
    files in ``directory``), summed: who placed the tasks, and how often the policy was bypassed.
    None if no application wrote any (stock Spark)."""
    files = sorted(directory.glob("*.json")) if directory.is_dir() else []
    if not files:
        return None
    stats = [json.loads(f.read_text()) for f in files]
    total: dict[str, object] = {key: sum(int(s.get(key, 0)) for s in stats) for key in PLUGIN_COUNTERS}
    total["applications"] = len(stats)
    total["last_failure"] = next((s["last_failure"] for s in reversed(stats) if s.get("last_failure")), "")
    return total


def preemption_commands(directory: Path) -> int | None:
    """How many preemption commands a ``--preempt`` run issued, failed ones included (its
    ``preemption.json``, written when its application closes); None for a run without one."""
    path = directory / "preemption.json"
    return len(json.loads(path.read_text())) if path.is_file() else None
