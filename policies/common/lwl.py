"""Least-Work-Left placement (Hawk's centralized scheduler for long jobs, thesis §1.2).

Per node the table tracks the estimated work of the tasks it placed there: queued (placed, not
started) plus, for each running one, ``est - min(elapsed, est)``. ``place`` returns the node with
the least work left and charges it. Nodes with no work left at all are taken first, the one that
has been free the longest first.

The heap is keyed on each node's estimated time of becoming free, ``now + work_left``, which
(with at most one tracked task running per node, the thesis' one-slot model) can only grow as
time passes; stale keys are therefore lower bounds and are re-validated lazily when popped.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable


class LwlTable:
    __slots__ = ("queued", "running", "_heap", "_ver", "members")

    def __init__(self, n_nodes: int, nodes: Iterable[int]) -> None:
        self.queued = [0.0] * n_nodes                     # est work placed but not started
        self.running: list[dict[tuple[int, int], float]] = [{} for _ in range(n_nodes)]  # -> est end
        self._ver = [0] * n_nodes
        self.members = sorted(set(nodes))
        if not self.members:
            raise ValueError("LWL needs at least one node")
        self._heap: list[tuple[float, int, int]] = [(0.0, n, 0) for n in self.members]
        heapq.heapify(self._heap)

    def work_left(self, node: int, now: float) -> float:
        w = self.queued[node]
        for end in self.running[node].values():
            if end > now:
                w += end - now
        return w

    def _push(self, node: int, now: float) -> None:
        self._ver[node] += 1
        heapq.heappush(self._heap, (now + self.work_left(node, now), node, self._ver[node]))

    def place(self, now: float, est: float) -> int:
        """Least-loaded node; charges it ``est``."""
        heap = self._heap
        while True:
            key, node, ver = heap[0]
            if ver != self._ver[node]:
                heapq.heappop(heap)
                continue
            w = self.work_left(node, now)
            if w == 0.0 or now + w <= key + 1e-9:
                break
            heapq.heapreplace(heap, (now + w, node, ver))
        heapq.heappop(heap)
        self.queued[node] += est
        self._push(node, now)
        return node

    def started(self, node: int, key: tuple[int, int], now: float, est: float) -> None:
        """A task placed on ``node`` started (``key`` identifies it until it finishes)."""
        self.queued[node] = max(0.0, self.queued[node] - est)
        self.running[node][key] = now + est
        self._push(node, now)

    def finished(self, node: int, key: tuple[int, int], now: float) -> None:
        self.running[node].pop(key, None)
        self._push(node, now)

    def has_work(self, node: int) -> bool:
        return self.queued[node] > 0 or bool(self.running[node])
