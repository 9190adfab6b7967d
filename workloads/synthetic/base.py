"""Values shared by every synthetic trace kind: a generated job, its statistics, arrivals, the writer.

A generated trace is a tuple of `TraceJob`s in submission order. It is written in the thesis'
text format (`submit_time n_tasks mean_task_duration d1 ... dn`, one job per line), which
`workloads.trace` parses back; nothing here knows about schedulers.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bridge.common import atomic
from bridge.common.metrics import offered_load
from workloads.model import Job
from workloads.trace import cutoff_comment

# Written durations are rounded to the millisecond and never reach zero, so that a parser that
# refuses non-positive durations accepts every generated trace.
_MIN_DURATION = 0.001


@dataclass(frozen=True)
class TraceJob:
    """One job of a generated trace: its submission time and each task's duration (seconds).

    ``estimate`` is the per-job task-runtime estimate written in the mean field; negative means
    the mean of the durations (the thesis' estimate). Shrunk traces keep the original mean."""

    submit_time: float
    durations: tuple[float, ...]
    estimate: float = -1.0

    @property
    def mean_duration(self) -> float:
        """The per-job runtime estimate of Hawk and Eagle (by default the mean task duration)."""
        return self.estimate if self.estimate >= 0 else sum(self.durations) / len(self.durations)

    @property
    def task_seconds(self) -> float:
        return sum(self.durations)


@dataclass(frozen=True)
class TraceStats:
    """What the thesis reports about a trace (Tables 2.1, 2.2, 3.1), measured on a generated one."""

    n_jobs: int
    n_tasks: int
    cutoff: float
    pct_long_jobs: float
    pct_long_task_seconds: float
    pct_long_tasks: float
    offered_load: float
    slots: int  # the single-slot nodes the offered load is on

    def describe(self) -> str:
        load = (f"{self.offered_load:.3f} at {self.slots} nodes x 1 slot" if math.isfinite(self.offered_load)
                else "n/a (one arrival time)")
        return (
            f"jobs={self.n_jobs} tasks={self.n_tasks} reporting cutoff={self.cutoff:g}s "
            f"long jobs={self.pct_long_jobs:.2f}% long task-seconds={self.pct_long_task_seconds:.2f}% "
            f"long tasks={self.pct_long_tasks:.2f}% offered load={load}"
        )


def trace_stats(jobs: Sequence[TraceJob], cutoff: float, slots: int) -> TraceStats:
    """Statistics with the thesis' classification: a job is long iff its mean task duration > cutoff.
    The offered load (`bridge.common.metrics.offered_load`) is on `slots` single-slot nodes."""
    if not jobs:
        raise ValueError("an empty trace has no statistics")
    long_jobs = [job for job in jobs if job.mean_duration > cutoff]
    total_seconds = sum(job.task_seconds for job in jobs)
    total_tasks = sum(len(job.durations) for job in jobs)
    return TraceStats(
        n_jobs=len(jobs),
        n_tasks=total_tasks,
        cutoff=cutoff,
        pct_long_jobs=100.0 * len(long_jobs) / len(jobs),
        pct_long_task_seconds=100.0 * sum(job.task_seconds for job in long_jobs) / total_seconds,
        pct_long_tasks=100.0 * sum(len(job.durations) for job in long_jobs) / total_tasks,
        offered_load=offered_load([job.submit_time for job in jobs], total_seconds, slots),
        slots=slots,
    )


def poisson_submit_times(rng: np.random.Generator, n_jobs: int, mean_interarrival: float) -> np.ndarray:
    """Submission times of a Poisson process starting at 0 (the first job arrives at time 0)."""
    gaps = rng.exponential(mean_interarrival, size=n_jobs)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def interarrival_for_load(task_seconds: float, n_jobs: int, load: float, slots: int) -> float:
    """Mean inter-arrival time that makes the offered load `load` on `slots` single-task slots."""
    return task_seconds / (n_jobs * load * slots)


def assemble(submit_times: np.ndarray, durations: Sequence[np.ndarray]) -> tuple[TraceJob, ...]:
    """Round durations to the millisecond and pair them with their submission times."""
    jobs = []
    for submit, job_durations in zip(submit_times.tolist(), durations):
        rounded = np.maximum(np.round(job_durations, 3), _MIN_DURATION)
        jobs.append(TraceJob(submit_time=round(submit, 6), durations=tuple(rounded.tolist())))
    return tuple(jobs)


def simulator_jobs(jobs: Iterable[TraceJob]) -> list[Job]:
    """The trace as the simulator's jobs, numbered from 0, each keeping its estimate (a shrunk
    trace's jobs keep their original mean task duration, so their class does not change)."""
    return [Job(i, job.submit_time, job.durations, job.mean_duration) for i, job in enumerate(jobs)]


def trace_lines(jobs: Iterable[TraceJob]) -> Iterable[str]:
    """The thesis text format, one job per line (no trailing newline)."""
    fmt: Callable[[float], str] = "{:.3f}".format
    for job in jobs:
        yield f"{job.submit_time:.6f} {len(job.durations)} {job.mean_duration:.6f} " + " ".join(
            map(fmt, job.durations)
        )


def write_trace(jobs: Iterable[TraceJob], path: Path, cutoff: tuple[float, str] | None = None) -> None:
    """Write the trace atomically: a failure leaves no partial file behind. `cutoff` (seconds,
    why) is stated in a header comment (`workloads.trace.cutoff_comment`)."""
    with atomic.replacing(path) as tmp, tmp.open("w", encoding="ascii") as out:
        if cutoff is not None:
            out.write(cutoff_comment(*cutoff) + "\n")
        for line in trace_lines(jobs):
            out.write(line)
            out.write("\n")
