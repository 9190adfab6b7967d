"""Falcon's dependency-based task priority (paper Eqs. 2 and 3, §III-C).

A leaf task's priority mixes how soon it finishes and how long it has waited; any other
task's priority is the sum of its children's, so tasks that unblock much downstream work
rank high. Priorities depend on the evaluation time, so they are recomputed at every
decision instant. Stages that wait for a whole job and arrive later as jobs of their own (live:
the later stages of a Spark job, ``Job.successors``) are children of every sink task of the job,
with stage barriers: each task of a successor is a child of each task it waits for.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

from workloads.dag import topological_order
from workloads.model import Successor

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


def successor_weight(successors: Sequence[Successor], leaf: Callable[[Successor], float]) -> float:
    """Eq. (2) for a sink task of a job whose ``successors`` wait for it: the sum, over every task
    of each successor waiting for the job itself, of that task's priority; a successor's task
    with successors after it gets their sum likewise, any other ``leaf(successor)`` (Eq. 3)."""
    below = [0.0] * len(successors)
    has_children = [False] * len(successors)
    total = 0.0
    for k in reversed(range(len(successors))):  # after-lists point only backwards
        succ = successors[k]
        prio = below[k] if has_children[k] else leaf(succ)
        for a in succ.after:
            if a < 0:
                total += succ.tasks * prio
            else:
                below[a] += succ.tasks * prio
                has_children[a] = True
    return total
