"""Worker-side machinery of priority-preemptive, multi-resource schedulers (Falcon and the
baselines of its paper): each worker keeps its queued tasks, fills free slots by priority
(backfilling what fits), then considers one preemption per event.

What differs between policies is injected: the priority of a task, the preemption rule
(which waiting task may displace which running one), whether tasks may start before
their DAG parents finish, and how many suspended tasks a worker may hold (a preemption waits
while it holds that many). A liveness guard applies to every rule, beyond that limit: when a
ready task waits and running tasks are stuck waiting for their parents, the stuck tasks are
suspended (like Hadoop's reducer preemption); otherwise dependency-oblivious workers can deadlock.
"""
from __future__ import annotations

import math
from bisect import insort
from collections.abc import Callable, Hashable, Sequence
from itertools import takewhile
from dataclasses import dataclass
from typing import Protocol

from policies.framework.api import ClusterView, Decision, ProbeInfo, Resume, Run, RunningTask, SetTimer, Suspend
from policies.common.vectors import add, fits, sub
from policies.falcon.preemption import SpDecision, SpTask

TaskKey = tuple[int, int]
Priority = Callable[[TaskKey, int, ClusterView], float]
# A waiting task's priority class: every task of one class has the very same priority at every
# instant while it waits (None: a class of its own). Fixed from the task's queueing to its start.
PriorityClass = Callable[[TaskKey], Hashable | None]


class PreemptionRule(Protocol):
    """Pick (preemptor, victim) among a worker's waiting and running tasks, or None.
    ``compatible(w, r)`` says whether waiting ``w`` may replace running ``r`` at all. A rule
    preempts only for a startable waiting task of higher priority than some running task (the
    workers skip the rule, and its random draws, when there is none)."""

    def __call__(self, waiting: Sequence[SpTask[TaskKey]], running: Sequence[SpTask[TaskKey]],
                 compatible: Callable[[TaskKey, TaskKey], bool]) -> SpDecision[TaskKey] | None: ...


def preempt_lowest(waiting: Sequence[SpTask[TaskKey]], running: Sequence[SpTask[TaskKey]],
                   compatible: Callable[[TaskKey, TaskKey], bool]) -> SpDecision[TaskKey] | None:
    """Plain priority preemption (Natjam-like): the best startable waiting task displaces the
    lowest-priority running task it beats, with no rank filter."""
    for w in sorted((w for w in waiting if w.runnable), key=lambda w: (-w.priority, w.key)):
        victims = [r for r in running if w.priority > r.priority and compatible(w.key, r.key)]
        if victims:
            return SpDecision(w.key, min(victims, key=lambda r: (r.priority, r.key)).key)
    return None


def preempt_longest(waiting: Sequence[SpTask[TaskKey]], running: Sequence[SpTask[TaskKey]],
                    compatible: Callable[[TaskKey, TaskKey], bool]) -> SpDecision[TaskKey] | None:
    """Amoeba-like: when the best startable waiting task beats some running task, checkpoint
    the running task with the most remaining work, whatever its priority (our reading)."""
    for w in sorted((w for w in waiting if w.runnable), key=lambda w: (-w.priority, w.key)):
        if any(w.priority > r.priority for r in running):
            victims = [r for r in running if compatible(w.key, r.key)]
            if victims:
                return SpDecision(w.key, max(victims, key=lambda r: (r.remaining, r.key)).key)
    return None


@dataclass
class _Waiting:
    key: TaskKey
    probe: ProbeInfo | None  # None: a suspended task (resumed, not run)
    demand: tuple[float, ...]
    priority: float  # at the instant its node's order was last read
    cls: Hashable | None  # its priority class (always None for a suspended task)


def _rank(w: _Waiting) -> tuple[float, TaskKey]:
    """The order a worker starts its waiting tasks in: priority, then key."""
    return (-w.priority, w.key)


class PreemptiveWorkers:
    """Per-worker queues plus the fill-then-preempt step.

    Priorities hold within an instant (a task's waiting time and attained service are read at it),
    so each worker keeps its waiting tasks in start order for the instant: arrivals are inserted,
    started tasks removed, and a suspension rebuilds it. A round that ends many tasks on one busy
    worker sorts its queue once, not once per task end. A new instant re-ranks the kept order: one
    priority per ``priority_class`` (a large stage's tasks share one), then a sort of an order that
    has mostly not changed, so a queue of thousands costs a few priorities per instant, not one per
    task."""

    def __init__(self, priority: Priority, rule: PreemptionRule, independent: Callable[[TaskKey, TaskKey], bool],
                 estimate: Callable[[TaskKey], float], early_start: bool, max_suspended: int = 0,
                 priority_class: PriorityClass | None = None) -> None:
        self.priority = priority
        self.priority_class = priority_class
        self.rule = rule
        self.independent = independent
        self.estimate = estimate
        self.early_start = early_start
        self.max_suspended = max_suspended   # per worker; 0: no limit
        self.queued: dict[int, dict[TaskKey, ProbeInfo]] = {}
        self._order: dict[int, tuple[float, list[_Waiting]]] = {}  # node -> (instant, its waiting tasks by _rank)
        self._arrived: dict[int, list[TaskKey]] = {}  # queued since the node's order was last read

    def enqueue(self, node: int, probe: ProbeInfo) -> None:
        assert probe.task is not None
        key = (probe.job_id, probe.task)
        self.queued.setdefault(node, {})[key] = probe
        self._arrived.setdefault(node, []).append(key)

    def _startable(self, w: _Waiting, view: ClusterView, ready_only: bool = False) -> bool:
        """Ready, or a queued (never started) task of a policy that may start it early.
        A suspended task is resumed only once ready: restarting it could not progress."""
        return view.is_ready(*w.key) or (self.early_start and not ready_only and w.probe is not None)

    def step(self, node: int, view: ClusterView) -> list[Decision]:
        """Start what fits by priority; then either break a dependency deadlock or consider
        at most one preemption."""
        waiting = self._waiting(node, view)
        free: Sequence[float] = view.free_capacity(node) or ()
        running = view.running(node)
        slots = list(view.free_slot_ids(node))
        out, free, started = self._fill(node, view, waiting, free, slots, ready_only=False)
        if not waiting:
            return out
        # Started early: revisit once settled. Needed on both paths below: a task started early
        # here is stuck too but not in ``running``, so the guard cannot suspend it in this step;
        # without the recheck it can keep a ready task out with nothing left to wake the worker.
        recheck = [SetTimer(view.now, node, "recheck")] if any(not view.is_ready(*k) for k in started) else []
        stuck = [r for r in running if not view.is_ready(r.job_id, r.task)]
        if stuck and any(view.is_ready(*w.key) for w in waiting):
            out += self._unstick(node, view, stuck, waiting, free, slots)
            out += recheck
        else:
            out += recheck
            out += self._preempt(node, view, waiting, free, running)
        if any(isinstance(d, Suspend) for d in out):
            del self._order[node]  # a suspended task waits now: rebuilt at the next step
        return out

    def _fill(self, node: int, view: ClusterView, waiting: list[_Waiting], free: Sequence[float], slots: list[int],
              ready_only: bool) -> tuple[list[Decision], Sequence[float], list[TaskKey]]:
        """Start waiting tasks in priority order while slots last, skipping what does not fit;
        they leave ``waiting``. Returns the decisions, the capacity left and the tasks started."""
        out: list[Decision] = []
        started: list[int] = []
        for i, w in enumerate(waiting):
            if not slots:
                break
            if self._startable(w, view, ready_only) and fits(w.demand, free):
                out.append(self._start(node, slots.pop(0), w))
                free = sub(free, w.demand)
                started.append(i)
        keys = [waiting[i].key for i in started]
        for i in reversed(started):
            del waiting[i]
        return out, free, keys

    def _unstick(self, node: int, view: ClusterView, stuck: Sequence[RunningTask], waiting: list[_Waiting],
                 free: Sequence[float], slots: list[int]) -> list[Decision]:
        """Liveness guard: suspend every running task still waiting for its parents and give
        the room to ready tasks (like Hadoop's reducer preemption)."""
        out: list[Decision] = []
        for r in stuck:
            out.append(Suspend(node, r.slot))
            free = add(free, _demand(view, (r.job_id, r.task)))
            slots.append(r.slot)
        slots.sort()
        started, _, _ = self._fill(node, view, waiting, free, slots, ready_only=True)
        return out + started

    def _waiting(self, node: int, view: ClusterView) -> list[_Waiting]:
        """The node's waiting tasks in start order at ``view.now`` (kept for the instant)."""
        arrived = self._arrived.pop(node, [])
        kept = self._order.get(node)
        if kept is not None and (kept[0] == view.now or self._rerank(kept[1], len(arrived), node, view)):
            self._order[node] = (view.now, kept[1])
            queued = self.queued[node]
            for key in arrived:
                insort(kept[1], self._entry(key, queued[key], node, view), key=_rank)
            return kept[1]
        entries = [self._entry(k, p, node, view) for k, p in self.queued.get(node, {}).items()]
        entries += [self._entry((r.job_id, r.task), None, node, view) for r in view.suspended(node)]
        entries.sort(key=_rank)
        self._order[node] = (view.now, entries)
        return entries

    def _rerank(self, entries: list[_Waiting], arrived: int, node: int, view: ClusterView) -> bool:
        """Carry an earlier instant's order (less ``arrived`` new tasks) to ``view.now``: each
        entry's priority now, read once per priority class, and the order sorted again: what a
        rebuild gives (the same priorities; keys break ties). False, and nothing carried, when the
        entries are no longer the node's waiting tasks (a suspension the workers did not make)."""
        held = {(r.job_id, r.task) for r in view.suspended(node)}
        queued = sum(1 for w in entries if w.probe is not None)
        if queued + arrived != len(self.queued.get(node, {})) or len(entries) - queued != len(held) \
                or any(w.probe is None and w.key not in held for w in entries):
            return False
        shared: dict[Hashable, float] = {}
        ordered = True
        last: _Waiting | None = None
        for w in entries:
            if w.cls is None:
                w.priority = self.priority(w.key, node, view)
            elif (p := shared.get(w.cls)) is not None:
                w.priority = p
            else:
                w.priority = shared[w.cls] = self.priority(w.key, node, view)
            if last is not None and ordered:  # _rank's order, without a tuple per entry (20% of the host's CPU)
                ordered = last.priority > w.priority or (last.priority == w.priority and last.key < w.key)
            last = w
        if not ordered:
            entries.sort(key=_rank)
        return True

    def _entry(self, key: TaskKey, probe: ProbeInfo | None, node: int, view: ClusterView) -> _Waiting:
        cls = self.priority_class(key) if probe is not None and self.priority_class is not None else None
        return _Waiting(key, probe, _demand(view, key), self.priority(key, node, view), cls)

    def _start(self, node: int, slot: int, w: _Waiting) -> Decision:
        if w.probe is None:
            return Resume(node, slot, w.key[0], w.key[1])
        del self.queued[node][w.key]
        return Run(node, slot, w.probe)

    def _preempt(self, node: int, view: ClusterView, waiting: list[_Waiting], free: Sequence[float],
                 running: Sequence[RunningTask]) -> list[Decision]:
        """At most one preemption, while the worker holds fewer than ``max_suspended`` suspended tasks
        (live, each keeps its executor: a node has that many beyond its slots)."""
        if self.max_suspended and len(view.suspended(node)) >= self.max_suspended:
            return []
        slot_of = {(r.job_id, r.task): r.slot for r in running}
        prio = {k: self.priority(k, node, view) for k in slot_of}
        floor = min(prio.values(), default=math.inf)
        if not any(self._startable(w, view) for w in takewhile(lambda w: w.priority > floor, waiting)):
            return []  # no rule preempts without a startable waiting task beating a running one
        run_tasks = [SpTask(k, prio[k], self.estimate(k) - view.attained(node, *k)) for k in sorted(slot_of)]
        # the rule sees the waiting tasks as they queued: queued ones by key, then the suspended ones
        held = {w.key: w for w in waiting if w.probe is None}
        ordered = sorted((w for w in waiting if w.probe is not None), key=lambda w: w.key)
        ordered += [held[k] for r in view.suspended(node) if (k := (r.job_id, r.task)) in held]
        demand = {w.key: w.demand for w in ordered} | {k: _demand(view, k) for k in slot_of}
        startable = {w.key for w in ordered if self._startable(w, view)}

        def compatible(w: TaskKey, r: TaskKey) -> bool:
            return w in startable and self.independent(w, r) and fits(demand[w], add(free, demand[r]))

        wait_tasks = [SpTask(w.key, w.priority, 0.0, w.key in startable) for w in ordered]
        decision = self.rule(wait_tasks, run_tasks, compatible)
        if decision is None:
            return []
        at = next(i for i, w in enumerate(waiting) if w.key == decision.preemptor)
        chosen = waiting.pop(at)
        slot = slot_of[decision.victim]
        out: list[Decision] = [Suspend(node, slot), self._start(node, slot, chosen)]
        if not view.is_ready(*chosen.key):  # it will be stuck: look again once this instant settles
            out.append(SetTimer(view.now, node, "recheck"))
        return out


def _demand(view: ClusterView, key: TaskKey) -> tuple[float, ...]:
    job = view.job(key[0])
    if job.demands is None:
        return tuple(0.0 for _ in view.spec.resources)
    return job.demands[key[1]]
