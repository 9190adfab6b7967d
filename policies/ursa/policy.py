"""Ursa's scheduling policy on the engine (EuroSys '20 §4.2, the parts that are policy).

Workloads are monotask DAGs: each task uses one time-like resource (a CPU core or a network
slot) plus memory, and is released the moment it finishes, which is what lets jobs share
a worker at fine grain. The scheduler runs a placement pass after every arrival/completion
instant (a zero scheduling interval; our reading) on the ready, unplaced tasks, grouped by
stage; workers start their queued tasks in monotask order (job order, then CPU tasks by
descending and network tasks by ascending input) whenever they fit.

Per-resource load (APT) is the assigned, unfinished work on a worker divided by its rate
(work is duration × demand, known exactly: Ursa estimates it from input sizes; our reading
uses the true durations). A worker with an idle core has APT_cpu = 0 (§4.2.2); we extend the
rule to an idle network slot. While ready tasks remain unplaced, passes repeat every
``interval`` seconds (the paper's batching interval), on a grid that starts at the last
event-driven pass (:class:`~policies.ursa.retry.RetryGrid`).

A pass reads only state that changes in one of this policy's hooks (arrivals, completions,
tasks reaching or leaving a worker) and the clock, and the clock only orders stages that can
place something (the EJF bonus), never whether one can. So a pass that places nothing is
followed by passes that place nothing until a hook runs: by default (``retry="on-change"``)
the policy then stops ticking and, at the next hook, resumes on the same grid at its first
tick at or after that instant. The decisions are those of ticking every interval
(``retry="every-interval"``, kept to check exactly that), but a cluster whose backlog cannot
move costs no passes.

The placement step is a :data:`Planner`: Algorithm 1 (stage-aware or per task), or the
paper's replaced-algorithm baselines Capacity (most available worker) and Tetris
(alignment of demand and free resources), which only bind a task where it fits now.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Literal

from policies.framework.bounds import DAY, MS, check_bounds, within
from policies.framework.api import (NONE, Assign, ClusterView, Decision, Decisions, JobArrival, PolicyEnv,
                          ProbeArrival, ProbeInfo, Run, SetTimer, SlotFreed, TaskFinished, Timer)
from policies.common.vectors import ceiling, fits, normalized, sub
from policies.framework.registry import PolicyEntry
from policies.ursa.ordering import ejf_bonus, monotask_order, srjf_priority, srjf_score
from policies.ursa.placement import Stage, headroom, place_batch
from policies.ursa.retry import RetryGrid
from workloads.model import Job

TaskKey = tuple[int, int]
Vector = tuple[float, ...]
MEMORY_NAMES = ("mem", "memory")


@dataclass(frozen=True)
class UrsaConfig:
    """EPT (s), job order and its weight W (EJF: per second of age; SRJF: times priority),
    the scheduling interval: how soon to retry while ready tasks remain unplaced, and when
    to retry: ``on-change`` skips the retries that cannot place anything (nothing changed
    since a pass that placed nothing), ``every-interval`` runs them all (same decisions,
    slower: a reference for the tests)."""

    ept: float = field(default=4.0, metadata=within(MS, DAY))
    order: Literal["ejf", "srjf"] = "ejf"
    weight: float = field(default=0.01, metadata=within(0, 1e6))
    interval: float = field(default=0.1, metadata=within(MS, DAY))
    retry: Literal["on-change", "every-interval"] = "on-change"

    def __post_init__(self) -> None:
        check_bounds(self)


@dataclass
class Table:
    """One pass's view of the workers: free capacity net of queued demand, headrooms, and
    which resources are hard (memory) versus time-like."""

    free: dict[int, Vector]
    heads: dict[int, list[float]]
    hard: tuple[bool, ...]
    capacity: Vector


Increment = Callable[[TaskKey, int], Vector]
Demand = Callable[[TaskKey], Vector]
Planner = Callable[[Sequence[Stage[TaskKey]], Table, Increment, Demand], list[tuple[TaskKey, int]]]


@dataclass(frozen=True)
class PeakAccounting:
    """How the replaced-algorithm baselines see a task (Table 4): as its job's *peak*
    demand over all its monotask kinds (a core and a network slot), held from placement
    until the task ends, instead of what it uses now. ``network=False`` ignores network
    (YARN's Capacity, Tetris2)."""

    network: bool

    def belief(self, peak: Vector, resources: Sequence[str]) -> Vector:
        return tuple(0.0 if r == "net" and not self.network else x for r, x in zip(resources, peak))


class UrsaScheduler:
    """Central placement passes plus worker-side monotask queues."""

    def __init__(self, name: str, config: UrsaConfig, env: PolicyEnv, planner: Planner,
                 accounting: PeakAccounting | None = None) -> None:
        spec = env.cluster
        if spec.capacity is None:
            raise ValueError(f"{name} needs a cluster with a capacity vector")
        self.name = name
        self.config = config
        self.planner = planner
        self.accounting = accounting
        self.resources = spec.resources
        self.reserved: dict[int, Vector] = {}  # per job: what the baselines hold for each task
        self.capacity = spec.capacity
        self.hard = tuple(r in MEMORY_NAMES for r in spec.resources)
        self.cpu = spec.resources.index("cpu") if "cpu" in spec.resources else -1
        self.jobs: dict[int, Job] = {}
        self.unplaced: dict[int, set[int]] = {}
        self.left: dict[int, list[float]] = {}  # per job: remaining time-like work per resource
        self.assigned: list[dict[TaskKey, Vector]] = [{} for _ in range(spec.n_nodes)]
        self.queued: list[dict[TaskKey, ProbeInfo]] = [{} for _ in range(spec.n_nodes)]
        self._done: dict[int, int] = {}
        self.pass_at: float | None = None
        self.retry = RetryGrid(config.interval)

    # -- bookkeeping -----------------------------------------------------------------------
    def demand(self, key: TaskKey) -> Vector:
        d = self.jobs[key[0]].demands
        return d[key[1]] if d is not None else tuple(0.0 for _ in self.capacity)

    def work(self, key: TaskKey) -> Vector:
        """Per-resource work: duration × demand (memory: its size, not time)."""
        dur = self.jobs[key[0]].durations[key[1]]
        return tuple(x if hard else x * dur for x, hard in zip(self.demand(key), self.hard))

    def _cluster_left(self) -> list[float]:
        return [sum(x) for x in zip(*self.left.values())]

    def job_rank(self, jid: int) -> tuple[float, ...]:
        """Smaller runs first: (submit, id) for EJF; SRJF score then id for SRJF."""
        if self.config.order == "ejf":
            return (self.jobs[jid].submit, jid)
        return (srjf_score(self.left[jid], self._cluster_left()), jid)

    def order_bonus(self, jid: int, now: float) -> float:
        if self.config.order == "ejf":
            return ejf_bonus(self.config.weight, self.jobs[jid].submit, now)
        return self.config.weight * min(srjf_priority(self.left[jid], self._cluster_left()), 1e3)

    # -- scheduler side --------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        self.jobs[ev.job.job_id] = ev.job
        self.unplaced[ev.job.job_id] = set(range(ev.job.n_tasks))
        demands = ev.job.demands or (tuple(0.0 for _ in self.capacity),)
        peak = tuple(max(col) for col in zip(*demands))
        self.reserved[ev.job.job_id] = peak if self.accounting is None else self.accounting.belief(peak, self.resources)
        self.left[ev.job.job_id] = [0.0] * len(self.capacity)
        for t in range(ev.job.n_tasks):
            self._account(ev.job.job_id, t, +1)
        return self._wake(ev.time)

    def _account(self, jid: int, task: int, sign: int) -> None:
        left = self.left[jid]
        for i, w in enumerate(self.work((jid, task))):
            if not self.hard[i]:
                left[i] += sign * w

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        del self.assigned[ev.node][(ev.job_id, ev.task)]
        self._account(ev.job_id, ev.task, -1)
        if view.job(ev.job_id).n_tasks == self._done.setdefault(ev.job_id, 0) + 1:
            for store in (self.jobs, self.unplaced, self.left, self._done, self.reserved):
                del store[ev.job_id]
        else:
            self._done[ev.job_id] += 1
        return self._wake(ev.time)

    def _wake(self, at: float) -> Decisions:
        """One pass per instant: arrivals and completions at ``at`` are all seen first."""
        if self.pass_at is not None and self.pass_at <= at:
            return NONE
        self.pass_at = at
        return (SetTimer(at, None, "place"),)

    def on_timer(self, ev: Timer, view: ClusterView) -> Decisions:
        if ev.time != self.pass_at:
            return NONE  # superseded by an earlier pass
        self.pass_at = None
        stages = self._stages(view)
        if not stages:
            self.retry.clear()
            return NONE
        out: list[Decision] = []
        placed = self.planner(stages, self._table(view), self._increment, self.believed)
        for key, node in placed:
            self.unplaced[key[0]].discard(key[1])
            self.assigned[node][key] = self.work(key)
            out.append(Assign(node, ProbeInfo(key[0], key[1], self.jobs[key[0]].durations[key[1]])))
        if len(placed) == sum(len(s.tasks) for s in stages):
            self.retry.clear()
        elif placed or self.config.retry == "every-interval":
            out.extend(self._wake(self.retry.after_pass(ev.time)))
        else:
            self.retry.stall(ev.time)
        return out

    def _changed(self, at: float) -> Decisions:
        """A hook changed what a pass reads: if stalled, retry at the first tick at or after ``at``."""
        return self._wake(self.retry.resume(at)) if self.retry.stalled else NONE

    def _stages(self, view: ClusterView) -> list[Stage[TaskKey]]:
        groups: dict[tuple[int, int], list[int]] = {}
        for jid in sorted(self.jobs, key=self.job_rank):
            job = self.jobs[jid]
            todo = sorted(self.unplaced[jid])
            if not job.has_dag:  # one stage, all ready
                if todo:
                    groups[(jid, 0)] = todo
                continue
            for t in todo:
                if view.is_ready(jid, t):
                    groups.setdefault((jid, job.stage_of[t] if job.stage_of else 0), []).append(t)
        return [Stage(k, tuple(zip(repeat(k[0]), ts)), self.order_bonus(k[0], view.now))
                for k, ts in groups.items()]

    def believed(self, key: TaskKey) -> Vector:
        """What the planner thinks a task occupies: its demand, or its job's peak."""
        return self.demand(key) if self.accounting is None else self.reserved[key[0]]

    def _table(self, view: ClusterView) -> Table:
        free: dict[int, Vector] = {}
        heads: dict[int, list[float]] = {}
        for w in range(len(self.assigned)):
            if self.accounting is None:  # the truth now, less what waits in the queue
                f, held = view.free_capacity(w) or self.capacity, list(self.queued[w])
            else:  # peak reservations of everything placed and unfinished
                f, held = self.capacity, list(self.assigned[w])
            for k in held:
                f = sub(f, self.believed(k))
            free[w] = f
            heads[w] = [self._headroom(w, i, f) for i in range(len(self.capacity))]
        return Table(free, heads, self.hard, self.capacity)

    def _headroom(self, w: int, i: int, free: Vector) -> float:
        if self.hard[i]:
            return max(0.0, free[i] / self.capacity[i])
        if free[i] >= 1.0:
            return 1.0  # an idle core (or network slot): APT = 0, §4.2.2 extended to every unit
        apt = sum(work[i] for work in self.assigned[w].values()) / self.capacity[i]
        return headroom(self.config.ept, apt)

    def _increment(self, key: TaskKey, w: int) -> Vector:
        return tuple(x / self.capacity[i] if self.hard[i] else x / self.capacity[i] / self.config.ept
                     for i, x in enumerate(self.work(key)))

    # -- worker side -----------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        assert ev.probe.task is not None, "Ursa binds every task at the scheduler"
        self.queued[ev.node][(ev.probe.job_id, ev.probe.task)] = ev.probe
        return [*self._fill(ev.node, view), *self._changed(ev.time)]

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        return [*self._fill(ev.node, view), *self._changed(ev.time)]

    def _fill(self, node: int, view: ClusterView) -> list[Decision]:
        """Start queued monotasks in MO order while they fit (a later one may pass a blocked one)."""
        free = view.free_capacity(node) or self.capacity
        free_slots = list(view.free_slot_ids(node))
        out: list[Decision] = []
        for key in sorted(self.queued[node], key=self._mo_key):
            if not free_slots:
                break
            if fits(self.demand(key), free):
                free = sub(free, self.demand(key))
                out.append(Run(node, free_slots.pop(0), self.queued[node].pop(key)))
        return out

    def _mo_key(self, key: TaskKey) -> tuple[float, ...]:
        is_cpu = self.cpu >= 0 and self.demand(key)[self.cpu] > 0
        return (*monotask_order(self.job_rank(key[0]), self.jobs[key[0]].durations[key[1]], is_cpu), key[1])


# -- planners --------------------------------------------------------------------------------
def algorithm1(stages: Sequence[Stage[TaskKey]], table: Table, increment: Increment,
               demand: Demand) -> list[tuple[TaskKey, int]]:
    """Ursa Algorithm 1, stage-aware, repeated until nothing more can be placed."""
    return place_batch(stages, table.heads, increment, table.hard)


def per_task(stages: Sequence[Stage[TaskKey]], table: Table, increment: Increment,
             demand: Demand) -> list[tuple[TaskKey, int]]:
    """Algorithm 1 without stage awareness: every task is its own stage (the Fig. 7 ablation)."""
    singles = [Stage((s.key, t), (t,), s.order_bonus) for s in stages for t in s.tasks]
    return place_batch(singles, table.heads, increment, table.hard, stage_bonus=0.0)


def greedy(score: Callable[[Vector, Vector, Vector], float]) -> Planner:
    """A replaced-algorithm baseline: task by task in stage order, the best-scoring worker
    where the task fits now; tasks that fit nowhere wait for the next pass."""
    def plan(stages: Sequence[Stage[TaskKey]], table: Table, increment: Increment,
             demand: Demand) -> list[tuple[TaskKey, int]]:
        out: list[tuple[TaskKey, int]] = []
        # a task that does not fit the most any worker has free on each resource fits no worker:
        # skipped without the scan (a backlog of thousands of tasks on a full cluster was a scan of
        # every worker per waiting task per pass)
        top = ceiling(table.free.values(), len(table.capacity))
        # top only shrinks during a pass: a demand that did not fit it once never will (tasks
        # share a few demand vectors, a baseline's one per job)
        unfit: set[Vector] = set()
        for s in stages:
            for t in s.tasks:
                d = demand(t)
                if d in unfit:
                    continue
                if not fits(d, top):
                    unfit.add(d)
                    continue
                fit = [(score(d, f, table.capacity), -w, w) for w, f in table.free.items() if fits(d, f)]
                if fit:
                    w = max(fit)[2]
                    table.free[w] = sub(table.free[w], d)
                    out.append((t, w))
                    top = ceiling(table.free.values(), len(table.capacity))
        return out
    return plan


def most_available(d: Vector, free: Vector, cap: Vector) -> float:
    """YARN Capacity-like: the worker with the most free resources (normalised sum)."""
    return sum(normalized(free, cap))


def alignment(d: Vector, free: Vector, cap: Vector) -> float:
    """Tetris: dot product of the task's demand and the worker's free resources (normalised)."""
    return sum(a * b for a, b in zip(normalized(d, cap), normalized(free, cap)))



def _entry(name: str, planner: Planner, summary: str, accounting: PeakAccounting | None = None) -> PolicyEntry:
    return PolicyEntry(name, UrsaConfig, lambda c, env: UrsaScheduler(name, c, env, planner, accounting), summary)


URSA = _entry("ursa", algorithm1, "Ursa: per-resource load-balanced, stage-aware placement; EJF or SRJF order")
URSA_PER_TASK = _entry("ursa-per-task", per_task, "Ursa without stage awareness (Fig. 7 ablation)")
CAPACITY = _entry("capacity", greedy(most_available),
                  "Ursa runtime, YARN Capacity-like placement: most available worker, peak CPU/memory",
                  PeakAccounting(network=False))
TETRIS = _entry("tetris", greedy(alignment), "Ursa runtime, Tetris placement: alignment on peak demands",
                PeakAccounting(network=True))
TETRIS2 = _entry("tetris2", greedy(alignment), "Ursa runtime, Tetris ignoring network demand",
                 PeakAccounting(network=False))
