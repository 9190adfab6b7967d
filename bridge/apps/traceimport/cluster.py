"""The cluster an imported history ran on, as the simulator's nodes and slots.

Spark runs a task on `spark.task.cpus` of an executor's cores, and the simulator's live twin
(`bridge.drivers.spark.engine`) takes each executor as a node of as many slots; so a trace's
cluster is the executors alive when the most slots were, across every application read (they
shared one cluster). Executors of different sizes at that moment make no uniform shape: none is
recorded then, and the import says why.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Executor:
    """One executor of an application: when it came and went (ms since the epoch; ``removed_ms``
    is infinite when the log ends first) and how many tasks it ran at once."""

    name: str  # application and executor id, for messages
    added_ms: float
    removed_ms: float
    slots: int


@dataclass(frozen=True)
class Shape:
    """The recorded cluster (``nodes`` x ``slots``), or None with ``why`` not."""

    nodes: int | None
    slots: int | None
    why: str


def at_peak(executors: Sequence[Executor]) -> list[Executor]:
    """The executors alive when the most slots were (the first such moment; an executor removed at
    the moment another comes is gone by then)."""
    changes = sorted([(e.added_ms, 1, i) for i, e in enumerate(executors)]
                     + [(e.removed_ms, 0, i) for i, e in enumerate(executors) if not math.isinf(e.removed_ms)])
    alive: set[int] = set()
    slots = most = 0
    peak: list[int] = []
    for _, added, i in changes:
        if added:
            alive.add(i)
            slots += executors[i].slots
        elif i in alive:
            alive.remove(i)
            slots -= executors[i].slots
        if slots > most:
            most, peak = slots, sorted(alive)
    return [executors[i] for i in peak]


def shape_of(executors: Sequence[Executor]) -> Shape:
    """The uniform cluster of the executors at the peak, or why there is none."""
    peak = at_peak(executors)
    if not peak:
        return Shape(None, None, "no executor in the logs with cores for a task")
    sizes = Counter(e.slots for e in peak)
    if len(sizes) > 1:
        kinds = ", ".join(f"{n} of {s} slots" for s, n in sorted(sizes.items()))
        return Shape(None, None, f"executors of different sizes at the peak ({kinds}): give simulate "
                                 "--cluster FILE (docs/workloads.md, Cluster files) or --nodes/--slots")
    [slots] = sizes
    return Shape(len(peak), slots, f"{len(peak)} executor{'s' * (len(peak) > 1)} of {slots} "
                                   f"slot{'s' * (slots > 1)} at the peak")
