"""Per-node FIFO queues of entries, kept by the policy (the driver only knows membership)."""
from __future__ import annotations

from collections import deque

from mypy_extensions import mypyc_attr

from policies.framework.api import ProbeInfo


@mypyc_attr(native_class=False)  # a list subclass: mypyc compiles no subclass of a builtin
class NodeQueues(list[deque[ProbeInfo]]):
    """One deque of entries per node (a list of deques: ``queues[node]`` is a C-level lookup)."""

    def __init__(self, n_nodes: int) -> None:
        super().__init__(deque() for _ in range(n_nodes))

    def push(self, node: int, entry: ProbeInfo) -> None:
        self[node].append(entry)

    def pop_head(self, node: int) -> ProbeInfo | None:
        q = self[node]
        return q.popleft() if q else None
