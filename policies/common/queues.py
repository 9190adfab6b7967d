"""Per-node FIFO queues of entries, kept by the policy (the driver only knows membership)."""
from __future__ import annotations

from collections import deque

from policies.api import ProbeInfo


class NodeQueues(list[deque[ProbeInfo]]):
    """One deque of entries per node (a list of deques: ``queues[node]`` is a C-level lookup)."""

    def __init__(self, n_nodes: int) -> None:
        super().__init__(deque() for _ in range(n_nodes))

    def push(self, node: int, entry: ProbeInfo) -> None:
        self[node].append(entry)

    def pop_head(self, node: int) -> ProbeInfo | None:
        q = self[node]
        return q.popleft() if q else None
