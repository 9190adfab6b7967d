"""Batch probing and late binding (Sparrow): how many probes, where, and which task a probe gets."""
from __future__ import annotations

import math
import random
from collections.abc import Sequence

from policies.api import Cancel, ClusterView, Decisions, Launch, TaskRequest
from workloads.model import Job, Readiness


def probe_count(n_tasks: int, ratio: float, minimum: int = 0) -> int:
    """``max(minimum, ceil(ratio * n_tasks))`` probes for a job (Sparrow d=2; Eagle minimum 20)."""
    return max(minimum, math.ceil(ratio * n_tasks))


def sample(rng: random.Random, k: int, lo: int, hi: int) -> tuple[int, ...]:
    """``k`` node ids drawn uniformly, with replacement, from ``[lo, hi)``."""
    r = rng.random
    span = hi - lo
    return tuple([lo + int(r() * span) for _ in range(k)])


def sample_from(rng: random.Random, k: int, candidates: Sequence[int]) -> tuple[int, ...]:
    """``k`` node ids drawn uniformly, with replacement, from ``candidates``."""
    r = rng.random
    n = len(candidates)
    return tuple([candidates[int(r() * n)] for _ in range(k)])


class LateBinder:
    """The scheduler side of late binding: hands out each job's tasks in index order (or in
    DAG-ready order) to whichever probe asks first, and answers Cancel when none is left.

    DAG jobs: probe only for the tasks :meth:`add` / :meth:`finished` report as available, and
    ask for TaskFinished of the job's tasks (``ProbeInfo.notify``) to learn when more are."""

    __slots__ = ("next", "dag")

    def __init__(self) -> None:
        self.next: dict[int, int] = {}           # job -> next task index (jobs without a DAG)
        self.dag: dict[int, tuple[Readiness, list[int], set[int]]] = {}

    def add(self, job: Job) -> int:
        """Register a job; returns how many of its tasks can be handed out now (all of them
        without a DAG, the initially ready ones with one)."""
        if job.has_dag:
            rd = Readiness(job)
            ready = sorted(rd.ready or ())
            self.dag[job.job_id] = (rd, ready, set())
            return len(ready)
        self.next[job.job_id] = 0
        return job.n_tasks

    def left(self, job: Job) -> int:
        """Tasks of ``job`` not handed out yet."""
        if job.job_id in self.next:
            return job.n_tasks - self.next[job.job_id]
        d = self.dag.get(job.job_id)
        return 0 if d is None else job.n_tasks - len(d[2])

    def take(self, job: Job) -> int:
        """The next task of ``job`` to launch, or -1 if none is (currently) available."""
        jid = job.job_id
        nxt = self.next.get(jid)
        if nxt is not None:
            if nxt >= job.n_tasks:
                return -1
            self.next[jid] = nxt + 1
            return nxt
        d = self.dag.get(jid)
        if d is None or not d[1]:
            return -1
        t = d[1].pop(0)
        d[2].add(t)
        return t

    def finished(self, job: Job, task: int) -> int:
        """For DAG jobs: a task finished; returns how many tasks became available (to probe for)."""
        d = self.dag.get(job.job_id)
        if d is None:
            return 0
        newly = d[0].finish(task)
        d[1].extend(newly)
        d[1].sort()
        return len(newly)

    def answer(self, ev: TaskRequest, view: ClusterView) -> Decisions:
        """Launch the next task of the probe's job, or Cancel."""
        t = self.take(view.job(ev.probe.job_id))
        if t < 0:
            return (Cancel(ev.node, ev.slot, ev.probe),)
        return (Launch(ev.node, ev.slot, ev.probe.job_id, t),)
