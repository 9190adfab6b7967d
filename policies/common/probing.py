"""Batch probing and late binding (Sparrow): how many probes, where, and which task a probe gets."""
from __future__ import annotations

import math
import random
from collections.abc import Sequence

from policies.common.idtable import IdTable
from policies.framework.api import Cancel, Decisions, Launch, TaskRequest
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


class Cursor:
    """A job without a DAG in :class:`LateBinder`: the next task to hand out, of ``n``."""

    __slots__ = ("next", "n")

    def __init__(self, n: int) -> None:
        self.next = 0
        self.n = n


class LateBinder:
    """The scheduler side of late binding: hands out each job's tasks in index order (or in
    DAG-ready order) to whichever probe asks first, and answers Cancel when none is left.

    DAG jobs: probe only for the tasks :meth:`add` / :meth:`finished` report as available, and
    ask for TaskFinished of the job's tasks (``ProbeInfo.notify``) to learn when more are."""

    __slots__ = ("plain", "dag")

    def __init__(self) -> None:
        self.plain: IdTable[Cursor] = IdTable()   # jobs without a DAG, by id
        self.dag: dict[int, tuple[Readiness, list[int], set[int]]] = {}

    def add(self, job: Job) -> int:
        """Register a job; returns how many of its tasks can be handed out now (all of them
        without a DAG, the initially ready ones with one)."""
        if job.has_dag:
            rd = Readiness(job)
            ready = sorted(rd.ready or ())
            self.dag[job.job_id] = (rd, ready, set())
            return len(ready)
        self.plain.set(job.job_id, Cursor(job.n_tasks))
        return job.n_tasks

    def take(self, job_id: int) -> int:
        """The next task of job ``job_id`` to launch, or -1 if none is (currently) available."""
        c = self.plain.get(job_id)
        if c is not None:
            t = c.next
            if t >= c.n:
                return -1
            c.next = t + 1
            return t
        d = self.dag.get(job_id)
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

    def answer(self, ev: TaskRequest) -> Decisions:
        """Launch the next task of the probe's job, or Cancel."""
        jid = ev.probe.job_id
        t = self.take(jid)
        if t < 0:
            return (Cancel(ev.node, ev.slot, ev.probe),)
        return (Launch(ev.node, ev.slot, jid, t),)
