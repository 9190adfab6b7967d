"""The scheduler → masters → workers structure of Falcon (§IV-A), shared with the
baselines its paper compares against, which differ only in the strategies plugged in.

* The **scheduler** hands each job to one master (r = 1, so one master sees the whole DAG;
  our reading) chosen at random among the masters that are not heavily loaded (load above
  mean + one standard deviation; our reading).
* A **master** groups the tasks it dispatches into entities (a :data:`Grouper`: Falcon's
  complementary pairs, or singletons) and places each entity with a :data:`Placer` on one of
  its workers, from a table of free capacity minus what is already queued there (kept exact:
  our simulator has no reporting staleness).
* **Workers** run :class:`~policies.common.preemptive.PreemptiveWorkers`.

Dependency-aware policies dispatch a task when it becomes ready; oblivious ones
(``early_start``) dispatch a whole job at arrival and let workers start tasks out of order.
"""
from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.framework.bounds import ESTIMATE_NOISE, MASTERS, SUSPENDED_PER_NODE, check_bounds
from policies.framework.api import (Assign, ClusterView, Decision, Decisions, JobArrival, PolicyEnv, ProbeArrival,
                          ProbeInfo, Run, SetTimer, SlotFreed, TaskFinished, Timer)
from policies.common.preemptive import PreemptionRule, PreemptiveWorkers, TaskKey
from policies.common.vectors import add, most_matched, sub, total
from policies.falcon.book import TaskBook

Vector = tuple[float, ...]
# (tasks in dispatch order, their demands, capacity, compatible(a, b)) -> entities
Grouper = Callable[[Sequence[TaskKey], Callable[[TaskKey], Vector], Vector,
                    Callable[[TaskKey, TaskKey], bool]], list[tuple[TaskKey, ...]]]
# (entity demand, [(worker, available, capacity, queued work)], rng) -> worker
Placer = Callable[[Vector, list[tuple[int, Vector, Vector, float]], random.Random], int]


def singletons(tasks: Sequence[TaskKey], demand: Callable[[TaskKey], Vector], capacity: Vector,
               compatible: Callable[[TaskKey, TaskKey], bool]) -> list[tuple[TaskKey, ...]]:
    return [(t,) for t in tasks]


def best_fit(demand: Vector, table: list[tuple[int, Vector, Vector, float]], rng: random.Random) -> int:
    """The most matched worker (fits, least remaining); if none fits now, the worker with the
    least queued work (the entity waits in its buffer queue; our reading)."""
    w = most_matched(demand, [(w, avail, cap) for w, avail, cap, _ in table])
    return w if w is not None else min(table, key=lambda row: (row[3], row[0]))[0]


def random_worker(demand: Vector, table: list[tuple[int, Vector, Vector, float]], rng: random.Random) -> int:
    """Decentralised placement without a load table: any worker of the master."""
    return rng.choice(table)[0]


class TieredScheduler:
    """One policy object for all three tiers; the strategies make it Falcon or a baseline."""

    def __init__(self, name: str, env: PolicyEnv, book: TaskBook, rule: PreemptionRule, *,
                 masters: int, group: Grouper, place: Placer, early_start: bool, max_suspended: int = 0) -> None:
        spec = env.cluster
        if spec.capacity is None:
            raise ValueError(f"{name} needs a cluster with a capacity vector")
        if masters < 1:
            raise ValueError(f"{name}: masters must be >= 1, got {masters}")
        masters = min(masters, spec.n_nodes)  # a master needs at least one worker
        self.name = name
        self.early_start = early_start
        self.capacity = spec.capacity
        self.book = book
        self.group = group
        self.place = place
        self.rng = env.rng("placement")
        self.workers = PreemptiveWorkers(book.priority, rule, book.independent, book.est.__getitem__, early_start,
                                         max_suspended, book.priority_class)
        self.workers_of = [list(range(m, spec.n_nodes, masters)) for m in range(masters)]
        self.master_of: dict[int, int] = {}

    # -- scheduler and masters -------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        roots = self.book.add(ev.job)
        master = self._pick_master(view)
        self.master_of[ev.job.job_id] = master
        tasks = [(ev.job.job_id, i) for i in range(ev.job.n_tasks)] if self.early_start else roots
        return self._dispatch(master, tasks, view)

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        ready = self.book.finish((ev.job_id, ev.task))
        if ev.job_id not in self.book.jobs:  # that was the job's last task
            del self.master_of[ev.job_id]
        if self.early_start:  # queued tasks that became ready may now displace stuck ones
            nodes = sorted({n for k in ready if (n := self.book.node_of.get(k)) is not None})
            return [SetTimer(ev.time, n, "ready") for n in nodes]
        return self._dispatch(self.master_of[ev.job_id], ready, view) if ready else ()

    def _pick_master(self, view: ClusterView) -> int:
        loads = [sum(view.queued(w) + len(view.running(w)) for w in ws) for ws in self.workers_of]
        limit = statistics.fmean(loads) + (statistics.pstdev(loads) if len(loads) > 1 else 0.0)
        return self.rng.choice([m for m, load in enumerate(loads) if load <= limit])

    def _demand(self, key: TaskKey) -> Vector:
        job = self.book.jobs[key[0]]
        return job.demands[key[1]] if job.demands is not None else tuple(0.0 for _ in self.capacity)

    def _dispatch(self, master: int, tasks: list[TaskKey], view: ClusterView) -> list[Decision]:
        tasks = sorted(tasks, key=lambda k: (-self.book.priority(k, -1, view), k))

        def compatible(a: TaskKey, b: TaskKey) -> bool:
            return self.book.independent(a, b) and all(
                x <= c for x, c in zip(add(self._demand(a), self._demand(b)), self.capacity))

        loads = self._loads(master, view)
        extra: dict[int, Vector] = {}
        out: list[Decision] = []
        for entity in self.group(tasks, self._demand, self.capacity, compatible):
            need = total((self._demand(k) for k in entity), len(self.capacity))
            node = self.place(need, self._table(loads, extra), self.rng)
            extra[node] = add(extra.get(node, tuple(0.0 for _ in self.capacity)), need)
            for key in entity:
                self.book.node_of[key] = node
                out.append(Assign(node, ProbeInfo(key[0], key[1], self.book.est[key])))
        return out

    def _loads(self, master: int, view: ClusterView) -> list[tuple[int, Vector, Vector, float]]:
        """Per worker of ``master``: its free capacity, the demand and the work queued at it. Fixed
        while one dispatch places its entities (its tasks reach the queues later), so read once."""
        rows = []
        for w in self.workers_of[master]:
            queued = self.workers.queued.get(w, {})
            held = total([self._demand(k) for k in queued], len(self.capacity))
            rows.append((w, view.free_capacity(w) or self.capacity, held, sum(self.book.est[k] for k in queued)))
        return rows

    def _table(self, loads: list[tuple[int, Vector, Vector, float]],
               extra: dict[int, Vector]) -> list[tuple[int, Vector, Vector, float]]:
        """The placer's table: each worker's room once its queue and this dispatch's ``extra`` run."""
        return [(w, sub(free, add(held, extra[w]) if w in extra else held), self.capacity, work)
                for w, free, held, work in loads]

    # -- workers ---------------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        self.workers.enqueue(ev.node, ev.probe)
        return self._step(ev.node, view)

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        return self._step(ev.node, view)

    def on_node_timer(self, ev: Timer, view: ClusterView) -> Decisions:
        assert ev.node is not None, "node timers carry their node"
        return self._step(ev.node, view)

    def _step(self, node: int, view: ClusterView) -> list[Decision]:
        """The worker's step; the tasks it starts are noted in the book (from then on they may
        have attained service; before, priorities skip looking for them in the node's slots)."""
        out = self.workers.step(node, view)
        for d in out:
            if isinstance(d, Run) and d.probe.task is not None:
                self.book.started.add((d.probe.job_id, d.probe.task))
        return out



@dataclass(frozen=True)
class ObliviousConfig:
    """Shared by the dependency-oblivious baselines of the Falcon paper."""

    masters: int = field(default=5, metadata=MASTERS)
    estimate_noise: float = field(default=0.0, metadata=ESTIMATE_NOISE)
    max_suspended: int = field(default=0, metadata=SUSPENDED_PER_NODE)

    def __post_init__(self) -> None:
        check_bounds(self)


def oblivious(name: str, config: ObliviousConfig, env: PolicyEnv, rule: PreemptionRule, place: Placer,
              w1: float, w2: float) -> TieredScheduler:
    """A baseline: Eq. (3)-style priority ω1/t_rem + ω2·t_wait for every task (no DAG
    term), singleton entities, whole jobs dispatched at arrival, out-of-order starts."""
    book = TaskBook(env.rng("estimates"), config.estimate_noise, w1, w2, dag=False)
    return TieredScheduler(name, env, book, rule, masters=config.masters, group=singletons,
                           place=place, early_start=True, max_suspended=config.max_suspended)


def suspended_room(config: ObliviousConfig | Any) -> int:
    """``Preempts.extra_tasks`` of Falcon and its baselines: live, a suspended task keeps its one-core
    executor, so a node needs one executor beyond its slots per task it may hold suspended."""
    if config.max_suspended < 1:
        raise ValueError("max_suspended=0 (no limit) cannot run live: each suspended task keeps its executor, "
                         "and a node has one extra executor per task it may hold suspended; give a number")
    return int(config.max_suspended)


# live: one suspended task per node, as one extra executor per NodeManager gives room for (our reading;
# the paper's prototype sets no limit, and neither does the simulator by default)
LIVE = {"max_suspended": "1"}
