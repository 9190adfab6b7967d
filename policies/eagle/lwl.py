"""Centralized Least-Work-Left (thesis §1.5 and §2.4 baselines).

One central scheduler places every task on the node with the least estimated work left, using
the same LWL algorithm as Hawk's long-job scheduler, but for all jobs and (by default) over the
whole cluster, with no stealing. With ``cutoff`` and partitions set, jobs whose estimate is
above the cutoff go to the general partition and the others to the short-allowed nodes, which
is the "omniscient LWL with the same static partition" of Eagle's Fig. 3.7. Tasks travel as
probes and are bound when they reach a free slot (late binding), as in Hawk.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from policies.framework.api import (
    ClusterView, Decisions, JobArrival, PolicyEnv, Probe, ProbeInfo, TaskFinished, TaskRequest,
    TaskStarted,
)
from policies.common.lwl import LwlTable
from policies.common.nodefifo import FifoNodes
from policies.framework.bounds import LONG, PERCENT, check_bounds, within
from policies.common.partitions import Partition
from policies.common.probing import LateBinder
from policies.common.queues import NodeQueues
from policies.framework.registry import PolicyEntry
from workloads.model import Job


@dataclass(frozen=True)
class LwlConfig:
    # jobs with estimate > cutoff use the general partition (-1: every job)
    cutoff: float = field(default=-1.0, metadata=within(-1, LONG))
    # % of nodes, from id 0, for jobs at or below the cutoff; from the highest id, for jobs above it
    small_partition: float = field(default=100.0, metadata=PERCENT)
    big_partition: float = field(default=100.0, metadata=PERCENT)

    def __post_init__(self) -> None:
        check_bounds(self)
        if self.small_partition == 0 or self.big_partition == 0:
            raise ValueError("small_partition and big_partition must be > 0")


class CentralLwl(FifoNodes):
    name = "lwl"

    def __init__(self, config: LwlConfig, env: PolicyEnv) -> None:
        self.cfg = config
        n = env.cluster.n_nodes
        self.part = Partition.from_percent(n, config.small_partition, config.big_partition)
        self.queues = NodeQueues(n)
        self.binder = LateBinder()
        self.table = LwlTable(n, self.part.general)                        # group 0: above cutoff
        self.short_group = self.table.add_group(range(self.part.short_lo, self.part.short_hi))

    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        return self._place(job, self.binder.add(job), ev.time)

    def _place(self, job: Job, available: int, now: float) -> Decisions:
        if not available:
            return ()
        long = job.estimate > self.cfg.cutoff
        group = 0 if long else self.short_group
        place, est = self.table.place, job.estimate
        nodes = tuple(place(now, est, group) for _ in range(available))
        return (Probe(nodes, ProbeInfo(job.job_id, est=est, long=long)),)

    def on_task_request(self, ev: TaskRequest, view: ClusterView) -> Decisions:
        return self.binder.answer(ev)

    def on_task_started(self, ev: TaskStarted, view: ClusterView) -> Decisions:
        self.table.started(ev.node, (ev.job_id, ev.task), ev.time, view.job(ev.job_id).estimate)
        return ()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        self.table.finished(ev.node, (ev.job_id, ev.task), ev.time)
        job = view.job(ev.job_id)
        return self._place(job, self.binder.finished(job, ev.task), ev.time) if job.has_dag else ()


ENTRY = PolicyEntry("lwl", LwlConfig, CentralLwl, "centralized least-work-left placement of every task")
