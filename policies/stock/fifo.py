"""YARN-like FIFO: one central queue of jobs in arrival order, tasks go to free slots.

The central scheduler keeps its own count of free slots (it learns about freed slots from
TaskFinished, one network delay after the fact, as YARN's RM learns from NodeManager
heartbeats) and hands the head task of the oldest job to the free slot that has waited longest.
A node runs what it is given; if a task ever arrives while no slot is free, it waits in a local
FIFO queue. DAG jobs release tasks as their parents finish; a job's ready tasks keep the job's
place in the queue.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from policies.framework.api import (
    Assign, ClusterSpec, ClusterView, Decisions, JobArrival, PolicyEnv, ProbeArrival, ProbeInfo, Run, SlotFreed,
    TaskFinished,
)
from policies.framework.registry import PolicyEntry
from workloads.model import Job, Readiness


@dataclass(frozen=True)
class FifoConfig:
    """FIFO has no parameters."""


class PendingJob:
    """A job's tasks not yet assigned, in the order they may run: by index, or a DAG's tasks as
    their parents finish (``fair`` queues these too)."""

    __slots__ = ("job_id", "est", "next", "n", "ready", "dag")

    def __init__(self, job: Job) -> None:
        self.job_id = job.job_id
        self.est = job.estimate
        self.next = 0          # tasks assigned so far (the next task index of a job without a DAG)
        self.n = job.n_tasks
        self.dag = Readiness(job) if job.has_dag else None
        self.ready: deque[int] = deque(sorted(self.dag.ready)) if self.dag is not None and self.dag.ready else deque()

    @property
    def has_ready(self) -> bool:
        return self.next < self.n if self.dag is None else bool(self.ready)

    def take(self) -> ProbeInfo:
        """The next ready task, bound."""
        task = self.next if self.dag is None else self.ready.popleft()
        self.next += 1
        return ProbeInfo(self.job_id, task, self.est)

    def finish(self, task: int) -> bool:
        """A DAG job's ``task`` finished: its children that became ready join the ready ones;
        whether the job had nothing ready before and has now (it left its queue and must rejoin)."""
        assert self.dag is not None, "only a DAG job waits for its tasks to finish"
        newly = self.dag.finish(task)
        rejoin = bool(newly) and not self.ready and self.next < self.n
        self.ready.extend(newly)
        return rejoin


def slot_tokens(spec: ClusterSpec) -> deque[int]:
    """One token per slot, naming its node, in the order a central scheduler hands them out:
    round-robin over the nodes, then the longest-free first as slots free."""
    return deque(n for _ in range(spec.slots_per_node) for n in range(spec.n_nodes))


class Fifo:
    name = "fifo"

    def __init__(self, config: FifoConfig, env: PolicyEnv) -> None:
        self.free = slot_tokens(env.cluster)  # free slot tokens, longest-free first
        self.jobs: deque[PendingJob] = deque()     # jobs with tasks not yet assigned, FIFO
        self.dags: dict[int, PendingJob] = {}      # DAG jobs still running
        self.local: dict[int, deque[ProbeInfo]] = {}

    # scheduler side ---------------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        p = PendingJob(ev.job)
        if p.dag is not None:
            self.dags[p.job_id] = p
        self.jobs.append(p)
        return self._dispatch()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        self.free.append(ev.node)
        p = self.dags.get(ev.job_id)
        if p is not None and p.finish(ev.task):
            self.jobs.append(p)
        return self._dispatch()

    def _dispatch(self) -> Decisions:
        out = []
        free, jobs = self.free, self.jobs
        while free and jobs:
            p = jobs[0]
            if not p.has_ready:
                jobs.popleft()
                continue
            out.append(Assign(free.popleft(), p.take()))
            if not p.has_ready:
                jobs.popleft()
            if p.dag is not None and p.next == p.n:
                del self.dags[p.job_id]
        return out

    # node side ------------------------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        slot = view.free_slot(ev.node)
        q = self.local.get(ev.node)
        if slot >= 0 and not q:
            return (Run(ev.node, slot, ev.probe),)
        self.local.setdefault(ev.node, deque()).append(ev.probe)
        return ()

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        q = self.local.get(ev.node)
        if q:
            return (Run(ev.node, ev.slot, q.popleft()),)
        return ()


ENTRY = PolicyEntry("fifo", FifoConfig, Fifo, "YARN-like FIFO: central queue, tasks to free slots")
