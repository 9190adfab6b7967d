"""A Spark application's own event log as a report input (`schedbridge report EVENTLOG`).

An application run through the plugin needs no replay to be reported on: its event log holds each
job's submission and completion, each task's launch and end, the executors' cores, and, from the
plugin, one placement record per task (`bridge.history.events.Placement`) naming who placed it:
the policy, Spark in a fallback round, or Spark for a task the plugin did not manage. Times are
seconds since the application started; a job's key (what makes it "the same job" in another run,
for slowdown estimates) is its job group, else its Spark job id, so two runs of one program line
up job by job.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from bridge.apps.report.run import TASK_COLUMNS, ResultsError, Run
from bridge.history.events import ApplicationStart, Event, ExecutorAdded, JobEnd, JobStart, Placement, TaskEnd, need
from bridge.history.logs import EventLogError, feed

BY = {"POLICY": "placed_tasks", "FALLBACK": "fallback_tasks", "UNMANAGED": "unmanaged_tasks"}  # -> counter
_RESULTS = {"JobSucceeded": "succeeded", "JobFailed": "failed"}


@dataclass
class _Job:
    submit: float
    key: str
    finish: float = math.nan
    status: str = "unfinished"


@dataclass
class _Reading:
    """What the events said so far, in milliseconds since the epoch."""

    app: str = ""
    start_ms: float = math.nan
    cores: dict[str, int] = field(default_factory=dict)  # executor -> cores
    jobs: dict[int, _Job] = field(default_factory=dict)
    stage_job: dict[int, int] = field(default_factory=dict)
    tasks: list[dict] = field(default_factory=list)
    placed: Counter[tuple[str, str]] = field(default_factory=Counter)  # (policy, by) -> tasks

    def add(self, event: Event) -> None:
        if isinstance(event, ApplicationStart):
            self.app, self.start_ms = event.app_id, need(event.timestamp_ms, "Timestamp")
        elif isinstance(event, ExecutorAdded):
            self.cores[event.executor_id] = event.cores or 0
        elif isinstance(event, JobStart):
            submitted = need(event.submission_ms, "Submission Time")
            self.jobs[event.job_id] = _Job(submitted, str(event.properties.get("spark.jobGroup.id") or event.job_id))
            self.stage_job.update({stage: event.job_id for stage in event.stage_ids})
        elif isinstance(event, JobEnd) and (job := self.jobs.get(event.job_id)) is not None:
            job.finish = need(event.completion_ms, "Completion Time")
            job.status = _RESULTS.get(event.result, "failed")
        elif isinstance(event, TaskEnd):
            self.tasks.append(self._task(event))
        elif isinstance(event, Placement):
            self.placed[(event.policy, event.by)] += 1

    def _task(self, end: TaskEnd) -> dict:
        return {"job_id": self.stage_job.get(end.stage_id, -1), "task": end.task_id, "node": end.host,
                "slot": end.executor_id or "", "start": end.launch_ms, "end": end.finish_ms, "done": end.succeeded}


def load_event_log(path: Path) -> Run:
    """One application's jobs, tasks and placements as a `Run`; a log it cannot read is an error
    naming the file."""
    reading = _Reading()
    try:
        feed(path, reading.add, ResultsError, "not a Spark event log this report understands: ")
    except EventLogError as exc:
        raise ResultsError(str(exc)) from None
    if not reading.jobs:
        raise ResultsError(f"{path}: no {JobStart.NAME} in it (is this a Spark event log?)")
    unfinished = tuple(str(j) for j, job in reading.jobs.items() if job.status == "unfinished")
    tasks = _tasks(reading)
    return Run(_label(reading), path, _jobs(reading, tasks), tasks, n_slots=sum(reading.cores.values()) or None,
               plugin=placements(reading.placed), state="running" if unfinished else "complete",
               unfinished=unfinished, stopped="the event log ends before some jobs did (the application "
                                              "was killed, or still runs)")


def _seconds(reading: _Reading, ms: pd.Series) -> pd.Series:
    return (ms - reading.start_ms) / 1000.0


def _jobs(reading: _Reading, tasks: pd.DataFrame) -> pd.DataFrame:
    durations = (tasks["end"] - tasks["start"]).groupby(tasks["job_id"])
    ids = pd.Series(list(reading.jobs), dtype=int)
    return pd.DataFrame({
        "job_id": ids,
        "submit": _seconds(reading, pd.Series([j.submit for j in reading.jobs.values()])),
        "finish": _seconds(reading, pd.Series([j.finish for j in reading.jobs.values()])),
        "status": [j.status for j in reading.jobs.values()],
        "n_tasks": ids.map(durations.size()).fillna(0).astype(int),
        "mean_duration": ids.map(durations.mean()),
        "ideal": np.nan, "key": [j.key for j in reading.jobs.values()]})


def _tasks(reading: _Reading) -> pd.DataFrame:
    tasks = pd.DataFrame(reading.tasks, columns=list(TASK_COLUMNS))
    tasks["start"], tasks["end"] = _seconds(reading, tasks["start"]), _seconds(reading, tasks["end"])
    return tasks


def placements(placed: Counter[tuple[str, str]]) -> dict | None:
    """The plugin's placement counters from its records (None: no record, not run through the
    plugin); the policy is in the run's label."""
    if not placed:
        return None
    return {counter: sum(n for (_, by), n in placed.items() if by == name) for name, counter in BY.items()}


def _label(reading: _Reading) -> str:
    policies = sorted({policy for policy, _ in reading.placed})
    return f"{'+'.join(policies) or 'stock'} ({reading.app or 'event log'})"
