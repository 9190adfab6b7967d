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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from policies.framework.api import ClusterView, Decision, ProbeInfo, Resume, Run, RunningTask, SetTimer, Suspend
from policies.common.vectors import add, fits, sub
from policies.falcon.preemption import SpDecision, SpTask

TaskKey = tuple[int, int]
Priority = Callable[[TaskKey, int, ClusterView], float]


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


@dataclass(frozen=True)
class _Waiting:
    key: TaskKey
    probe: ProbeInfo | None  # None: a suspended task (resumed, not run)
    demand: tuple[float, ...]
    ready: bool
    priority: float


class PreemptiveWorkers:
    """Per-worker queues plus the fill-then-preempt step."""

    def __init__(self, priority: Priority, rule: PreemptionRule, independent: Callable[[TaskKey, TaskKey], bool],
                 estimate: Callable[[TaskKey], float], early_start: bool, max_suspended: int = 0) -> None:
        self.priority = priority
        self.rule = rule
        self.independent = independent
        self.estimate = estimate
        self.early_start = early_start
        self.max_suspended = max_suspended   # per worker; 0: no limit
        self.queued: dict[int, dict[TaskKey, ProbeInfo]] = {}
        # Per node, while valid: (instant, the highest priority among its queued tasks); queued
        # since then. Valid while the instant lasts and the node's steps decide nothing.
        self._top: dict[int, tuple[float, float]] = {}
        self._arrived: dict[int, list[TaskKey]] = {}

    def enqueue(self, node: int, probe: ProbeInfo) -> None:
        assert probe.task is not None
        key = (probe.job_id, probe.task)
        self.queued.setdefault(node, {})[key] = probe
        self._arrived.setdefault(node, []).append(key)

    def _startable(self, w: _Waiting, ready_only: bool = False) -> bool:
        """Ready, or a queued (never started) task of a policy that may start it early.
        A suspended task is resumed only once ready: restarting it could not progress."""
        return w.ready or (self.early_start and not ready_only and w.probe is not None)

    def step(self, node: int, view: ClusterView) -> list[Decision]:
        """Start what fits by priority; then either break a dependency deadlock or consider
        at most one preemption."""
        if self._idle(node, view):
            return []
        out = self._full_step(node, view)
        if out:
            self._top.pop(node, None)
        return out

    def _idle(self, node: int, view: ClusterView) -> bool:
        """Whether the full step would decide nothing, known without looking at every queued task:
        no free slot, no running task stuck, and no queued or suspended task beating the lowest
        running one (every rule preempts only for a startable waiting task that beats a running
        one). Priorities hold within an instant, so a node's highest queued one is kept for the
        instant and raised by arrivals: a burst of arrivals on a busy node costs one task each,
        not one queue each. The priorities asked for are those the full step would ask for."""
        arrived = self._arrived.pop(node, [])
        top = self._top.get(node)
        if top is None or top[0] != view.now or view.free_slot_ids(node):
            return False
        best = max([top[1]] + [self.priority(k, node, view) for k in arrived])
        self._top[node] = (view.now, best)
        suspended = view.suspended(node)
        if not suspended and not self.queued.get(node):
            return True
        running = view.running(node)
        if not running or any(not view.is_ready(r.job_id, r.task) for r in running):
            return False
        best = max([best] + [self.priority((r.job_id, r.task), node, view) for r in suspended])
        if self.max_suspended and len(suspended) >= self.max_suspended:
            return True
        return best <= min(self.priority((r.job_id, r.task), node, view) for r in running)

    def _full_step(self, node: int, view: ClusterView) -> list[Decision]:
        waiting = self._waiting(node, view)
        self._top[node] = (view.now, max((w.priority for w in waiting if w.probe is not None), default=-math.inf))
        free: Sequence[float] = view.free_capacity(node) or ()
        running = view.running(node)
        slots = list(view.free_slot_ids(node))
        before = {w.key for w in waiting}
        out, free = self._fill(node, waiting, free, slots, ready_only=False)
        if not waiting:
            return out
        # Started early: revisit once settled. Needed on both paths below: a task started early
        # here is stuck too but not in ``running``, so the guard cannot suspend it in this step;
        # without the recheck it can keep a ready task out with nothing left to wake the worker.
        recheck = [SetTimer(view.now, node, "recheck")] if any(
            not view.is_ready(*k) for k in before - {w.key for w in waiting}) else []
        stuck = [r for r in running if not view.is_ready(r.job_id, r.task)]
        if stuck and any(w.ready for w in waiting):
            return out + self._unstick(node, view, stuck, waiting, free, slots) + recheck
        return out + recheck + self._preempt(node, view, waiting, free, running)

    def _fill(self, node: int, waiting: list[_Waiting], free: Sequence[float], slots: list[int],
              ready_only: bool) -> tuple[list[Decision], Sequence[float]]:
        """Start waiting tasks in priority order while slots last, skipping what does not fit."""
        out: list[Decision] = []
        if not slots:  # the common case under load: nothing to sort
            return out, free
        for w in sorted(waiting, key=lambda w: (-w.priority, w.key)):
            if not slots:
                break
            if self._startable(w, ready_only) and fits(w.demand, free):
                out.append(self._start(node, slots.pop(0), w))
                free = sub(free, w.demand)
                waiting.remove(w)
        return out, free

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
        started, _ = self._fill(node, waiting, free, slots, ready_only=True)
        return out + started

    def _waiting(self, node: int, view: ClusterView) -> list[_Waiting]:
        entries: list[tuple[TaskKey, ProbeInfo | None]] = sorted(self.queued.get(node, {}).items())
        entries += [((r.job_id, r.task), None) for r in view.suspended(node)]
        return [_Waiting(k, p, _demand(view, k), view.is_ready(*k), self.priority(k, node, view))
                for k, p in entries]

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
        run_tasks = [SpTask(k, self.priority(k, node, view), self.estimate(k) - view.attained(node, *k))
                     for k in sorted(slot_of)]
        floor = min((r.priority for r in run_tasks), default=math.inf)
        if not any(w.priority > floor and self._startable(w) for w in waiting):
            return []  # no rule preempts without a startable waiting task beating a running one
        demand = {w.key: w.demand for w in waiting} | {k: _demand(view, k) for k in slot_of}
        startable = {w.key for w in waiting if self._startable(w)}

        def compatible(w: TaskKey, r: TaskKey) -> bool:
            return w in startable and self.independent(w, r) and fits(demand[w], add(free, demand[r]))

        wait_tasks = [SpTask(w.key, w.priority, 0.0, w.key in startable) for w in waiting]
        decision = self.rule(wait_tasks, run_tasks, compatible)
        if decision is None:
            return []
        chosen = next(w for w in waiting if w.key == decision.preemptor)
        slot = slot_of[decision.victim]
        out: list[Decision] = [Suspend(node, slot), self._start(node, slot, chosen)]
        if not chosen.ready:  # it will be stuck: look again once this instant settles
            out.append(SetTimer(view.now, node, "recheck"))
        return out


def _demand(view: ClusterView, key: TaskKey) -> tuple[float, ...]:
    job = view.job(key[0])
    if job.demands is None:
        return tuple(0.0 for _ in view.spec.resources)
    return job.demands[key[1]]
