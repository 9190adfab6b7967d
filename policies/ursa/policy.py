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

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from policies.framework.bounds import DAY, MS, check_bounds, within
from policies.framework.api import (NONE, Assign, ClusterView, Decision, Decisions, JobArrival, PolicyEnv,
                          ProbeArrival, ProbeInfo, Run, SetTimer, SlotFreed, TaskFinished, Timer)
from policies.common.vectors import fits, normalized, sub
from policies.framework.registry import PolicyEntry
from policies.ursa.ordering import ejf_bonus, monotask_order, srjf_priority, srjf_score
from policies.ursa.dominance import Fronts
from policies.ursa.placement import Stage, Uses, headroom, needs, opens, place_batch, place_singly
from policies.ursa.retry import RetryGrid
from policies.ursa.room import FreeRoom, Rate
from workloads.model import Job

TaskKey = tuple[int, int]
Vector = tuple[float, ...]
# what decides whether some worker can take a task (UrsaScheduler._kind): a demand vector for the
# baselines, (used resources, hard increments) for Algorithm 1
Kind = tuple[Any, ...]
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
    """One pass's view of the workers: headrooms (Algorithm 1), which resources are hard
    (memory) versus time-like, what decides where the unplaced tasks can go (``_kind``), and
    the baselines' free room, which their passes reserve in as they place."""

    heads: dict[int, list[float]]
    hard: tuple[bool, ...]
    capacity: Vector
    kinds: frozenset[Kind]
    room: FreeRoom | None = None
    opened: Mapping[Uses, list[int]] = field(default_factory=dict)  # Algorithm 1: the workers open to each, sorted
    fronts: Fronts[TaskKey] = field(default_factory=Fronts)  # per task: each stage's undominated tasks, kept


Increment = Callable[[TaskKey], Vector]
Demand = Callable[[TaskKey], Vector]
PlanFn = Callable[[Sequence[Stage[TaskKey]], Table, Increment, Demand], list[tuple[TaskKey, int]]]


@dataclass(frozen=True)
class Planner:
    """A placement step and what it needs of a worker: headroom on every resource a task
    uses (Algorithm 1's exclusion, Eq. 1) or, for a baseline that scores workers by ``rate``,
    free room for the demand the task is believed to occupy. A pass in which no worker can
    take any unplaced task places nothing, so it is not run."""

    plan: PlanFn
    rate: Rate | None = None

    @property
    def by_headroom(self) -> bool:
        return self.rate is None


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
        self._waiting: set[int] = set()  # the jobs with unplaced tasks
        self.left: dict[int, list[float]] = {}  # per job: remaining time-like work per resource
        self.assigned: list[dict[TaskKey, Vector]] = [{} for _ in range(spec.n_nodes)]
        self.queued: list[dict[TaskKey, ProbeInfo]] = [{} for _ in range(spec.n_nodes)]
        self._done: dict[int, int] = {}
        self.incs: dict[TaskKey, Vector] = {}
        # what decides where an unplaced task can go (few distinct values), counted: a pass is run
        # only when some worker can take one of them
        self.kinds: dict[Kind, int] = {}
        # per job: its unplaced tasks, sorted, as a list (a placed one is deleted where a bisection finds
        # it) and as the tuple a pass reads, copied from it after a placement
        self._sorted: dict[int, list[TaskKey]] = {}
        self._todo: dict[int, tuple[TaskKey, ...]] = {}
        # per worker, from what is assigned to it: APT per resource (None: to recompute), and for
        # the baselines the free room left by the peak reservations
        self._apt: list[list[float] | None] = [None] * spec.n_nodes
        # Algorithm 1's headrooms per worker, in worker order, recomputed for the workers a hook made
        # stale (``_dirty``) when a pass reads them, and per set of used resources the workers open to it
        self._heads: dict[int, list[float]] = dict.fromkeys(range(spec.n_nodes), [])
        self._dirty: set[int] = set(range(spec.n_nodes)) if planner.by_headroom else set()
        self._open: dict[Uses, list[int]] = {}  # sorted: a pass's planner copies them as they are
        self._head_values: dict[Vector, list[float]] = {}  # one object per headroom value (_shared_head)
        self.room = None if planner.rate is None else \
            FreeRoom(dict.fromkeys(range(spec.n_nodes), self.capacity), self.capacity, planner.rate)
        self._fronts: Fronts[TaskKey] = Fronts()  # Algorithm 1 per task: kept from pass to pass
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
        if ev.job.n_tasks:
            self._waiting.add(ev.job.job_id)
        demands = ev.job.demands or (tuple(0.0 for _ in self.capacity),)
        peak = tuple(max(col) for col in zip(*demands))
        self.reserved[ev.job.job_id] = peak if self.accounting is None else self.accounting.belief(peak, self.resources)
        self.left[ev.job.job_id] = [0.0] * len(self.capacity)
        for t in range(ev.job.n_tasks):
            self._account(ev.job.job_id, t, +1)
            self._count(self._kind((ev.job.job_id, t)), +1)
        return self._wake(ev.time)

    def _count(self, kind: Kind, sign: int) -> None:
        """One more or one fewer unplaced task of ``kind``; the baselines keep the workers each
        waiting kind fits ready, best first, so a pass finds them without a scan."""
        n = self.kinds[kind] = self.kinds.get(kind, 0) + sign
        if not n:
            del self.kinds[kind]
            if self.room is not None:
                self.room.unwatch(kind)
        elif self.room is not None:
            self.room.watch(kind)

    def _kind(self, key: TaskKey) -> Kind:
        """What decides whether some worker can take a task now: the resources it uses and its
        memory share (Algorithm 1), or what it is believed to occupy (the baselines)."""
        if not self.planner.by_headroom:
            return self.believed(key)
        inc = self._increment(key)
        used = needs(inc)
        return used, tuple((r, inc[r]) for r in used if self.hard[r])

    def _touch(self, worker: int) -> None:
        """A task on ``worker`` ended: its load figures and free room follow (a placement
        reserves its room as the pass places it, the same arithmetic :meth:`_reservations` does)."""
        self._stale(worker)
        if self.room is not None:
            self.room.set(worker, self._reservations(worker))

    def _account(self, jid: int, task: int, sign: int) -> None:
        left = self.left[jid]
        for i, w in enumerate(self.work((jid, task))):
            if not self.hard[i]:
                left[i] += sign * w

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        del self.assigned[ev.node][(ev.job_id, ev.task)]
        self._touch(ev.node)
        self.incs.pop((ev.job_id, ev.task), None)
        self._account(ev.job_id, ev.task, -1)
        if view.job(ev.job_id).n_tasks == self._done.setdefault(ev.job_id, 0) + 1:
            for store in (self.jobs, self.unplaced, self.left, self._done, self.reserved):
                del store[ev.job_id]
            self._todo.pop(ev.job_id, None)
            self._sorted.pop(ev.job_id, None)
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
        if not self._any_ready(view):
            self.retry.clear()
            return NONE
        out: list[Decision] = []
        table = self._table(view)
        if self._may_place(table):
            stages = self._stages(view)
            placed = self.planner.plan(stages, table, self._increment, self.believed)
            everything = len(placed) == sum(len(s.tasks) for s in stages)
        else:
            placed, everything = [], False
        for key, node in placed:
            self.unplaced[key[0]].discard(key[1])
            self._count(self._kind(key), -1)
            self.assigned[node][key] = self.work(key)
            self._stale(node)
            out.append(Assign(node, ProbeInfo(key[0], key[1], self.jobs[key[0]].durations[key[1]])))
        by_job: dict[int, list[TaskKey]] = {}
        for key, _ in placed:
            by_job.setdefault(key[0], []).append(key)
        for jid, keys in by_job.items():
            self._drop_placed(jid, keys)
            if not self.unplaced[jid]:
                self._waiting.discard(jid)
        if everything:
            self.retry.clear()
        elif placed or self.config.retry == "every-interval":
            out.extend(self._wake(self.retry.after_pass(ev.time)))
        else:
            self.retry.stall(ev.time)
        return out

    def _changed(self, at: float) -> Decisions:
        """A hook changed what a pass reads: if stalled, retry at the first tick at or after ``at``."""
        return self._wake(self.retry.resume(at)) if self.retry.stalled else NONE

    def _any_ready(self, view: ClusterView) -> bool:
        """Whether some unplaced task is ready: asked before every pass, so only the jobs with
        unplaced tasks are looked at, not every admitted one."""
        return any(not self.jobs[jid].has_dag or any(view.is_ready(jid, t) for t in self.unplaced[jid])
                   for jid in self._waiting)

    def _may_place(self, table: Table) -> bool:
        """Whether some worker can take some unplaced task (``_kind``): otherwise the planner
        would place nothing."""
        if table.room is not None:
            return any(table.room.best(kind) is not None for kind in table.kinds)
        return any(opens(table.heads[w], used, hard) for used, hard in table.kinds for w in table.opened[used])

    def _unplaced_sorted(self, jid: int) -> tuple[TaskKey, ...]:
        todo = self._todo.get(jid)
        if todo is None:
            keys = self._sorted.get(jid)
            if keys is None:
                keys = self._sorted[jid] = [(jid, t) for t in sorted(self.unplaced[jid])]
            todo = self._todo[jid] = tuple(keys)
        return todo

    def _drop_placed(self, jid: int, keys: Sequence[TaskKey]) -> None:
        """Tasks ``keys`` of ``jid`` were placed: its sorted unplaced tasks lose them, each found by
        a bisection, and the tuple is copied from the list when a pass next reads it, at C level and
        of the same key objects (a loop over the keys in the compiled core would box each one
        anew; a dict that lost keys, as this was, would visit their holes)."""
        left = self._sorted.get(jid)
        if left is not None:
            for key in keys:
                del left[bisect_left(left, key)]
            self._todo.pop(jid, None)

    def _stages(self, view: ClusterView) -> list[Stage[TaskKey]]:
        groups: dict[tuple[int, int], Sequence[TaskKey]] = {}
        for jid in sorted(self._waiting, key=self.job_rank):  # the others have no stage to place
            job = self.jobs[jid]
            todo = self._unplaced_sorted(jid)
            if not job.has_dag:  # one stage, all ready
                if todo:
                    groups[(jid, 0)] = todo
                continue
            ready: dict[tuple[int, int], list[TaskKey]] = {}
            for key in todo:
                if view.is_ready(jid, key[1]):
                    ready.setdefault((jid, job.stage_of[key[1]] if job.stage_of else 0), []).append(key)
            groups.update(ready)
        return [Stage(k, tuple(keys), self.order_bonus(k[0], view.now)) for k, keys in groups.items()]

    def believed(self, key: TaskKey) -> Vector:
        """What the planner thinks a task occupies: its demand, or its job's peak."""
        return self.demand(key) if self.accounting is None else self.reserved[key[0]]

    def _table(self, view: ClusterView) -> Table:
        if self.room is not None:
            return Table({}, self.hard, self.capacity, frozenset(self.kinds), self.room)
        for w in self._dirty:
            self._refresh(w, view)
        self._dirty.clear()
        kinds = frozenset(self.kinds)
        for used, _ in kinds:
            if used not in self._open:
                self._open[used] = [w for w, head in self._heads.items() if opens(head, used)]
        return Table(self._heads, self.hard, self.capacity, kinds, opened=self._open, fronts=self._fronts)

    def _stale(self, worker: int) -> None:
        """What a pass reads of ``worker`` changed (its assignments, queue or running tasks, all
        in this policy's hooks for it): its load figures are recomputed when next read."""
        self._apt[worker] = None
        if self.room is None:
            self._dirty.add(worker)

    def _refresh(self, w: int, view: ClusterView) -> None:
        """Algorithm 1's headrooms of ``w`` (kept until :meth:`_stale`), and the sets of used
        resources it is open to: a pass then finds the open workers without scanning them all."""
        f = view.free_capacity(w) or self.capacity  # the truth now, less what waits in the queue
        for k in self.queued[w]:
            f = sub(f, self.believed(k))
        head = self._heads[w] = self._shared_head([self._headroom(w, i, f) for i in range(len(self.capacity))])
        for used, ws in self._open.items():
            at = bisect_left(ws, w)
            there = at < len(ws) and ws[at] == w
            if opens(head, used) != there:
                if there:
                    del ws[at]
                else:
                    ws.insert(at, w)

    def _shared_head(self, head: list[float]) -> list[float]:
        """One object per headroom value, which Algorithm 1 scores once per task (idle workers
        share theirs); forgotten when there are many more values than workers."""
        if len(self._head_values) > 4 * len(self._heads):
            self._head_values.clear()
        return self._head_values.setdefault(tuple(head), head)

    def _reservations(self, w: int) -> Vector:
        """The baselines' free room on ``w``: its capacity less the peak reservations of everything
        placed there and unfinished."""
        f = self.capacity
        for k in self.assigned[w]:
            f = sub(f, self.believed(k))
        return f

    def _headroom(self, w: int, i: int, free: Vector) -> float:
        if self.hard[i]:
            return max(0.0, free[i] / self.capacity[i])
        if free[i] >= 1.0:
            return 1.0  # an idle core (or network slot): APT = 0, §4.2.2 extended to every unit
        apt = self._apt[w]
        if apt is None:
            apt = self._apt[w] = [sum(work[r] for work in self.assigned[w].values()) / self.capacity[r]
                                  for r in range(len(self.capacity))]
        return headroom(self.config.ept, apt[i])

    def _increment(self, key: TaskKey) -> Vector:
        """Inc(t, w) on any worker (the rates are the cluster's capacity), computed once per task."""
        inc = self.incs.get(key)
        if inc is None:
            ept = self.config.ept
            inc = self.incs[key] = tuple(x / self.capacity[i] if self.hard[i] else x / self.capacity[i] / ept
                                         for i, x in enumerate(self.work(key)))
        return inc

    # -- worker side -----------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        assert ev.probe.task is not None, "Ursa binds every task at the scheduler"
        self.queued[ev.node][(ev.probe.job_id, ev.probe.task)] = ev.probe
        self._stale(ev.node)
        return [*self._fill(ev.node, view), *self._changed(ev.time)]

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        self._stale(ev.node)
        return [*self._fill(ev.node, view), *self._changed(ev.time)]

    def _fill(self, node: int, view: ClusterView) -> list[Decision]:
        """Start queued monotasks in MO order while they fit (a later one may pass a blocked one).
        Most calls find an empty queue (nothing to read) or a single task (nothing to sort)."""
        queue = self.queued[node]
        if not queue:
            return []
        free = view.free_capacity(node) or self.capacity
        free_slots = list(view.free_slot_ids(node))
        out: list[Decision] = []
        for key in sorted(queue, key=self._mo_key) if len(queue) > 1 else list(queue):
            if not free_slots:
                break
            if fits(self.demand(key), free):
                free = sub(free, self.demand(key))
                out.append(Run(node, free_slots.pop(0), queue.pop(key)))
        return out

    def _mo_key(self, key: TaskKey) -> tuple[float, ...]:
        is_cpu = self.cpu >= 0 and self.demand(key)[self.cpu] > 0
        return (*monotask_order(self.job_rank(key[0]), self.jobs[key[0]].durations[key[1]], is_cpu), key[1])


# -- planners --------------------------------------------------------------------------------
def algorithm1(stages: Sequence[Stage[TaskKey]], table: Table, increment: Increment,
               demand: Demand) -> list[tuple[TaskKey, int]]:
    """Ursa Algorithm 1, stage-aware, repeated until nothing more can be placed."""
    return place_batch(stages, table.heads, increment, table.hard, uses=_uses(table), opened=_opened(table))


def per_task(stages: Sequence[Stage[TaskKey]], table: Table, increment: Increment,
             demand: Demand) -> list[tuple[TaskKey, int]]:
    """Algorithm 1 without stage awareness: every task is its own stage (the Fig. 7 ablation)."""
    return place_singly(stages, table.heads, increment, table.hard, uses=_uses(table), opened=_opened(table),
                        fronts=table.fronts)


def _opened(table: Table) -> dict[Uses, list[int]]:
    """The workers open to each set of resources the unplaced tasks use, in worker order."""
    return {used: table.opened[used] for used in _uses(table)}


def _uses(table: Table) -> set[tuple[int, ...]]:
    """The sets of resources the unplaced tasks use (Algorithm 1's kinds: used, hard increments)."""
    return {used for used, _ in table.kinds}


def greedy(stages: Sequence[Stage[TaskKey]], table: Table, increment: Increment,
           demand: Demand) -> list[tuple[TaskKey, int]]:
    """A replaced-algorithm baseline: task by task in stage order, the best-scoring worker
    where the task fits now (``table.room``); tasks that fit nowhere wait for the next pass.

    Free room only shrinks during a pass, so a demand that fits no worker (tasks share a few
    demand vectors, a baseline's one per job) never will: it is skipped, and the pass ends when
    that holds for every kind waiting."""
    room = table.room
    assert room is not None, "a baseline's table carries its free room"
    out: list[tuple[TaskKey, int]] = []
    unfit: set[Kind] = set()
    for s in stages:
        for t in s.tasks:
            d = demand(t)
            if d in unfit:
                continue
            w = room.best(d)
            if w is None:
                unfit.add(d)
                if unfit >= table.kinds:
                    return out
                continue
            room.take(w, d)
            out.append((t, w))
    return out


def most_available(d: Vector, free: Vector, cap: Vector) -> float:
    """YARN Capacity-like: the worker with the most free resources (normalised sum)."""
    return sum(normalized(free, cap))


def alignment(d: Vector, free: Vector, cap: Vector) -> float:
    """Tetris: dot product of the task's demand and the worker's free resources (normalised)."""
    return sum(a * b for a, b in zip(normalized(d, cap), normalized(free, cap)))



def _entry(name: str, planner: Planner, summary: str, accounting: PeakAccounting | None = None) -> PolicyEntry:
    return PolicyEntry(name, UrsaConfig, lambda c, env: UrsaScheduler(name, c, env, planner, accounting), summary)


URSA = _entry("ursa", Planner(algorithm1),
              "Ursa: per-resource load-balanced, stage-aware placement; EJF or SRJF order")
URSA_PER_TASK = _entry("ursa-per-task", Planner(per_task),
                       "Ursa without stage awareness (Fig. 7 ablation)")
CAPACITY = _entry("capacity", Planner(greedy, most_available),
                  "Ursa runtime, YARN Capacity-like placement: most available worker, peak CPU/memory",
                  PeakAccounting(network=False))
TETRIS = _entry("tetris", Planner(greedy, alignment),
                "Ursa runtime, Tetris placement: alignment on peak demands",
                PeakAccounting(network=True))
TETRIS2 = _entry("tetris2", Planner(greedy, alignment),
                 "Ursa runtime, Tetris ignoring network demand",
                 PeakAccounting(network=False))
