"""Checks of a workload against a cluster shape, with errors that name the job and task.

The model (:mod:`workloads.model`) checks each job on its own; whether a job can run at all
depends on the cluster: its demand vectors must have one entry per resource, and every
task must fit an empty server.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from workloads.model import Job, WorkloadError, distinct


def check_against_cluster(jobs: Iterable[Job], resources: Sequence[str],
                          capacity: Sequence[float] | None) -> None:
    """Raise WorkloadError for the first task whose demand cannot be served."""
    if capacity is None:
        return
    for job in jobs:
        if job.demands is None:
            continue
        for d in distinct(job.demands):  # each distinct vector once; the error names its first task
            i = job.demands.index(d)
            if len(d) != len(capacity):
                raise WorkloadError(
                    f"job {job.job_id} task {i}: demand {tuple(d)} has {len(d)} entries, but the "
                    f"cluster has {len(capacity)} resources {tuple(resources)}")
            over = [f"{r}={x:g} > {c:g}" for r, x, c in zip(resources, d, capacity) if x > c + 1e-9]
            if over:
                raise WorkloadError(
                    f"job {job.job_id} task {i}: demand is larger than every server ({', '.join(over)})")
