"""Immutable workload specs: a Job is a bag of tasks, optionally with resource demands and a DAG.

Compact by design (the Google trace has ~500k jobs): per-task data are parallel tuples on the
job, and :meth:`Job.task` builds a :class:`Task` view on demand.

* ``durations[i]`` is the ground truth the simulator uses for task ``i`` (seconds).
* ``estimate`` is what a scheduler may *believe* a task of this job takes (the thesis trace's
  ``mean_task_duration`` field; misestimation experiments change only this).
  Policies that are not oracles must use ``estimate``, never ``durations``.
* ``demands[i]`` (optional) is task ``i``'s resource vector, in the cluster's resource order.
* ``parents[i]`` (optional) are the task indices task ``i`` depends on (task-level DAG, Falcon).
* ``stage_of[i]`` / ``stage_parents[s]`` (optional) group tasks into stages with barriers
  between them (Spark, Ursa): a task is ready when its own parents and every task of every
  parent stage of its stage have finished.
* ``successors`` (optional) is work that waits for the whole job and arrives later as jobs of
  its own: live, each runnable Spark stage is a job and the stages after it in its Spark job are
  its successors. Dependency-aware priorities (Falcon's Eq. 2) count them; nothing runs them.
* ``after`` (optional) are ids of jobs this one waits for: it arrives ``after_gap`` seconds after
  the last of them finished (and not before ``submit``). The simulator plays a measured Spark
  application this way: each stage a job, arriving when its parent stages end, as live.
* ``unit`` is the id of the user's job this job is part of (-1, the default: the job itself). Live,
  each Spark stage is a job handed to executors, but the user's job is a job group or query of many
  stages: what a paper keeps per job (Hawk's and Eagle's estimate and class, a fair scheduler's
  pool) is kept per unit (:attr:`Job.unit_id`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

Vector = tuple[float, ...]


class WorkloadError(ValueError):
    """A job spec is invalid (negative duration, bad DAG, ...)."""


@dataclass(frozen=True, slots=True)
class Task:
    """A view of one task of a job (built on demand by :meth:`Job.task`)."""

    job_id: int
    index: int
    duration: float
    demand: Vector | None = None
    parents: tuple[int, ...] = ()
    stage: int = 0


@dataclass(frozen=True, slots=True)
class Successor:
    """A stage that waits for a job: ``tasks`` tasks of ``estimate`` seconds each, after
    ``after`` (indices of earlier successors of the same job, or -1 for the job itself)."""

    tasks: int
    estimate: float
    after: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Job:
    job_id: int
    submit: float
    durations: tuple[float, ...]
    estimate: float = -1.0                      # < 0: use the mean of ``durations``
    demands: tuple[Vector, ...] | None = None
    parents: tuple[tuple[int, ...], ...] | None = None
    stage_of: tuple[int, ...] | None = None
    stage_parents: tuple[tuple[int, ...], ...] | None = None
    name: str = ""
    meta: Any = None
    successors: tuple[Successor, ...] = ()
    after: tuple[int, ...] = ()
    after_gap: float = 0.0
    unit: int = -1
    # derived in __post_init__: plain fields, not properties, because the compiled simulator reads
    # them per task, where a property is a Python call
    n_tasks: int = field(init=False, repr=False, compare=False)
    has_dag: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.durations)
        object.__setattr__(self, "n_tasks", n)
        object.__setattr__(self, "has_dag", self.parents is not None or self.stage_of is not None)
        if not (self.submit >= 0 and math.isfinite(self.submit)):
            raise WorkloadError(f"job {self.job_id}: submit time must be finite and >= 0, got {self.submit}")
        if n == 0:
            raise WorkloadError(f"job {self.job_id}: a job needs at least one task")
        lo = min(self.durations)
        if not (lo >= 0 and math.isfinite(sum(self.durations))):
            raise WorkloadError(f"job {self.job_id}: task durations must be finite and >= 0")
        if self.estimate < 0:
            object.__setattr__(self, "estimate", sum(self.durations) / n)
        elif not math.isfinite(self.estimate):
            raise WorkloadError(f"job {self.job_id}: estimate must be finite")
        if self.demands is not None:
            if len(self.demands) != n:
                raise WorkloadError(f"job {self.job_id}: {len(self.demands)} demand vectors for {n} tasks")
            vectors = distinct(self.demands)
            dims = {len(d) for d in vectors}
            if len(dims) > 1:
                raise WorkloadError(f"job {self.job_id}: demand vectors of different lengths {sorted(dims)}")
            if any(x < 0 or not math.isfinite(x) for d in vectors for x in d):
                raise WorkloadError(f"job {self.job_id}: demands must be finite and >= 0")
        if self.parents is not None:
            if len(self.parents) != n:
                raise WorkloadError(f"job {self.job_id}: {len(self.parents)} parent lists for {n} tasks")
            _check_acyclic(self.job_id, "task", self.parents)
        if (self.stage_of is None) != (self.stage_parents is None):
            raise WorkloadError(f"job {self.job_id}: stage_of and stage_parents go together")
        if self.stage_of is not None:
            if len(self.stage_of) != n:
                raise WorkloadError(f"job {self.job_id}: {len(self.stage_of)} stage labels for {n} tasks")
            n_stages = len(self.stage_parents or ())
            if any(not 0 <= s < n_stages for s in self.stage_of):
                raise WorkloadError(f"job {self.job_id}: stage label out of range 0..{n_stages - 1}")
            _check_acyclic(self.job_id, "stage", self.stage_parents or ())
        for k, succ in enumerate(self.successors):
            _check_successor(self.job_id, k, succ)
        if not (self.after_gap >= 0 and math.isfinite(self.after_gap)):
            raise WorkloadError(f"job {self.job_id}: after_gap must be finite and >= 0, got {self.after_gap}")
        if self.job_id in self.after:
            raise WorkloadError(f"job {self.job_id}: a job cannot wait for itself")

    # -- derived -------------------------------------------------------------------------
    @property
    def unit_id(self) -> int:
        """The user's job this job belongs to: ``unit``, or its own id."""
        return self.job_id if self.unit < 0 else self.unit

    @property
    def mean_duration(self) -> float:
        """Actual mean task duration (the thesis' per-job size)."""
        return sum(self.durations) / len(self.durations)

    @property
    def work(self) -> float:
        """Task-seconds: the sum of the task durations."""
        return sum(self.durations)

    def task(self, i: int) -> Task:
        return Task(
            self.job_id, i, self.durations[i],
            None if self.demands is None else self.demands[i],
            () if self.parents is None else self.parents[i],
            0 if self.stage_of is None else self.stage_of[i],
        )

    def tasks(self) -> tuple[Task, ...]:
        return tuple(self.task(i) for i in range(self.n_tasks))

    def task_parents(self) -> tuple[tuple[int, ...], ...]:
        """Each task's parent tasks as one task-level DAG: its own (``parents``) and every task of
        its stage's parent stages (``stage_of`` / ``stage_parents``), for a policy that walks tasks."""
        own = self.parents if self.parents is not None else ((),) * self.n_tasks
        if self.stage_of is None:
            return own
        members: list[list[int]] = [[] for _ in self.stage_parents or ()]
        for i, s in enumerate(self.stage_of):
            members[s].append(i)
        above = [tuple(t for p in ps for t in members[p]) for ps in self.stage_parents or ()]
        return tuple(own[i] + above[s] for i, s in enumerate(self.stage_of))

    def is_long(self, cutoff: float) -> bool:
        """Thesis classification: long iff the estimate is above the cutoff."""
        return self.estimate > cutoff

    def with_estimate(self, estimate: float) -> Job:
        """Same job, different scheduler-visible estimate (misestimation experiments)."""
        return Job(self.job_id, self.submit, self.durations, estimate, self.demands, self.parents,
                   self.stage_of, self.stage_parents, self.name, self.meta, self.successors)


def distinct(vectors: tuple[Vector, ...]) -> tuple[Vector, ...]:
    """Each distinct vector of ``vectors`` once, in order of first appearance. Tasks mostly share
    one vector object, which a count by identity finds without hashing a vector per task."""
    if vectors and vectors.count(vectors[0]) == len(vectors):
        return vectors[:1]
    return tuple(dict.fromkeys(vectors))


def _check_successor(job_id: int, k: int, succ: Successor) -> None:
    """Successors come in topological order: each waits only for the job or earlier ones."""
    if succ.tasks < 1 or not (succ.estimate >= 0 and math.isfinite(succ.estimate)):
        raise WorkloadError(f"job {job_id}: successor {k} needs >= 1 task and a finite estimate >= 0")
    if not succ.after or any(not -1 <= a < k for a in succ.after):
        raise WorkloadError(f"job {job_id}: successor {k} must wait for the job (-1) or earlier "
                            f"successors 0..{k - 1}, got {succ.after}")


def _check_acyclic(job_id: int, what: str, parents: tuple[tuple[int, ...], ...]) -> None:
    n = len(parents)
    pending = [0] * n
    children: list[list[int]] = [[] for _ in range(n)]
    for i, ps in enumerate(parents):
        for p in ps:
            if not (0 <= p < n) or p == i:
                raise WorkloadError(f"job {job_id}: {what} {i} has invalid parent {p}")
            children[p].append(i)
        pending[i] = len(ps)
    ready = [i for i in range(n) if pending[i] == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for c in children[i]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
    if seen < n:
        on_cycle, walked = next(i for i in range(n) if pending[i] > 0), set()
        while on_cycle not in walked:  # follow unfinished parents until one repeats
            walked.add(on_cycle)
            on_cycle = next(p for p in parents[on_cycle] if pending[p] > 0)
        raise WorkloadError(f"job {job_id}: {what} dependencies contain a cycle through {what} {on_cycle}")


class Readiness:
    """Incremental DAG readiness for one job: which tasks may start now.

    Without a DAG every task is ready at once. ``finish(i)`` returns the tasks that became
    ready because task ``i`` finished."""

    __slots__ = ("job", "_waiting", "_children", "_stage_left", "_stage_children", "_stage_tasks",
                 "_stage_wait", "ready")

    def __init__(self, job: Job) -> None:
        self.job = job
        n = job.n_tasks
        if not job.has_dag:
            self.ready = None  # everything ready
            return
        self._waiting = [0] * n
        self._children: list[list[int]] = [[] for _ in range(n)]
        if job.parents is not None:
            for i, ps in enumerate(job.parents):
                self._waiting[i] += len(ps)
                for p in ps:
                    self._children[p].append(i)
        self._stage_tasks: list[list[int]] = []
        self._stage_left: list[int] = []
        self._stage_children: list[list[int]] = []
        self._stage_wait: list[int] = []
        if job.stage_of is not None:
            sp = job.stage_parents or ()
            self._stage_tasks = [[] for _ in sp]
            for i, s in enumerate(job.stage_of):
                self._stage_tasks[s].append(i)
            self._stage_left = [len(t) for t in self._stage_tasks]
            self._stage_children = [[] for _ in sp]
            for s, ps in enumerate(sp):
                for p in ps:
                    self._stage_children[p].append(s)
            # a task waits for each unfinished parent stage of its stage
            for i, s in enumerate(job.stage_of):
                self._waiting[i] += len(sp[s])
        self.ready = {i for i in range(n) if self._waiting[i] == 0}

    def is_ready(self, i: int) -> bool:
        return self.ready is None or i in self.ready

    def finish(self, i: int) -> list[int]:
        if self.ready is None:
            return []
        self.ready.discard(i)
        newly: list[int] = []
        for c in self._children[i]:
            self._waiting[c] -= 1
            if self._waiting[c] == 0:
                newly.append(c)
        if self.job.stage_of is not None:
            s = self.job.stage_of[i]
            self._stage_left[s] -= 1
            if self._stage_left[s] == 0:
                for cs in self._stage_children[s]:
                    for t in self._stage_tasks[cs]:
                        self._waiting[t] -= 1
                        if self._waiting[t] == 0:
                            newly.append(t)
        newly.sort()
        self.ready.update(newly)
        return newly
