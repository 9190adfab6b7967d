"""Falcon's Selective Preemption (paper §III-C, Theorem 4.1, Eqs. 4 and 5).

A waiting task may take a running task's processor only if (C1) its priority is higher,
(C2) the two tasks are independent, and (C3) it beats at least a fraction δ of the k
waiting tasks. Among the eligible tasks one is drawn with weight equal to its normalised
reverse rank. Limiting preemption to the top ⌊(1−δ)k⌋ keeps the context-switch count low.
"""
from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

DEFAULT_DELTA = 0.35


class Reading(str, Enum):
    """How normalised priorities (which need not sum to 1) become one pick; our reading."""

    ROULETTE = "roulette"      # draw from the eligible set, weight ∝ revrank / k
    SEQUENTIAL = "sequential"  # scan by priority, accept each with probability revrank / k


@dataclass(frozen=True)
class SpTask(Generic[K]):
    """A task as Selective Preemption sees it on one worker."""

    key: K
    priority: float
    remaining: float = 0.0
    runnable: bool = True  # all DAG parents finished


@dataclass(frozen=True)
class SpDecision(Generic[K]):
    """Preempt ``victim`` (running) in favour of ``preemptor`` (waiting)."""

    preemptor: K
    victim: K


def indicator(p_i: float, p_j: float) -> int:
    """Eq. (4): 1 when P_i > P_j, else 0 (ties do not count)."""
    return 1 if p_i > p_j else 0


def beat_ratio(p: float, waiting: Sequence[float]) -> float:
    """Left side of Eq. (5): the share of the k waiting tasks that ``p`` strictly beats."""
    return sum(indicator(p, q) for q in waiting) / len(waiting) if waiting else 0.0


def satisfies_c3(p: float, waiting: Sequence[float], delta: float = DEFAULT_DELTA) -> bool:
    """Eq. (5) / condition C3: rank within the top ⌊(1−δ)k⌋ of the waiting queue."""
    return bool(waiting) and beat_ratio(p, waiting) >= delta


def reverse_rank(p: float, waiting: Sequence[float]) -> int:
    """1 + the number of waiting tasks with strictly lower priority (top task: k)."""
    return 1 + sum(indicator(p, q) for q in waiting)


def choose(eligible: Sequence[SpTask[K]], waiting: Sequence[float], rng: random.Random,
           reading: Reading = Reading.ROULETTE) -> SpTask[K]:
    """Draw one eligible task with weight revrank / k (paper §III-C)."""
    k = len(waiting)
    ranked = sorted(waiting)  # reverse_rank by bisection: one sort, not a scan per eligible task
    weights = [(1 + bisect.bisect_left(ranked, t.priority)) / k for t in eligible]
    if reading is Reading.ROULETTE:
        return rng.choices(list(eligible), weights=weights)[0]
    ordered = sorted(zip(eligible, weights), key=lambda tw: -tw[0].priority)
    for task, w in ordered:
        if rng.random() < w:
            return task
    return ordered[0][0]


def selective_preemption(waiting: Sequence[SpTask[K]], running: Sequence[SpTask[K]],
                         compatible: Callable[[K, K], bool], rng: random.Random,
                         delta: float = DEFAULT_DELTA,
                         reading: Reading = Reading.ROULETTE) -> SpDecision[K] | None:
    """One SP decision on a worker, or None. ``compatible(w, r)`` is C2 (w independent of
    r) plus whatever else the caller requires, e.g. that w fits once r leaves.

    The victim is the lowest-priority running task that the chosen task beats and is
    independent of; ties go to the largest remaining time (least progress lost), our reading.
    """
    prios = [t.priority for t in waiting]
    ranked = sorted(prios)
    k = len(ranked)
    floor = min((r.priority for r in running), default=float("inf"))

    def victims(t: SpTask[K]) -> list[SpTask[K]]:
        return [r for r in running if t.priority > r.priority and compatible(t.key, r.key)]

    # C3 via the sorted queue: the number of tasks t beats is its insertion point (Eq. 5).
    eligible = [t for t in waiting
                if t.runnable and t.priority > floor
                and bisect.bisect_left(ranked, t.priority) / k >= delta and victims(t)]
    if not eligible:
        return None
    chosen = choose(eligible, prios, rng, reading)
    victim = min(victims(chosen), key=lambda r: (r.priority, -r.remaining))
    return SpDecision(chosen.key, victim.key)
