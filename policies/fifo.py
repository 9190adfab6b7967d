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

from policies.api import (
    Assign, ClusterView, Decisions, JobArrival, PolicyEnv, ProbeArrival, ProbeInfo, Run, SlotFreed,
    TaskFinished,
)
from policies.registry import PolicyEntry
from workloads.model import Readiness


@dataclass(frozen=True)
class FifoConfig:
    """FIFO has no parameters."""


class _Pending:
    __slots__ = ("job_id", "est", "next", "n", "ready", "dag")

    def __init__(self, job_id: int, est: float, n: int, dag: Readiness | None) -> None:
        self.job_id = job_id
        self.est = est
        self.next = 0          # next task index (jobs without a DAG)
        self.n = n
        self.dag = dag
        self.ready: deque[int] = deque(sorted(dag.ready)) if dag is not None and dag.ready else deque()


class Fifo:
    name = "fifo"

    def __init__(self, config: FifoConfig, env: PolicyEnv) -> None:
        spec = env.cluster
        # free slot tokens, one per slot, longest-free first
        self.free: deque[int] = deque(n for _ in range(spec.slots_per_node) for n in range(spec.n_nodes))
        self.jobs: deque[_Pending] = deque()       # jobs with tasks not yet assigned, FIFO
        self.dags: dict[int, _Pending] = {}        # DAG jobs still running
        self.local: dict[int, deque[ProbeInfo]] = {}

    # scheduler side ---------------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        dag = Readiness(job) if job.has_dag else None
        p = _Pending(job.job_id, job.estimate, job.n_tasks, dag)
        if dag is not None:
            self.dags[job.job_id] = p
        self.jobs.append(p)
        return self._dispatch()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        self.free.append(ev.node)
        p = self.dags.get(ev.job_id)
        if p is not None and p.dag is not None:
            newly = p.dag.finish(ev.task)
            if newly:
                if not p.ready and p.next < p.n:
                    self.jobs.append(p)  # it had left the queue while it had nothing ready
                p.ready.extend(newly)
        return self._dispatch()

    def _dispatch(self) -> Decisions:
        out = []
        free, jobs = self.free, self.jobs
        while free and jobs:
            p = jobs[0]
            if p.dag is None:
                task = p.next
                p.next += 1
                if p.next == p.n:
                    jobs.popleft()
            else:
                if not p.ready:
                    jobs.popleft()
                    continue
                task = p.ready.popleft()
                p.next += 1
                if not p.ready:
                    jobs.popleft()
                if p.next == p.n:
                    del self.dags[p.job_id]
            out.append(Assign(free.popleft(), ProbeInfo(p.job_id, task, p.est)))
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
