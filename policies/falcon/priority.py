"""Falcon's dependency-based task priority (paper Eqs. 2 and 3, §III-C).

A leaf task's priority mixes how soon it finishes and how long it has waited; any other
task's priority is the sum of its children's, so tasks that unblock much downstream work
rank high. Priorities depend on the evaluation time, so they are recomputed at every
decision instant.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

from workloads.dag import topological_order

K = TypeVar("K", bound=Hashable)

# Guard for 1/t_rem as a task nears completion (1 ms; times are in seconds).
MIN_REMAINING = 1e-3


def leaf_priority(remaining: float, waited: float, w1: float = 0.5, w2: float = 0.5) -> float:
    """Eq. (3): ω1 / t_rem + ω2 · t_wait, with ω1 + ω2 = 1 (times in seconds)."""
    if abs(w1 + w2 - 1.0) > 1e-9:
        raise ValueError(f"Eq. (3) needs w1 + w2 = 1, got {w1} + {w2}")
    return w1 / max(remaining, MIN_REMAINING) + w2 * waited


def dag_priorities(children: Mapping[K, Sequence[K]], leaf: Callable[[K], float],
                   order: Sequence[K] | None = None) -> dict[K, float]:
    """Eq. (2) over one job's DAG: a task with children gets the sum of its children's
    priorities; a leaf gets ``leaf(task)`` (Eq. 3). ``order`` is a topological order of the
    tasks (parents first); callers that evaluate one DAG often pass it precomputed."""
    if order is None:
        parents: dict[K, list[K]] = {t: [] for t in children}
        for task, cs in children.items():
            for c in cs:
                parents[c].append(task)
        order = topological_order(parents)
    prio: dict[K, float] = {}
    for task in reversed(order):
        cs = children[task]
        prio[task] = sum(prio[c] for c in cs) if cs else leaf(task)
    return prio
