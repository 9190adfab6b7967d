"""Per-node FIFO queues of entries, kept by the policy (the driver only knows membership)."""
from __future__ import annotations

from collections import deque

from policies.api import ProbeInfo


class NodeQueues:
    """One deque of entries per node, created on first use."""

    __slots__ = ("_q",)

    def __init__(self, n_nodes: int) -> None:
        self._q: list[deque[ProbeInfo]] = [deque() for _ in range(n_nodes)]

    def __getitem__(self, node: int) -> deque[ProbeInfo]:
        return self._q[node]

    def push(self, node: int, entry: ProbeInfo) -> None:
        self._q[node].append(entry)

    def pop(self, node: int) -> ProbeInfo | None:
        q = self._q[node]
        return q.popleft() if q else None
