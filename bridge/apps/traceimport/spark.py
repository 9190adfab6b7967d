"""Spark event logs -> imported jobs: one per Spark job that succeeded, its tasks the successful
attempts (launch to finish), its stages those that ran tasks in it, with their parents.

Read through `bridge.history` (plain, zstd-compressed or rolled logs, line by line, into typed
events). A stage whose output an earlier job already computed is listed in a job's stage
infos but runs no task in it: it is left out with the edges to it (its own parents were computed
then too). A partition that succeeded twice (a speculative copy, a stage re-attempt) counts once.
Each executor is kept with its span and slots, for the cluster the trace records (`cluster`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from bridge.apps.traceimport.cluster import Executor
from bridge.apps.traceimport.imported import ImportedJob, Skipped
from bridge.history.events import (FIELD_ERRORS, ApplicationEnd, ApplicationStart, EnvironmentUpdate, Event,
                                   ExecutorAdded, ExecutorRemoved, JobEnd, JobStart, TaskEnd, TaskStart,
                                   event_problem, need, typed)
from bridge.history.logs import log_lines

_RESULTS = {"JobSucceeded": "succeeded", "JobFailed": "failed"}


@dataclass
class _SparkJob:
    submit_ms: float
    name: str
    parents: dict[int, tuple[int, ...]]  # stage -> its parent stages, from the job's stage infos
    status: str = "unfinished"


@dataclass
class _Log:
    """What one application's events said so far."""

    path: Path
    skipped: Skipped
    app: str = ""
    jobs: dict[int, _SparkJob] = field(default_factory=dict)
    stage_job: dict[int, int] = field(default_factory=dict)  # stage -> the first job that lists it
    durations: dict[int, dict[int, float]] = field(default_factory=dict)  # stage -> partition -> s
    running: dict[int, str] = field(default_factory=dict)  # task id -> where its start is
    tasks_read: int = 0
    task_cpus: int = 1
    added: dict[str, tuple[float, int]] = field(default_factory=dict)  # executor -> (added ms, cores)
    removed: dict[str, float] = field(default_factory=dict)  # executor -> removed ms
    end_ms: float = math.inf  # the application's end

    def add(self, event: Event, where: str) -> None:
        if isinstance(event, ApplicationStart):
            self.app = event.app_id
        elif isinstance(event, ApplicationEnd):
            self.end_ms = need(event.timestamp_ms, "Timestamp")
        elif isinstance(event, EnvironmentUpdate):
            self.task_cpus = event.task_cpus
        elif isinstance(event, ExecutorAdded):
            self.added[event.executor_id] = (need(event.timestamp_ms, "Timestamp"), need(event.cores, "Total Cores"))
        elif isinstance(event, ExecutorRemoved):
            self.removed[event.executor_id] = need(event.timestamp_ms, "Timestamp")
        elif isinstance(event, JobStart):
            self._job_start(event)
        elif isinstance(event, JobEnd) and (job := self.jobs.get(event.job_id)) is not None:
            job.status = _RESULTS.get(event.result, "failed")
        elif isinstance(event, TaskStart):
            self.running[event.task_id] = where
        elif isinstance(event, TaskEnd):
            self._task_end(event, where)

    def _job_start(self, event: JobStart) -> None:
        submitted = need(event.submission_ms, "Submission Time")
        parents = {info.stage_id: info.parents for info in event.stages}
        for stage in event.stage_ids or tuple(parents):
            parents.setdefault(stage, ())
            self.stage_job.setdefault(stage, event.job_id)
        call_site = event.properties.get("callSite.short", "")
        name = f"{self.app or self.path.name} job {event.job_id}" + (f": {call_site}" if call_site else "")
        self.jobs[event.job_id] = _SparkJob(submitted, name, parents)

    def _task_end(self, end: TaskEnd, where: str) -> None:
        self.running.pop(end.task_id, None)
        self.tasks_read += 1
        if not end.succeeded:
            self.skipped.add(f"task attempts that did not succeed ({end.status})",
                             f"task {end.task_id} of stage {end.stage_id}")
        elif end.finish_ms <= 0 or end.finish_ms < end.launch_ms:
            self.skipped.add("tasks without a finish time", where)
        else:
            partition = end.partition if end.partition is not None else end.index if end.index is not None \
                else end.task_id
            done = self.durations.setdefault(end.stage_id, {})
            if partition in done:
                self.skipped.add("repeated successes of a partition (speculation, stage re-attempts)",
                                 f"stage {end.stage_id} partition {partition}")
            else:
                done[partition] = round(end.finish_ms / 1000.0 - end.launch_ms / 1000.0, 3)

    def executors(self) -> list[Executor]:
        """The application's executors, each running its cores' worth of tasks (`spark.task.cpus` each)."""
        return [Executor(f"{self.app or self.path.name} executor {name}", added,
                         min(self.removed.get(name, math.inf), self.end_ms), cores // self.task_cpus)
                for name, (added, cores) in self.added.items()]

    def imported(self) -> list[ImportedJob]:
        """The succeeded jobs that ran tasks; every other job counted in ``skipped``."""
        for where in self.running.values():
            self.skipped.add("tasks started but never finished (the log ends first)", where)
        out = []
        for job_id, job in self.jobs.items():
            label = f"{self.app} job {job_id}" if self.app else f"job {job_id}"
            stages = sorted(s for s in job.parents if self.stage_job.get(s) == job_id and self.durations.get(s))
            if job.status != "succeeded":
                self.skipped.add(f"{job.status} Spark jobs", label)
            elif not stages:
                self.skipped.add("Spark jobs that ran no task (every stage computed by an earlier job)", label)
            else:
                out.append(_with_stages(job, stages, self.durations))
        return out


def _with_stages(job: _SparkJob, stages: list[int], durations: dict[int, dict[int, float]]) -> ImportedJob:
    index = {stage: i for i, stage in enumerate(stages)}
    tasks = [(index[s], d) for s in stages for _, d in sorted(durations[s].items())]
    return ImportedJob(job.submit_ms, tuple(d for _, d in tasks), job.name,
                       stage_of=tuple(i for i, _ in tasks),
                       stage_parents=tuple(tuple(index[p] for p in job.parents[s] if p in index) for s in stages))


@dataclass(frozen=True)
class Application:
    """What one application's event log gave: its id, jobs, executors and a line saying what was read."""

    app_id: str
    jobs: list[ImportedJob]
    executors: list[Executor]
    what: str


def read_event_log(path: Path, skipped: Skipped) -> Application:
    """The jobs and executors of one application's event log. Lines that are not events, and events
    missing what they must hold, are counted in ``skipped`` with their line numbers; a log in a
    codec it cannot read raises `EventLogError`, an unreadable file OSError."""
    log = _Log(path, skipped)
    lines = 0
    for line in log_lines(path):
        lines += 1
        where = f"{line.part.name} line {line.number}"
        if line.event is None:
            skipped.add("malformed lines", f"{where}: {line.problem}")
            continue
        try:
            log.add(typed(line.event), where)
        except FIELD_ERRORS as exc:
            skipped.add("malformed lines", f"{where}: {event_problem(line.event, exc)}")
    return Application(log.app, log.imported(), log.executors(),
                       f"{path}: {lines} lines, application {log.app or '(no start event)'}, "
                       f"{len(log.jobs)} Spark jobs, {log.tasks_read} task ends, {len(log.added)} executors")
