"""Fakes for the live drivers' unit tests: a node agent and a ResourceManager's node-resource API."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bridge.agent.errors import AgentUnavailable, ContainerNotRunning
from yarnclient.models import Node


class FakeAgent:
    """Records commands; containers in ``gone`` are refused like finished ones (409). Answers as
    the agent does: the container's share, frozen and throttled fields after the command."""

    def __init__(self, min_share: float = 0.1) -> None:
        self.min_share = min_share
        self.calls: list[tuple[str, str]] = []
        self.leases: dict[str, float | None] = {}
        self.gone: set[str] = set()
        self.down = False

    def _call(self, action: str, container_id: str) -> dict[str, Any]:
        if self.down:
            raise AgentUnavailable("agent down")
        if container_id in self.gone:
            raise ContainerNotRunning(f"{container_id} has finished")
        self.calls.append((action, container_id))
        throttled = action != "resume"
        return {"id": container_id, "share": self.min_share if throttled else None,
                "frozen": action == "freeze", "throttled": throttled}

    def suspend(self, container_id: str, freeze: bool = False, lease_s: float | None = None) -> dict[str, Any]:
        self.leases[container_id] = lease_s
        return self._call("freeze" if freeze else "suspend", container_id)

    def resume(self, container_id: str) -> dict[str, Any]:
        self.leases.pop(container_id, None)
        return self._call("resume", container_id)

    def renew(self, container_ids: list[str], lease_s: float | None = None,
              timeout_s: float | None = None) -> dict[str, Any]:
        if self.down:
            raise AgentUnavailable("agent down")
        self.calls.append(("renew", ",".join(container_ids)))
        held = [c for c in container_ids if c in self.leases]
        return {"renewed": held, "not_held": [c for c in container_ids if c not in held]}


class FakeRM:
    """`nodes` and `update_node_resource` over a dict node id -> (vcores, memory MB); raising
    ``fail_on``'s capacity is refused. An accepted update shows in ``nodes`` after ``lag`` more
    listings (the RM applies updates asynchronously), or never with ``lag`` < 0."""

    def __init__(self, nodes: dict[str, tuple[int, int]], fail_on: str | None = None, lag: int = 0) -> None:
        self.capacity = dict(nodes)
        self.fail_on = fail_on
        self.lag = lag
        self.pending: dict[str, tuple[tuple[int, int], int]] = {}   # node -> (capacity, listings to go)

    def nodes(self, states: Iterable[str] | None = None) -> list[Node]:
        for node_id, (capacity, left) in list(self.pending.items()):
            if left == 0:
                self.capacity[node_id] = capacity
                del self.pending[node_id]
            elif left > 0:
                self.pending[node_id] = (capacity, left - 1)
        return [Node(node_id, "h", "h:8042", "RUNNING", 0, v, m, 0, 0, {})
                for node_id, (v, m) in sorted(self.capacity.items())]

    def update_node_resource(self, node_id: str, *, vcores: int, memory_mb: int,
                             overcommit_timeout_s: int = -1) -> dict:
        if node_id == self.fail_on and vcores > self.capacity[node_id][0]:
            raise RuntimeError(f"RM refused {node_id}")
        if self.lag:
            self.pending[node_id] = ((vcores, memory_mb), self.lag)
        else:
            self.capacity[node_id] = (vcores, memory_mb)
        return {}
