"""What the live path adds to a trace job, measured from a replay's own Spark event logs.

The simulator plays a task as exactly its trace duration and a decision as network hops. A live
replay adds, at each step, time the trace does not have. Measured per replay (medians: one slow
outlier must not move the model):

* **task overhead**: a task's wall time on its executor beyond its trace duration (finish - launch
  - duration): deserialisation, the Python worker, the result's trip back.
* **decision**: how long a free core waits for its next task when one is ready: launch - the later
  of the stage's submission and the moment the executor last had a free core. It covers the
  scheduler's round (the policy call in the plugin, Spark's offer and launch messages).
* **job start**: the replay's submission of a job to Spark's submission of its Spark job
  (the driver thread building the RDD, the DAG scheduler).
* **job end**: the job's last task finishing to the replay seeing the job end.
* **driver gaps**, per job: the time between its first Spark job's submission and its last one's
  end when none of its Spark jobs was active (a TPC-H query's driver planning, re-optimising
  adaptively and collecting broadcasts between the Spark jobs AQE submits one query stage at a time).
* **executor start**: an executor's registration after the application's start.

How they become the simulator's delays (our reading, `apply`): the task overhead is added to every
task's duration (the slot is held for it; the job's runtime estimate stays the trace's), the
decision is the simulator's two one-way network hops of a slot's turnaround (a finish reaching the
scheduler, its start reaching the node: `network_delay = decision / 2`), and job start + job end
are added to every job's completion time, and each job's own driver gaps to its completion time
(they delay its later stages, which hold no slot meanwhile; adding them at the end is exact while the
job's later stages wait for no slot). Executor start-up is measured and reported but not
applied: the shared application starts and warms up its executors before time 0.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import median

from bridge.history.events import (ApplicationStart, Event, ExecutorAdded, JobEnd, JobStart, StageSubmitted, TaskEnd,
                                   need)
from bridge.history.logs import EventLogError, feed
from bridge.replay.eventlog import replayed_job_id
from workloads.model import Job


class CalibrationError(ValueError):
    """A results directory whose event logs cannot calibrate the simulator (named in the message)."""


@dataclass(frozen=True)
class Calibration:
    """Medians in seconds, and how many samples each came from."""

    task_overhead_s: float
    decision_s: float
    job_start_s: float
    job_end_s: float
    executor_start_s: float
    samples: Mapping[str, int]
    driver_s: Mapping[int, float] = field(default_factory=dict)   # per replayed job: its driver gaps
    offslot_share: float = 0.0   # cores a task off its slot ran at (a preempting run's agents' minimum share)

    @property
    def network_delay_s(self) -> float:
        """The simulator's one-way delay: half a slot's turnaround (see the module docstring)."""
        return self.decision_s / 2

    def as_dict(self) -> dict[str, object]:
        """For JSON: the measured medians, the sample counts, and the delays the simulator used."""
        return {**asdict(self), "samples": dict(self.samples),
                "applied": {"task_overhead_s": max(self.task_overhead_s, 0.0),
                            "network_delay_s": self.network_delay_s,
                            "job_overhead_s": self.job_start_s + self.job_end_s,
                            "driver_gaps_s": sum(self.driver_s.values()),
                            "offslot_share": self.offslot_share}}

    def describe(self) -> str:
        """One line for the table: the delays the simulation ran with."""
        return (f"task overhead {self.task_overhead_s:.3f} s, network delay {self.network_delay_s:.3f} s "
                f"(decision {self.decision_s:.3f} s), job start {self.job_start_s:.3f} s + end "
                f"{self.job_end_s:.3f} s{self._driver()}{self._offslot()} "
                f"(executor start-up {self.executor_start_s:.2f} s, not applied)")

    def _offslot(self) -> str:
        return f", tasks off their slots at {self.offslot_share:g} of a core" if self.offslot_share else ""

    def _driver(self) -> str:
        gaps = [g for g in self.driver_s.values() if g > 0]
        return (f", driver gaps {median(gaps):.2f} s median in {len(gaps)} job(s) (max {max(gaps):.2f} s)"
                if gaps else "")


NONE = Calibration(0.0, 0.0, 0.0, 0.0, 0.0, {})  # the uncalibrated simulator


@dataclass
class _Log:
    """The parts of one application's event log that the measures need (epoch seconds)."""

    app_start: float = math.nan
    executor_added: dict[str, float] = field(default_factory=dict)
    executor_cores: dict[str, int] = field(default_factory=dict)
    stage_job: dict[int, int] = field(default_factory=dict)
    stage_submit: dict[int, float] = field(default_factory=dict)
    spark_jobs: dict[int, tuple[int, float, float]] = field(default_factory=dict)  # Spark job id: replayed
    # job, submission, end (NaN until its job end event)
    tasks: list[tuple[int, int, str, float, float, bool]] = field(default_factory=list)  # job, index, executor,
    # launch, finish, succeeded


def _read(path: Path) -> _Log:
    """One live run's event log; CalibrationError naming file and line for one it cannot read."""
    log = _Log()
    try:
        feed(path, lambda event: _add_event(log, event), CalibrationError)
    except EventLogError as exc:
        raise CalibrationError(str(exc)) from None
    return log


def _add_event(log: _Log, event: Event) -> None:
    if isinstance(event, ApplicationStart):
        log.app_start = need(event.timestamp_ms, "Timestamp") / 1000
    elif isinstance(event, ExecutorAdded):
        log.executor_added[event.executor_id] = need(event.timestamp_ms, "Timestamp") / 1000
        log.executor_cores[event.executor_id] = 1 if event.cores is None else event.cores
    elif isinstance(event, JobStart) and (job := replayed_job_id(event.properties)) is not None:
        log.spark_jobs[event.job_id] = (job, need(event.submission_ms, "Submission Time") / 1000, math.nan)
        for stage in event.stage_ids:
            log.stage_job.setdefault(stage, job)
    elif isinstance(event, JobEnd) and event.job_id in log.spark_jobs:
        job, submitted, _ = log.spark_jobs[event.job_id]
        log.spark_jobs[event.job_id] = (job, submitted, need(event.completion_ms, "Completion Time") / 1000)
    elif isinstance(event, StageSubmitted) and event.stage.submission_ms is not None:
        log.stage_submit.setdefault(event.stage.stage_id, event.stage.submission_ms / 1000)
    elif isinstance(event, TaskEnd) and event.stage_id in log.stage_job:
        log.tasks.append((log.stage_job[event.stage_id], need(event.index, "Index"),
                          need(event.executor_id, "Executor ID"), event.launch_ms / 1000, event.finish_ms / 1000,
                          event.succeeded))


def _decision_waits(log: _Log) -> list[float]:
    """Per task: launch - max(its stage's submission, when its executor last had a free core)."""
    job_ready = {job: log.stage_submit.get(stage, math.nan) for stage, job in log.stage_job.items()}
    # finishes before launches at the same millisecond: a core freed and reused in one instant
    points = sorted([(finish, 0, executor, -1) for _j, _i, executor, _l, finish, _ok in log.tasks]
                    + [(launch, 1, executor, job) for job, _i, executor, launch, _f, _ok in log.tasks])
    running: dict[str, int] = defaultdict(int)
    free_since = dict(log.executor_added)
    waits = []
    for time, is_launch, executor, job in points:
        cores = log.executor_cores.get(executor, 1)
        if is_launch:
            ready = max(job_ready.get(job, math.nan), free_since.get(executor, -math.inf))
            if not math.isnan(ready):
                waits.append(max(time - ready, 0.0))
            running[executor] += 1
        else:
            if running[executor] == cores:
                free_since[executor] = time
            running[executor] -= 1
    return waits


def _first_submissions(log: _Log) -> dict[int, float]:
    """Per replayed job: its first Spark job's submission."""
    first: dict[int, float] = {}
    for job, submitted, _ in log.spark_jobs.values():
        first[job] = min(first.get(job, math.inf), submitted)
    return first


def driver_gaps(log: _Log) -> dict[int, float]:
    """Per replayed job: seconds between its first Spark job's submission and its last one's end
    with none of its Spark jobs active (submitted, not ended). A Spark job never seen to end counts
    as active to the job's last end."""
    spans: dict[int, list[tuple[float, float]]] = {}
    for job, submitted, ended in log.spark_jobs.values():
        spans.setdefault(job, []).append((submitted, ended))
    gaps = {}
    for job, intervals in spans.items():
        last = max((e for _, e in intervals if not math.isnan(e)), default=math.nan)
        if math.isnan(last):
            continue
        covered, reach = 0.0, -math.inf
        for start, end in sorted((s, last if math.isnan(e) else e) for s, e in intervals):
            covered += max(0.0, end - max(start, reach))
            reach = max(reach, end)
        gaps[job] = max(0.0, last - min(s for s, _ in intervals) - covered)
    return gaps


def measure(results: Path, jobs: Mapping[int, Job] | None, t0: float,
            replay_times: Mapping[int, tuple[float, float]]) -> Calibration:
    """The calibration of one replay: `results/eventlogs`, the trace `jobs` by replay job id (their
    nominal durations), the replay's time 0 (epoch) and each job's (submit_s, end_s) from jobs.csv.
    Without trace `jobs` (jobs measured from the run itself, `bridge.apps.simlive.measured`) the task
    overhead is 0: a task's measured work runs from its launch to its finish, overhead included."""
    logs = [_read(p) for p in sorted((results / "eventlogs").glob("*"))
            if p.is_file() and not p.name.startswith(".")]
    overheads, waits, starts, ends, executors = [], [], [], [], []
    driver: dict[int, float] = {}
    for log in logs:
        driver.update((job, gap) for job, gap in driver_gaps(log).items() if job in replay_times)
        last_finish: dict[int, float] = {}
        for job, index, _executor, launch, finish, ok in log.tasks:
            if ok:
                last_finish[job] = max(last_finish.get(job, -math.inf), finish)
            if ok and jobs is not None and job in jobs:
                overheads.append(finish - launch - jobs[job].durations[index])
        waits += _decision_waits(log)
        for job, submitted in _first_submissions(log).items():
            if job in replay_times and not math.isnan(replay_times[job][0]):
                starts.append(submitted - (t0 + replay_times[job][0]))
        for job, finish in last_finish.items():
            if job in replay_times and not math.isnan(replay_times[job][1]):
                ends.append(t0 + replay_times[job][1] - finish)
        executors += [added - log.app_start for added in log.executor_added.values()]
    if jobs is not None and not overheads:
        raise CalibrationError(f"{results / 'eventlogs'}: no succeeded task of a replayed trace job to calibrate from")

    def med(values: list[float]) -> float:
        return float(median(values)) if values else 0.0

    return Calibration(med(overheads), med(waits), med(starts), med(ends), med(executors),
                       {"tasks": len(overheads), "decisions": len(waits), "job_starts": len(starts),
                        "job_ends": len(ends), "executors": len(executors)}, driver)


def apply(jobs: list[Job], calibration: Calibration) -> list[Job]:
    """The trace jobs as the calibrated simulator plays them: every task longer by the task
    overhead, each job's runtime estimate still the trace's mean (what the live policy is told)."""
    extra = max(calibration.task_overhead_s, 0.0)
    return [replace(j, durations=tuple(d + extra for d in j.durations)) for j in jobs]   # stages kept
