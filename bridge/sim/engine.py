"""The simulated cluster: a trace played on the one cluster state, with network delay.

:class:`Simulation` is the simulator's driver: it feeds a policy the jobs of a trace, in submit
order, through a :class:`~bridge.cluster.kernel.Kernel` and the shared
:class:`~bridge.cluster.state.ClusterState`, which hands events to the policy and applies its
decisions (see that module for the checks and the timing). The one thing the simulator adds is
time passing: a task that runs plays its duration as a ``SegmentEnd`` event (stale once the task
is suspended), and its end is reported back to the state. It knows no policy by name.

A job that waits for others (``Job.after``) is not in the submit-order feed: it arrives when the
last of them finishes, plus its ``after_gap`` (never before its ``submit``), with that arrival as
its submit time in the results.

What is measured goes into a :class:`~bridge.cluster.measure.SegmentLog` (run segments, job
finish times, counters); the metrics in ``bridge.common.metrics`` are computed from it afterwards.
"""
from __future__ import annotations

import gc
import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bridge.cluster.kernel import Kernel
from bridge.cluster.measure import SegmentLog
from bridge.cluster.runner import TimedRunner
from bridge.cluster.state import ClusterState
from policies.framework.api import ClusterSpec, JobArrival
from workloads.dag import topological_order
from workloads.model import Job
from workloads.validate import check_against_cluster

GC_YOUNG = 100_000
"""Allocations between two young-generation collections of CPython's cyclic garbage collector
while a simulation runs (CPython's default: 700). A run allocates millions of short-lived,
acyclic objects (events, decisions, heap entries), each batch of 700 triggering a collection,
and every tenth of those traversed the whole long-lived trace and state again: about a fifth of
the CPU time. Cycles are still collected, just in larger batches."""


@dataclass
class SimResult:
    jobs: list[Job]
    spec: ClusterSpec
    log: SegmentLog
    end_time: float
    events: int
    unfinished: list[int]           # ids of jobs that neither finished nor were rejected
    policy: str = ""

    def task_table(self) -> Any:
        """Run segments as a DataFrame (the columns ``bridge.common.metrics`` expects, plus ``idle``)."""
        import numpy as np
        import pandas as pd

        lg = self.log

        def col(a: array[Any], dtype: Any) -> Any:
            return np.frombuffer(a, dtype=a.typecode).astype(dtype) if len(a) else np.zeros(0, dtype)

        return pd.DataFrame({
            "job_id": col(lg.seg_job, np.int64), "task": col(lg.seg_task, np.int64),
            "node": col(lg.seg_node, np.int64), "slot": col(lg.seg_slot, np.int64),
            "start": col(lg.seg_start, np.float64), "end": col(lg.seg_end, np.float64),
            "done": col(lg.seg_done, np.int8).astype(bool), "idle": col(lg.seg_idle, np.float64),
        })

    def job_table(self) -> Any:
        """One row per job: submit, finish (NaN if unfinished), sizes, ideal runtime, rejected.
        ``ideal`` (runtime alone in the cluster) is max(longest task, work / slots)."""
        import pandas as pd

        slots = self.spec.n_nodes * self.spec.slots_per_node
        fin, rej = self.log.job_finish, self.log.rejected_jobs
        rows = []
        for j in self.jobs:
            mx = max(j.durations)
            work = j.work
            rows.append((j.job_id, j.submit, fin.get(j.job_id, math.nan), j.n_tasks, j.estimate,
                         work / j.n_tasks, mx, work, max(mx, work / slots), j.job_id in rej))
        return pd.DataFrame(rows, columns=["job_id", "submit", "finish", "n_tasks", "estimate",
                                           "mean_duration", "max_duration", "work", "ideal", "rejected"])


class Simulation:
    """Run ``policy`` over ``jobs`` on a cluster shaped by ``spec``.

    Keyword arguments (``report_long``, ``record``, ``switch_cost``, ``steal_delay``) are the
    cluster state's; see :class:`~bridge.cluster.state.ClusterState`. ``gc_young`` is
    :data:`GC_YOUNG` for this run."""

    def __init__(self, jobs: Sequence[Job], policy: Any, spec: ClusterSpec, *, gc_young: int = GC_YOUNG,
                 **state: Any) -> None:
        self.policy = policy
        self.gc_young = gc_young
        self.spec = spec
        self.jobs = sorted(jobs, key=lambda j: j.submit)  # stable: file order breaks ties
        seen: set[int] = set()
        for j in self.jobs:
            if j.job_id in seen:
                raise ValueError(f"duplicate job id {j.job_id}")
            seen.add(j.job_id)
        check_against_cluster(self.jobs, spec.resources, spec.capacity)
        self.kernel = Kernel()
        self.state = ClusterState(policy, spec, self.kernel, TimedRunner(), **state)
        self.log = self.state.log
        self._timed = [j for j in self.jobs if not j.after]
        self._waiters = _waiters(self.jobs)
        self._left = {j.job_id: len(set(j.after)) for j in self.jobs if j.after}
        self._arrived: dict[int, Job] = {}
        if self._left:
            self.state.job_done = self._on_job_done
        self._next_job = 0
        self.kernel.on(JobArrival, self._on_job_arrival)

    def run(self, progress: Callable[[int, float], None] | None = None) -> SimResult:
        if self._timed:
            j = self._timed[0]
            self.kernel.schedule(JobArrival(j.submit, j))
            self._next_job = 1
        old, frozen = gc.get_threshold(), gc.get_freeze_count()
        gc.freeze()             # the trace and the set-up live through the run: collections skip them
        gc.set_threshold(self.gc_young, old[1], old[2])
        try:
            self.kernel.run(tick=progress)
        finally:
            gc.set_threshold(*old)
            if not frozen:      # leave objects frozen by someone else before us as they were
                gc.unfreeze()
        unfinished = [j.job_id for j in self.jobs
                      if j.job_id not in self.log.job_finish and j.job_id not in self.log.rejected_jobs]
        jobs = [self._arrived.get(j.job_id, j) for j in self.jobs]
        return SimResult(jobs, self.spec, self.log, self.kernel.now, self.kernel.events, unfinished,
                         getattr(self.policy, "name", ""))

    def _on_job_arrival(self, ev: JobArrival) -> list[Any]:
        """Hand the job to the state, and schedule the next one (one pending arrival at a time)."""
        out: list[Any] = []
        if self._next_job < len(self._timed):
            nj = self._timed[self._next_job]
            self._next_job += 1
            out.append(JobArrival(nj.submit, nj))
        return self.state.job_arrived(ev, out)

    def _on_job_done(self, job_id: int, now: float, out: list[Any]) -> None:
        """A job finished: the jobs waiting for it whose last wait it was arrive."""
        for job in self._waiters.get(job_id, ()):
            self._left[job.job_id] -= 1
            if self._left[job.job_id] == 0:
                arrived = replace(job, submit=max(job.submit, now + job.after_gap))
                self._arrived[job.job_id] = arrived
                out.append(JobArrival(arrived.submit, arrived))


def _waiters(jobs: Sequence[Job]) -> dict[int, list[Job]]:
    """Per job id, the jobs that wait for it (``Job.after``); ValueError naming a job that waits for
    an unknown one, or a cycle of waits (those jobs could never arrive)."""
    if not any(j.after for j in jobs):
        return {}
    ids = {j.job_id for j in jobs}
    waits = {j.job_id: sorted(set(j.after)) for j in jobs}
    for j in jobs:
        if unknown := [a for a in j.after if a not in ids]:
            raise ValueError(f"job {j.job_id} waits for unknown job(s) {unknown[:5]}")
    try:
        topological_order(waits)
    except ValueError as exc:
        raise ValueError(f"jobs wait for each other in a cycle: {exc}") from None
    found: dict[int, list[Job]] = {}
    for j in jobs:
        for a in sorted(set(j.after)):
            found.setdefault(a, []).append(j)
    return found


def simulate(jobs: Sequence[Job], policy: Any, spec: ClusterSpec, **kw: Any) -> SimResult:
    """Convenience: build a :class:`Simulation` and run it."""
    return Simulation(jobs, policy, spec, **kw).run()
