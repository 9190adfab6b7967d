"""Shrinking a trace for a smaller cluster while keeping its offered load (thesis §1.4 / §2.5).

The thesis' prototypes ran a sample of the Google trace on 100 nodes with "tasks per job scaled
down so that the ratio (cluster size / largest #tasks in a job) stays constant". We keep every
task duration and each job's estimate (its original mean task duration, so long/short classes are
unchanged), keep
``ceil(n x factor)`` tasks of each job, and stretch the arrival times so that the offered load on
``factor`` times fewer nodes equals the original load. Our reading.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from workloads.synthetic.base import TraceJob


def shrink(jobs: Sequence[TraceJob], factor: float) -> tuple[TraceJob, ...]:
    """The trace for a cluster ``factor`` times the size (0 < factor <= 1), same offered load."""
    if not 0 < factor <= 1:
        raise ValueError(f"scale factor must be within (0, 1], got {factor}")
    if factor == 1:
        return tuple(jobs)
    kept = [job.durations[: max(1, math.ceil(len(job.durations) * factor))] for job in jobs]
    before = sum(job.task_seconds for job in jobs)
    after = sum(sum(durations) for durations in kept)
    stretch = (after / before) / factor
    return tuple(TraceJob(job.submit_time * stretch, durations, job.mean_duration)
                 for job, durations in zip(jobs, kept))
