"""Spark's FAIR scheduler, each user job its own pool: the simulator's model of ``stock-fair``.

Our reading of Spark's ``FairSchedulableBuilder``, ``Pool``, ``FairSchedulingAlgorithm`` and
``TaskSchedulerImpl.resourceOffers``:

* A pool is a user job (``Job.unit_id``: live, the replay puts each replayed job's Spark jobs in
  a pool of its own), created as Spark creates a pool no allocation file declares: weight 1,
  minShare 0, FIFO inside.
* Spark orders the pools by: needy first (running tasks below minShare), then running / minShare
  among the needy and running / weight otherwise, then the pool's name. With minShare 0 no pool is
  needy and with weight 1 that is (running tasks, name); live, pool names are zero-padded job ids,
  so the name order is the unit id order.
* Inside a pool, FIFO: Spark's job id, then stage id, here the job id (in the ``stages`` model each
  Spark stage is a job, numbered in that order).
* Spark sorts once per resource offer and each task set in turn takes every free core it can: here
  the pools are sorted once per dispatch and each takes free slots while it has ready tasks. A
  task's end offers its one slot, so slots that free one by one go each to the pool running the
  fewest tasks then.
* A pool's running count grows when a task is assigned and drops when the scheduler hears the task
  finished, as Spark's drops on the task's status update.

Slots, the node side and DAG jobs are ``fifo``'s: central free-slot tokens, a FIFO at each node.
"""
from __future__ import annotations

from bisect import insort
from collections import deque
from dataclasses import dataclass

from policies.framework.api import Assign, ClusterView, Decisions, JobArrival, PolicyEnv, TaskFinished
from policies.common.nodefifo import FifoNodes
from policies.common.queues import NodeQueues
from policies.stock.fifo import PendingJob, slot_tokens
from policies.framework.registry import PolicyEntry


@dataclass(frozen=True)
class FairConfig:
    """No parameters: every pool is one that Spark creates undeclared (weight 1, minShare 0)."""


class _Pool:
    """One user job's pool: its running tasks and its jobs with tasks not yet assigned, by id."""

    __slots__ = ("unit", "running", "jobs")

    def __init__(self, unit: int) -> None:
        self.unit = unit
        self.running = 0
        self.jobs: list[PendingJob] = []

    def order(self) -> tuple[int, int]:
        """Spark's fair order of pools of weight 1 and minShare 0 (see the module docstring)."""
        return self.running, self.unit

    def fill(self, free: deque[int]) -> list[Assign]:
        """Free slots to this pool's ready tasks, its jobs in FIFO order, until either runs out."""
        out = []
        for p in self.jobs:
            while free and p.has_ready:
                out.append(Assign(free.popleft(), p.take()))
            if not free:
                break
        self.running += len(out)
        self.jobs = [p for p in self.jobs if p.next < p.n]
        return out


class Fair(FifoNodes):
    name = "fair"

    def __init__(self, config: FairConfig, env: PolicyEnv) -> None:
        self.queues = NodeQueues(env.cluster.n_nodes)
        self.free = slot_tokens(env.cluster)       # free slot tokens, longest-free first
        self.pools: dict[int, _Pool] = {}          # unit id -> pool, while it has tasks queued or running
        self.jobs: dict[int, tuple[_Pool, PendingJob]] = {}  # job id -> its pool and tasks, until all finished
        self.unfinished: dict[int, int] = {}       # job id -> its tasks not heard finished

    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        pool = self.pools.get(job.unit_id)
        if pool is None:
            pool = self.pools[job.unit_id] = _Pool(job.unit_id)
        p = PendingJob(job)
        insort(pool.jobs, p, key=lambda q: q.job_id)
        self.jobs[job.job_id] = (pool, p)
        self.unfinished[job.job_id] = job.n_tasks
        return self._dispatch()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        self.free.append(ev.node)
        pool, p = self.jobs[ev.job_id]
        pool.running -= 1
        if p.dag is not None:
            p.finish(ev.task)  # a job stays in its pool until all its tasks are assigned: no rejoining
        self.unfinished[ev.job_id] -= 1
        if not self.unfinished[ev.job_id]:
            del self.jobs[ev.job_id], self.unfinished[ev.job_id]
            if not pool.running and not pool.jobs:
                del self.pools[pool.unit]
        return self._dispatch()

    def _dispatch(self) -> Decisions:
        out: list[Assign] = []
        if self.free:
            for pool in sorted((q for q in self.pools.values() if q.jobs), key=_Pool.order):
                out += pool.fill(self.free)
                if not self.free:
                    break
        return out


ENTRY = PolicyEntry("fair", FairConfig, Fair, "Spark's FAIR scheduler: each user job a pool, fair between pools")
