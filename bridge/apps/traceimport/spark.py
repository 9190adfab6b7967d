"""Spark event logs -> imported jobs: one per Spark job that succeeded, its tasks the successful
attempts (launch to finish), its stages those that ran tasks in it, with their parents.

Read through `bridge.replay.eventlog` (plain, zstd-compressed or rolled logs, line by line, and its
task records). A stage whose output an earlier job already computed is listed in a job's stage
infos but runs no task in it: it is left out with the edges to it (its own parents were computed
then too). A partition that succeeded twice (a speculative copy, a stage re-attempt) counts once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bridge.apps.traceimport.imported import ImportedJob, Skipped
from bridge.common.magnitudes import time_ms
from bridge.replay.eventlog import FIELD_ERRORS, event_problem, log_lines, task_record

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

    def add(self, event: dict, where: str) -> None:
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            self.app = str(event.get("App ID", ""))
        elif kind == "SparkListenerJobStart":
            self._job_start(event)
        elif kind == "SparkListenerJobEnd" and (job := self.jobs.get(int(event["Job ID"]))) is not None:
            job.status = _RESULTS.get((event.get("Job Result") or {}).get("Result", ""), "failed")
        elif kind == "SparkListenerTaskStart":
            self.running[int(event["Task Info"]["Task ID"])] = where
        elif kind == "SparkListenerTaskEnd":
            self._task_end(event, where)

    def _job_start(self, event: dict) -> None:
        job_id = int(event["Job ID"])
        infos = event.get("Stage Infos") or []
        parents = {int(s["Stage ID"]): tuple(int(p) for p in s.get("Parent IDs", [])) for s in infos}
        for stage in event.get("Stage IDs", parents):
            parents.setdefault(int(stage), ())
            self.stage_job.setdefault(int(stage), job_id)
        call_site = (event.get("Properties") or {}).get("callSite.short", "")
        name = f"{self.app or self.path.name} job {job_id}" + (f": {call_site}" if call_site else "")
        self.jobs[job_id] = _SparkJob(time_ms(event["Submission Time"], "Submission Time"), name, parents)

    def _task_end(self, event: dict, where: str) -> None:
        info = event["Task Info"]
        self.running.pop(int(info["Task ID"]), None)
        self.tasks_read += 1
        record = task_record(event, self.stage_job.get(int(event["Stage ID"]), -1), self.app)
        if record.status != "succeeded":
            self.skipped.add(f"task attempts that did not succeed ({record.status})",
                             f"task {record.task_id} of stage {record.stage_id}")
        elif record.finish_epoch_s <= 0 or record.finish_epoch_s < record.launch_epoch_s:
            self.skipped.add("tasks without a finish time", where)
        else:
            partition = int(info.get("Partition ID", info.get("Index", record.task_id)))
            done = self.durations.setdefault(record.stage_id, {})
            if partition in done:
                self.skipped.add("repeated successes of a partition (speculation, stage re-attempts)",
                                 f"stage {record.stage_id} partition {partition}")
            else:
                done[partition] = round(record.finish_epoch_s - record.launch_epoch_s, 3)

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


def read_event_log(path: Path, skipped: Skipped) -> tuple[list[ImportedJob], str]:
    """The jobs of one application's event log and a line saying what was read. Lines that are not
    events, and events missing what they must hold, are counted in ``skipped`` with their line
    numbers; a log in a codec it cannot read raises `EventLogError`, an unreadable file OSError."""
    log = _Log(path, skipped)
    lines = 0
    for line in log_lines(path):
        lines += 1
        where = f"{line.part.name} line {line.number}"
        if line.event is None:
            skipped.add("malformed lines", f"{where}: {line.problem}")
            continue
        try:
            log.add(line.event, where)
        except FIELD_ERRORS as exc:
            skipped.add("malformed lines", f"{where}: {event_problem(line, exc)}")
    jobs = log.imported()
    return jobs, (f"{path}: {lines} lines, application {log.app or '(no start event)'}, "
                  f"{len(log.jobs)} Spark jobs, {log.tasks_read} task ends")
