"""Dominance between the tasks of one stage, for Algorithm 1 run task by task (the ablation).

A task dominates a later one of its stage when both use the same resources with the same hard
(memory) increments and its time-like increments are no smaller: it then scores at least as much
on every worker, is excluded exactly where the other is, and wins ties (it is earlier). So only a
stage's undominated tasks (its front) can be a batch's next choice from that stage. Dominance
depends on the increments alone, never on headrooms, so a stage's front changes only as its tasks
are placed or join it: :class:`Fronts` keeps each between batches instead of rescanning the stage.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from policies.common.vectors import ceiling

if TYPE_CHECKING:
    from policies.ursa.placement import Stage

T = TypeVar("T", bound=Hashable)
Vector = tuple[float, ...]


def dominates(a: Vector, b: Vector, hard: tuple[bool, ...]) -> bool:
    """Whether a task with increments ``a`` scores at least what one with ``b`` does on every
    worker, excluded exactly where it is: the same resources used and hard increments, and
    time-like increments no smaller."""
    for r, x in enumerate(a):
        y = b[r]
        if (x != y) if hard[r] else (x < y or (x > 0) != (y > 0)):
            return False
    return True


class Front(Generic[T]):
    """The unplaced tasks of one stage and which of them no earlier one dominates (``members``,
    in input order).

    Every other task is filed under one earlier member that dominates it (the latest, as a scan
    of the members from the back finds it first). Dominance is transitive, so placing a member
    can free only the tasks filed under it: those are filed again, not the whole stage."""

    def __init__(self, tasks: tuple[T, ...], increment: Callable[[T], Vector], hard: tuple[bool, ...]) -> None:
        self._tasks: tuple[T, ...] | None = tasks
        self.members: list[T] = []
        # the members' ranks and increments, in the same order: a filing bisects and scans them
        # without a lookup by task (a task key's hash is computed at every lookup)
        self._ranks: list[int] = []
        self._member_incs: list[Vector] = []
        self._hard = hard
        self._incs = {t: increment(t) for t in tasks}
        self._rank = {t: r for r, t in enumerate(tasks)}
        # the unplaced tasks and their ranks, in input order: a placement deletes one of each by a
        # bisection, and the tuple is built from them when next looked at
        self._left, self._left_ranks = list(tasks), list(range(len(tasks)))
        self._under: dict[T, list[T]] = {}
        for t in tasks:
            self._file(t)
        self._peak: Vector | None = None

    def peak(self) -> Vector:
        """The largest increment per resource over the members (some must be): a task's bound
        is at most the bound on these (:func:`policies.ursa.placement._ceiling`). Kept until
        the members change."""
        if self._peak is None:
            self._peak = ceiling(self._member_incs, len(self._member_incs[0]))  # increments are never negative
        return self._peak

    @property
    def tasks(self) -> tuple[T, ...]:
        """The unplaced tasks, in input order: a placement costs no copy of the stage, only the
        next look does (a list's copy, which iterating a dict that lost keys would not be)."""
        if self._tasks is None:
            self._tasks = tuple(self._left)
        return self._tasks

    def matches(self, tasks: tuple[T, ...]) -> bool:
        """Whether ``tasks`` are the unplaced tasks, in input order. The front then keeps that
        tuple: a caller that passes the same one again (its stage unchanged) costs no comparison."""
        if tasks is self._tasks:
            return True
        if self.tasks != tasks:
            return False
        self._tasks = tasks
        return True

    def increment(self, task: T) -> Vector:
        """An unplaced task's increments, kept (the planner reads them here: the caller's
        function may build them, or its key, anew)."""
        return self._incs[task]

    def rank(self, task: T) -> int:
        """The task's place in the input order, kept as earlier tasks are placed."""
        return self._rank[task]

    def place(self, task: T) -> list[T]:
        """``task``, a member, was placed: returns the tasks that become members, in input order."""
        rank = self._rank[task]
        at = bisect_left(self._ranks, rank)
        del self.members[at], self._ranks[at], self._member_incs[at]
        at = bisect_left(self._left_ranks, rank)
        del self._left[at], self._left_ranks[at]
        self._tasks = self._peak = None
        del self._incs[task], self._rank[task]
        return [t for t in sorted(self._under.pop(task, ()), key=self._rank.__getitem__) if self._file(t)]

    def _file(self, task: T) -> bool:
        """File ``task`` under the latest earlier member that dominates it, else make it a member
        (True). Members earlier than ``task`` are final when it is filed: tasks go in input order."""
        inc, rank = self._incs[task], self._rank[task]
        at = bisect_left(self._ranks, rank)
        for k in range(at - 1, -1, -1):
            if dominates(self._member_incs[k], inc, self._hard):
                self._under.setdefault(self.members[k], []).append(task)
                return False
        self.members.insert(at, task)
        self._ranks.insert(at, rank)
        self._member_incs.insert(at, inc)
        return True


class Fronts(Generic[T]):
    """The fronts of the stages a caller places batch after batch, by stage key. A front is kept
    while its stage's unplaced tasks are the ones it was left with, and built afresh otherwise
    (tasks became ready, or a placement was not carried out); increments must not change."""

    def __init__(self) -> None:
        self._by_stage: dict[Hashable, Front[T]] = {}

    def of(self, stages: Sequence[Stage[T]], increment: Callable[[T], Vector], hard: tuple[bool, ...]
           ) -> list[Front[T]]:
        """The front of each of ``stages``; the fronts of stages no longer given are forgotten."""
        old, self._by_stage = self._by_stage, {}
        out: list[Front[T]] = []
        for stage in stages:
            front = old.get(stage.key)
            if front is None or not front.matches(stage.tasks):
                front = Front(stage.tasks, increment, hard)
            self._by_stage[stage.key] = front
            out.append(front)
        return out
