"""Kairos' node scheduler (thesis Algorithm 2): LAS with preemption, quantum timers and the
starvation guard, for every node (`policies.kairos.kairos`)."""
from __future__ import annotations

import math
import operator
from typing import cast

from policies.framework.api import (
    ClusterView, Decision, ProbeArrival, ProbeInfo, QueuedTaskEnded, Resume, Run, RunningTask, SetTimer, SlotFreed,
    Suspend,
)
from policies.kairos.config import Age, KairosConfig, KairosHeartbeat, Starvation

# A quantum timer's key: ("quantum", slot, epoch); a later arm of the slot bumps the epoch.
QuantumKey = tuple[str, int, int]

_attained = operator.attrgetter("attained")


def _key(task: RunningTask | ProbeInfo) -> tuple[int, int]:
    """A task's (job, task) identity, running, suspended or never run (Kairos binds every task)."""
    return task.job_id, cast(int, task.task)


def _age(task: RunningTask, now: float) -> float:
    """Attained service, counting the current run segment of a running task."""
    return task.attained + (now - task.started) if task.slot >= 0 else task.attained


class NodeScheduler:
    """Algorithm 2 for every node: LAS with preemption, quantum timers, starvation guard."""

    def __init__(self, config: KairosConfig, n_nodes: int) -> None:
        self.config = config
        self.waiting: list[list[ProbeInfo]] = [[] for _ in range(n_nodes)]   # arrived, never run
        self.received = [0] * n_nodes
        self.preemptions: dict[tuple[int, int], int] = {}
        self.protected_until: dict[tuple[int, int], float] = {}
        # slot -> (epoch, at, the last quantum end it fired at or was set at)
        self.armed: list[dict[int, tuple[int, float, float]]] = [{} for _ in range(n_nodes)]
        self.epoch = 0
        self.heartbeat_armed = [False] * n_nodes
        self.by_job = config.age is Age.JOB
        self.waited = config.starvation is Starvation.WAITED
        self.starve_after = config.starvation_preemptions * config.w     # waited: idle this long
        self.idle_since: dict[tuple[int, int], float] = {}   # waited: when each idle task last ran

    # -- events --------------------------------------------------------------------------
    def arrive(self, ev: ProbeArrival, view: ClusterView) -> list[Decision]:
        node, now = ev.node, ev.time
        self.received[node] += 1
        slot = free = view.free_slot(node)
        if free >= 0:
            out: list[Decision] = [Run(node, slot, ev.probe)]
        else:
            victim = self._oldest_preemptible(node, view, now)
            if victim is None or (self.by_job and not self._younger(node, ev.probe, victim, view, now)):
                self.waiting[node].append(ev.probe)
                if self.waited:
                    self.idle_since[_key(ev.probe)] = now
                out = []
            else:
                self._preempted(victim, now)
                slot = victim.slot
                out = [Suspend(node, slot), Run(node, slot, ev.probe)]
        idle_after = self._idle_after(node, view, out)
        return out + self._arm_quanta(node, view, now, idle_after, slot if out else -1, became_idle=free < 0)

    def slot_freed(self, ev: SlotFreed, view: ClusterView) -> list[Decision]:
        node, now = ev.node, ev.time
        if ev.job_id >= 0:                     # a task finished: its quantum timer is stale
            self._forget((ev.job_id, ev.task))
            self.armed[node].pop(ev.slot, None)
        slot = view.free_slot(node)
        if slot < 0:
            return []
        chosen = self._next_idle(node, view, now)
        if chosen is None:
            return []
        out = self._start(node, slot, chosen, now)
        resumed = 1 if isinstance(chosen, RunningTask) else 0
        idle_left = len(self.waiting[node]) + len(view.suspended(node)) - resumed
        return out + self._arm_quanta(node, view, now, idle_left > 0, slot)

    def queued_ended(self, ev: QueuedTaskEnded) -> None:
        """A task idle on ``ev.node`` (never run, or suspended) ended off its slot: it is no longer
        one of the node's tasks."""
        if ev.probe is not None:
            self.waiting[ev.node].remove(ev.probe)
        self._forget((ev.job_id, ev.task))

    def quantum(self, node: int, key: QuantumKey, now: float, view: ClusterView) -> list[Decision]:
        _, slot, epoch = key
        armed = self.armed[node].get(slot)
        if armed is None or armed[0] != epoch:
            return []                                            # stale: the slot changed hands
        del self.armed[node][slot]
        current = None
        for t in view.running(node):
            if t.slot == slot:
                current = t
                break
        chosen = self._next_idle(node, view, now)
        if current is None or chosen is None:
            return []
        if self._may_swap(node, current, chosen, view, now):
            self._preempted(current, now)
            out = [Suspend(node, slot), *self._start(node, slot, chosen, now)]
            return out + [self._arm(node, slot, now + self.config.w)]
        if self.by_job:     # ages move while tasks are idle too: no end can be skipped
            return [self._arm(node, slot, now + self.config.w)]
        return [self._arm(node, slot, self._next_chance(current, chosen, now, self._starves_at(node, view)), now)]

    def heartbeat(self, node: int, view: ClusterView, now: float, extra_new: int = 0) -> KairosHeartbeat:
        ages = [t.attained + (now - t.started) for t in view.running(node)]   # _age of running tasks
        ages += [t.attained for t in view.suspended(node)]
        fresh = len(self.waiting[node]) + extra_new
        if fresh:
            ages += [0.0] * fresh
        n = len(ages)
        if not n:
            return KairosHeartbeat(0, 0.0, 0.0, self.received[node])
        total = sum(ages)
        mean = total / n
        variance = sum([(a - mean) ** 2 for a in ages]) / n
        return KairosHeartbeat(n, variance, total, self.received[node])

    # -- LAS helpers ---------------------------------------------------------------------
    def _protected(self, task: RunningTask, now: float) -> bool:
        return self.protected_until.get((task.job_id, task.task), -1.0) > now

    def _oldest_preemptible(self, node: int, view: ClusterView, now: float) -> RunningTask | None:
        candidates = [t for t in view.running(node) if not self._protected(t, now)]
        if self.by_job:
            return max(candidates, key=lambda t: (self._job_age(node, t.job_id, view, now), -t.slot), default=None)
        return max(candidates, key=lambda t: (_age(t, now), -t.slot), default=None)

    def _next_idle(self, node: int, view: ClusterView, now: float) -> RunningTask | ProbeInfo | None:
        """The idle task a slot takes next: the longest-starved one (``waited``), else the youngest."""
        if self.waited:
            task, since = self._longest_idle(node, view)
            if task is not None and now - since >= self.starve_after:
                return task
        return self._youngest_idle(node, view, now)

    def _longest_idle(self, node: int, view: ClusterView) -> tuple[RunningTask | ProbeInfo | None, float]:
        """``waited``: the node's idle task that last ran longest ago, and since when (None, inf if none)."""
        since = self.idle_since
        task: RunningTask | ProbeInfo | None = None
        first = math.inf
        idle: list[RunningTask | ProbeInfo] = [*self.waiting[node], *view.suspended(node)]
        for t in idle:
            at = since.get(_key(t), math.inf)
            if at < first:
                task, first = t, at
        return task, first

    def _starving(self, task: RunningTask | ProbeInfo, now: float) -> bool:
        """``waited``: whether idle ``task`` has not run for N quanta in a row."""
        return self.waited and now - self.idle_since.get(_key(task), now) >= self.starve_after

    def _starves_at(self, node: int, view: ClusterView) -> float:
        """When the node's longest-idle task starts starving (``waited``), else infinity."""
        return self._longest_idle(node, view)[1] + self.starve_after if self.waited else math.inf

    def _youngest_idle(self, node: int, view: ClusterView, now: float) -> RunningTask | ProbeInfo | None:
        """Least attained idle task: a never-run task (age 0, FIFO) or a suspended one (by job: the
        idle task whose job has the least attained service here, never-run ones first on ties)."""
        if self.by_job:
            idle: list[RunningTask | ProbeInfo] = [*self.waiting[node], *view.suspended(node)]
            return min(idle, key=lambda t: self._job_age(node, t.job_id, view, now), default=None)
        suspended = min(view.suspended(node), key=_attained, default=None)
        if self.waiting[node] and (suspended is None or suspended.attained > 0):
            return self.waiting[node][0]
        return suspended

    def _may_swap(self, node: int, current: RunningTask, youngest: RunningTask | ProbeInfo,
                  view: ClusterView, now: float) -> bool:
        if self._protected(current, now):
            return False
        if self._starving(youngest, now):
            return not self.by_job or view.job(youngest.job_id).unit_id != view.job(current.job_id).unit_id
        if self.by_job:
            return self._younger(node, youngest, current, view, now)
        return self._swap_age(youngest) <= _age(current, now)

    def _younger(self, node: int, idle: RunningTask | ProbeInfo, running: RunningTask, view: ClusterView,
                 now: float) -> bool:
        """By job: whether ``idle``'s job, another than ``running``'s, has attained at most
        ``running``'s job's service on the node less the swap margin."""
        if view.job(idle.job_id).unit_id == view.job(running.job_id).unit_id:
            return False
        margin = self.config.swap_margin * self.config.w
        return self._job_age(node, idle.job_id, view, now) + margin <= self._job_age(node, running.job_id, view, now)

    @staticmethod
    def _job_age(node: int, job_id: int, view: ClusterView, now: float) -> float:
        """The attained service of ``job_id``'s user job on ``node``: its tasks running or suspended there."""
        unit = view.job(job_id).unit_id
        total = 0.0
        for t in view.running(node):
            if view.job(t.job_id).unit_id == unit:
                total += t.attained + (now - t.started)
        for t in view.suspended(node):
            if view.job(t.job_id).unit_id == unit:
                total += t.attained
        return total

    def _swap_age(self, youngest: RunningTask | ProbeInfo) -> float:
        """The age a running task must reach to be swapped for the idle task ``youngest``."""
        idle_age = youngest.attained if isinstance(youngest, RunningTask) else 0.0
        return idle_age + self.config.swap_margin * self.config.w

    def _next_chance(self, current: RunningTask, youngest: RunningTask | ProbeInfo, now: float,
                     starves_at: float) -> float:
        """The first quantum end after ``now`` at which ``current`` may be swapped for ``youngest``
        or for a task starving from ``starves_at`` (the quantum ends before it would find the swap
        test failing, if no younger task arrives)."""
        w = self.config.w
        need = self._swap_age(youngest)
        until = self.protected_until.get((current.job_id, current.task), -1.0)
        attained, started = current.attained, current.started
        at = now + w        # stepped as a timer re-armed every W would be, so the swaps are the same
        while until > at or (need > attained + (at - started) and at < starves_at):   # not _may_swap
            at += w
        return at

    def _start(self, node: int, slot: int, task: RunningTask | ProbeInfo, now: float) -> list[Decision]:
        key = _key(task)
        if self.waited:
            if self._starving(task, now):
                self._protect(key, now)
            self.idle_since.pop(key, None)
        elif self.preemptions.get(key, 0) > self.config.starvation_preemptions:
            self._protect(key, now)
            self.preemptions[key] = 0
        if isinstance(task, ProbeInfo):
            self.waiting[node].remove(task)
            return [Run(node, slot, task)]
        return [Resume(node, slot, task.job_id, task.task)]

    def _protect(self, key: tuple[int, int], now: float) -> None:
        self.protected_until[key] = now + self.config.starvation_quanta * self.config.w

    def _preempted(self, task: RunningTask, now: float) -> None:
        """``task`` is suspended now: count it (``preempted``) or note when it went idle (``waited``)."""
        key = (task.job_id, task.task)
        if self.waited:
            self.idle_since[key] = now
        else:
            self.preemptions[key] = self.preemptions.get(key, 0) + 1

    def _forget(self, key: tuple[int, int]) -> None:
        self.preemptions.pop(key, None)
        self.protected_until.pop(key, None)
        self.idle_since.pop(key, None)

    # -- timers --------------------------------------------------------------------------
    def _idle_after(self, node: int, view: ClusterView, out: list[Decision]) -> bool:
        """Whether the node holds an idle task once ``out`` (from an arrival) is applied."""
        preempted = any(isinstance(d, Suspend) for d in out)
        return bool(self.waiting[node] or view.suspended(node) or preempted)

    def _arm_quanta(self, node: int, view: ClusterView, now: float, idle_after: bool,
                    started_slot: int, became_idle: bool = False) -> list[Decision]:
        """While idle tasks exist, every running slot needs a timer at its next quantum end.

        `started_slot` (or -1) just got a task starting now, which `view` does not show yet.
        `became_idle`: a task joined the idle ones, so timers skipped ahead are pulled back."""
        if not idle_after:
            return []
        w = self.config.w
        armed = self.armed[node]
        out: list[Decision] = []
        if started_slot >= 0:
            out.append(self._arm(node, started_slot, now + w))
        for task in view.running(node):
            if task.slot == started_slot:
                continue
            timer = armed.get(task.slot)
            if timer is None:
                periods = int((now - task.started) // w) + 1
                out.append(self._arm(node, task.slot, task.started + periods * w))
            elif became_idle:
                due = timer[2] + w          # the quantum ends it skipped, from the last one it saw
                while due < now:           # (a quantum end at now counts: timers fire last)
                    due += w
                if due < timer[1]:
                    out.append(self._arm(node, task.slot, due, timer[2]))
        return out

    def _arm(self, node: int, slot: int, at: float, seen: float | None = None) -> SetTimer:
        """A quantum timer at ``at``; ``seen`` is the quantum end that skipped to it, if any."""
        self.epoch += 1
        self.armed[node][slot] = (self.epoch, at, at if seen is None else seen)
        key: QuantumKey = ("quantum", slot, self.epoch)
        return SetTimer(at, node, key)
