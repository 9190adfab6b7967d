"""Queues of waiting jobs keyed by size and by arrival: what Best-Fit and VQS query.

Best-Fit asks for "the largest waiting job that fits in c"; VQS asks for a class's
head-of-line job. A sorted list answers both in O(log n) lookups (deletion is a list
shift, which is fast at the queue lengths a simulation reaches).
"""
from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from policies.psychas.partition import Partition


@dataclass(frozen=True, order=True)
class Waiting:
    """A waiting job: its occupied size, arrival sequence number and id."""

    size: float
    seq: int
    key: Hashable


class SizeQueue:
    """A multiset of waiting jobs ordered by (size, seq) and by seq."""

    def __init__(self) -> None:
        self._by_size: list[Waiting] = []
        self._by_seq: list[tuple[int, Waiting]] = []

    def __len__(self) -> int:
        return len(self._by_size)

    def __iter__(self) -> Iterator[Waiting]:
        """Arrival (FIFO) order (a snapshot)."""
        return (w for _, w in list(self._by_seq))

    def after(self, seq: int) -> Waiting | None:
        """The earliest arrival after sequence number ``seq``."""
        i = bisect.bisect_right(self._by_seq, seq, key=lambda e: e[0])
        return self._by_seq[i][1] if i < len(self._by_seq) else None

    def add(self, job: Waiting) -> None:
        bisect.insort(self._by_size, job)
        bisect.insort(self._by_seq, (job.seq, job))

    def remove(self, job: Waiting) -> None:
        del self._by_size[bisect.bisect_left(self._by_size, job)]
        del self._by_seq[bisect.bisect_left(self._by_seq, (job.seq, job))]

    def head(self) -> Waiting | None:
        return self._by_seq[0][1] if self._by_seq else None

    def largest_fitting(self, capacity: float, eps: float = 1e-9) -> Waiting | None:
        """The largest job of size ≤ capacity; among equal sizes the earliest arrival."""
        i = bisect.bisect_right(self._by_size, capacity + eps, key=lambda w: w.size)
        if i == 0:
            return None
        size = self._by_size[i - 1].size
        return self._by_size[bisect.bisect_left(self._by_size, size, key=lambda w: w.size)]


class VirtualQueues:
    """One SizeQueue per size class of a Partition (VQ_0 .. VQ_{2J−1})."""

    def __init__(self, partition: Partition) -> None:
        self.partition = partition
        self.queues = [SizeQueue() for _ in range(partition.classes)]
        self._class: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues)

    def lengths(self) -> list[int]:
        return [len(q) for q in self.queues]

    def add(self, job: Waiting) -> None:
        j = self.partition.classify(job.size)
        self._class[job.key] = j
        self.queues[j].add(job)

    def remove(self, job: Waiting) -> None:
        self.queues[self._class.pop(job.key)].remove(job)

    def largest_fitting(self, capacity: float) -> Waiting | None:
        """The largest fitting job over every class (Best-Fit over the whole queue)."""
        found = [w for q in self.queues if (w := q.largest_fitting(capacity)) is not None]
        return max(found, key=lambda w: (w.size, -w.seq), default=None)
