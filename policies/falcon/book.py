"""What a Falcon-family scheduler knows about each job: its DAG, task estimates, finished
tasks and where tasks were sent, and the time-dependent priority of Eqs. (2)/(3).

Estimates are the true durations times optional lognormal noise: Falcon "accurately
estimates the run time" (via Hawk), so the noiseless default is an oracle (our reading).
A task's waiting time counts from job submission and excludes service received, so it is
frozen while the task runs and grows while it waits or is suspended (our reading).
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable

from policies.framework.api import ClusterView
from policies.falcon.priority import MIN_REMAINING, dag_priorities, leaf_priority, successor_weight
from workloads.dag import ancestors, children_of, topological_order
from workloads.model import Job

TaskKey = tuple[int, int]


class TaskBook:
    """Per-job DAG facts plus the Eq. (2)/(3) priority, memoised per job and instant."""

    def __init__(self, rng: random.Random, noise: float, w1: float, w2: float, dag: bool) -> None:
        self.rng = rng
        self.noise = noise
        self.w1, self.w2 = w1, w2
        self.dag = dag
        self.jobs: dict[int, Job] = {}
        self.est: dict[TaskKey, float] = {}
        self.children: dict[int, dict[int, tuple[int, ...]]] = {}
        self.live: dict[int, dict[int, tuple[int, ...]]] = {}  # children not finished yet
        self.parents: dict[int, dict[int, tuple[int, ...]]] = {}
        self.ancestry: dict[int, dict[int, frozenset[int]]] = {}
        self.order: dict[int, list[int]] = {}
        self.pending_parents: dict[TaskKey, int] = {}
        self.finished: set[TaskKey] = set()
        self.node_of: dict[TaskKey, int] = {}
        self.started: set[TaskKey] = set()   # run at least once (the workers' Run decisions)
        self._fresh: dict[TaskKey, float] = {}  # Eq. (3)'s first term before any service: w1 / estimate
        self._left: dict[int, int] = {}   # per job, its tasks not finished yet
        self._instant: tuple[float, dict[TaskKey, float]] = (-math.inf, {})  # started tasks' Eq. (3) at an instant
        self._leaves: set[int] = set()  # jobs whose tasks are all leaves: no edges, no later stages waiting
        self._memo: dict[int, tuple[float, dict[int, float]]] = {}

    def add(self, job: Job) -> list[TaskKey]:
        """Register a job; returns its tasks without parents."""
        jid = job.job_id
        self.jobs[jid] = job
        parents = dict(enumerate(job.task_parents()))   # a stage DAG as task edges
        self.children[jid] = children_of(parents)
        self.live[jid] = dict(self.children[jid])
        self.parents[jid] = parents
        self.ancestry[jid] = ancestors(parents)
        self.order[jid] = topological_order(parents)
        self._left[jid] = job.n_tasks
        if not any(parents.values()) and not job.successors:
            self._leaves.add(jid)
        for i, d in enumerate(job.durations):
            factor = math.exp(self.rng.gauss(0.0, self.noise)) if self.noise > 0 else 1.0
            self.est[(jid, i)] = d * factor
            self._fresh[(jid, i)] = self.w1 / max(d * factor, MIN_REMAINING)
            self.pending_parents[(jid, i)] = len(parents[i])
        return [(jid, i) for i in range(job.n_tasks) if not parents[i]]

    def finish(self, key: TaskKey) -> list[TaskKey]:
        """Record a finished task; returns the tasks it made ready."""
        if key not in self.finished:
            self._left[key[0]] -= 1
        self.finished.add(key)
        self.node_of.pop(key, None)
        self.started.discard(key)
        live = self.live[key[0]]
        for p in self.parents[key[0]][key[1]]:
            live[p] = tuple(c for c in live[p] if c != key[1])
        ready = []
        for c in self.children[key[0]][key[1]]:
            ck = (key[0], c)
            self.pending_parents[ck] -= 1
            if self.pending_parents[ck] == 0:
                ready.append(ck)
        if not self._left[key[0]]:
            self._forget(key[0])
        return ready

    def _forget(self, jid: int) -> None:
        job = self.jobs.pop(jid)
        for i in range(job.n_tasks):
            self.finished.discard((jid, i))
            self.est.pop((jid, i), None)
            self._fresh.pop((jid, i), None)
            self.pending_parents.pop((jid, i), None)
        self.children.pop(jid)
        self.live.pop(jid)
        self.parents.pop(jid)
        self.ancestry.pop(jid)
        self.order.pop(jid)
        self._left.pop(jid)
        self._leaves.discard(jid)
        self._memo.pop(jid, None)

    def independent(self, a: TaskKey, b: TaskKey) -> bool:
        """Tasks of different jobs always are; within a job, neither is the other's ancestor."""
        if a[0] != b[0]:
            return True
        anc = self.ancestry[a[0]]
        return a[1] not in anc[b[1]] and b[1] not in anc[a[1]]

    def attained(self, key: TaskKey, view: ClusterView) -> float:
        node = self.node_of.get(key)
        if node is None:
            return 0.0
        try:
            return view.attained(node, *key)
        except KeyError:  # queued at the node, not started yet
            return 0.0

    def leaf(self, key: TaskKey, view: ClusterView) -> float:
        """Eq. (3) for one task at ``view.now``. A task that never ran takes a shortcut with the
        same floats (nothing attained: est - 0 is est) and no lookup in the cluster's slots."""
        if key not in self.started:
            return self._fresh[key] + self._waited(self.jobs[key[0]], view)
        if self._instant[0] != view.now:
            self._instant = (view.now, {})
        known = self._instant[1]
        if (value := known.get(key)) is None:  # a started task's service holds within an instant
            att = self.attained(key, view)
            waited = view.now - self.jobs[key[0]].submit - att
            value = known[key] = leaf_priority(self.est[key] - att, max(waited, 0.0), self.w1, self.w2)
        return value

    def _waited(self, job: Job, view: ClusterView) -> float:
        """Eq. (3)'s second term for a task that never ran: it has waited since its job came."""
        return self.w2 * max(view.now - job.submit, 0.0)

    def priority_class(self, key: TaskKey) -> tuple[int, float] | None:
        """Tasks that never ran, of one job whose tasks are all leaves (or of any job when ``dag``
        is off), with the same estimate: Eq. (3) gives them the very same priority at every instant
        (the same first term, their job's waiting time), so a worker reads it once for all."""
        if key in self.started or (self.dag and key[0] not in self._leaves):
            return None
        return (key[0], self._fresh[key])

    def priority(self, key: TaskKey, node: int, view: ClusterView) -> float:
        """Eq. (2) over unfinished children (or Eq. (3) alone when ``dag`` is off, or for a job whose
        tasks are all leaves: read when asked, the value the instant's memo would hold, as a task's
        attained service holds within an instant and is nothing at the instant it starts)."""
        jid = key[0]
        if not self.dag or jid in self._leaves:
            return self.leaf(key, view)
        memo = self._memo.get(jid)
        if memo is None or memo[0] != view.now:
            memo = (view.now, self._job_priorities(jid, view))
            self._memo[jid] = memo
        return memo[1][key[1]]

    def _job_priorities(self, jid: int, view: ClusterView) -> dict[int, float]:
        job = self.jobs[jid]
        leaf: Callable[[int], float] = lambda i: self.leaf((jid, i), view)  # noqa: E731
        if job.successors:  # the job's sinks are parents of every later stage waiting for it
            waited = max(view.now - job.submit, 0.0)
            weight = successor_weight(job.successors,
                                      lambda s: leaf_priority(s.estimate, waited, self.w1, self.w2))
            leaf = lambda i: weight  # noqa: E731
        return dag_priorities(self.live[jid], leaf, self.order[jid])
