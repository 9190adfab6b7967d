"""The replaced-algorithm baselines' free room (Capacity, Tetris): per worker, its capacity less
the peak reservations placed there, and per waiting demand the workers it fits, best first.

A baseline binds each task to the best-scoring worker where its believed demand fits now. A
busy trace keeps thousands of tasks waiting on a few distinct demands (one per job), so the
choice is kept ready per demand as a heap of ``(-score, worker, version)`` instead of a scan
of every worker per task: a worker whose room changes gets a new version and a new entry in
each heap it fits, and entries of older versions are dropped when they reach the top. Ties go
to the lowest worker id, as a scan keeping the first maximum in worker order would choose.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

from policies.common.vectors import fits, sub

Vector = tuple[float, ...]
# the placement score of a worker for a demand: (demand, free room, capacity) -> higher is better
Rate = Callable[[Vector, Vector, Vector], float]
Entry = tuple[float, int, int]  # (-score, worker, the worker's version when scored)


class FreeRoom:
    """Free room per worker and, per watched demand, a heap of the workers it fits."""

    def __init__(self, free: Mapping[int, Vector], capacity: Vector, rate: Rate) -> None:
        self.free = dict(free)
        self.capacity = capacity
        self.rate = rate
        self._version = dict.fromkeys(self.free, 0)
        self._heaps: dict[Vector, list[Entry]] = {}

    def watch(self, demand: Vector) -> None:
        """Keep the workers ``demand`` fits ready (a task with it waits)."""
        if demand not in self._heaps:
            self._heaps[demand] = self._scan(demand)

    def unwatch(self, demand: Vector) -> None:
        """No task with ``demand`` waits any more."""
        self._heaps.pop(demand, None)

    def _scan(self, demand: Vector) -> list[Entry]:
        heap = [(-self.rate(demand, f, self.capacity), w, self._version[w])
                for w, f in self.free.items() if fits(demand, f)]
        heapq.heapify(heap)
        return heap

    def set(self, worker: int, free: Vector) -> None:
        """``worker``'s room is now ``free``: rescored for every demand it fits."""
        self.free[worker] = free
        version = self._version[worker] = self._version[worker] + 1
        for demand, heap in self._heaps.items():
            if fits(demand, free):
                heapq.heappush(heap, (-self.rate(demand, free, self.capacity), worker, version))
                if len(heap) > 4 * len(self.free) + 64:  # mostly stale entries: start afresh
                    self._heaps[demand] = self._scan(demand)

    def best(self, demand: Vector) -> int | None:
        """The best-scoring worker ``demand`` fits now (a watched demand), or None."""
        heap = self._heaps[demand]
        while heap and heap[0][2] != self._version[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1] if heap else None

    def take(self, worker: int, demand: Vector) -> None:
        """Reserve ``demand`` on ``worker``."""
        self.set(worker, sub(self.free[worker], demand))
