"""Task-precedence graphs: ordering, cycle detection and independence.

A DAG is given as ``parents``: task id -> ids of the tasks it depends on. Pure functions
over that mapping, shared by the workload parser (which rejects cycles) and the
dependency-aware policies (which rank and pair tasks by it).
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


class CycleError(ValueError):
    """The precedence graph has a cycle; ``task`` is one task on it."""

    def __init__(self, task: Hashable) -> None:
        super().__init__(f"dependency cycle through task {task!r}")
        self.task = task


class UnknownParentError(ValueError):
    """A task names a parent that is not in the graph."""

    def __init__(self, task: Hashable, parent: Hashable) -> None:
        super().__init__(f"task {task!r} depends on unknown task {parent!r}")
        self.task = task
        self.parent = parent


def children_of(parents: Mapping[K, Iterable[K]]) -> dict[K, tuple[K, ...]]:
    """Invert ``parents`` into ``children`` (every task gets an entry, in input order)."""
    children: dict[K, list[K]] = {t: [] for t in parents}
    for task, ps in parents.items():
        for p in ps:
            if p not in children:
                raise UnknownParentError(task, p)
            children[p].append(task)
    return {t: tuple(cs) for t, cs in children.items()}


def topological_order(parents: Mapping[K, Iterable[K]]) -> list[K]:
    """Parents before children; ties in input order. Raises CycleError or UnknownParentError."""
    children = children_of(parents)
    pending = {t: len(tuple(ps)) for t, ps in parents.items()}
    ready = [t for t, n in pending.items() if n == 0]
    order: list[K] = []
    while ready:
        task = ready.pop(0)
        order.append(task)
        for c in children[task]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
    if len(order) < len(pending):
        raise CycleError(next(t for t, n in pending.items() if n > 0))
    return order


def ancestors(parents: Mapping[K, Iterable[K]]) -> dict[K, frozenset[K]]:
    """Every task's transitive parents."""
    out: dict[K, frozenset[K]] = {}
    for task in topological_order(parents):
        acc: set[K] = set()
        for p in parents[task]:
            acc.add(p)
            acc |= out[p]
        out[task] = frozenset(acc)
    return out


def independent(a: K, b: K, ancestry: Mapping[K, frozenset[K]]) -> bool:
    """Neither task is an ancestor of the other (tasks of one job only)."""
    return a not in ancestry[b] and b not in ancestry[a]
