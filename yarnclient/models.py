"""Typed views of the REST replies. Each keeps the full JSON in `raw` for fields not mapped."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def items(body: Any, outer: str, inner: str) -> list[dict[str, Any]]:
    """Unwrap YARN's `{"apps": {"app": [...]}}` shape, which is `{"apps": null}` when empty."""
    wrapper = (body or {}).get(outer) or {}
    found = wrapper.get(inner) or []
    return found if isinstance(found, list) else [found]


@dataclass(frozen=True)
class Node:
    node_id: str
    host: str
    http_address: str
    state: str
    num_containers: int
    vcores_total: int
    memory_mb_total: int
    vcores_used: int
    memory_mb_used: int
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Node:
        total = d.get("totalResource") or {}
        used_mb, used_vc = int(d.get("usedMemoryMB", 0)), int(d.get("usedVirtualCores", 0))
        return cls(
            node_id=d["id"], host=d.get("nodeHostName", ""), http_address=d.get("nodeHTTPAddress", ""),
            state=d.get("state", "UNKNOWN"), num_containers=int(d.get("numContainers", 0)),
            vcores_total=int(total.get("vCores", used_vc + int(d.get("availableVirtualCores", 0)))),
            memory_mb_total=int(total.get("memory", used_mb + int(d.get("availMemoryMB", 0)))),
            vcores_used=used_vc, memory_mb_used=used_mb, raw=d)


@dataclass(frozen=True)
class Application:
    app_id: str
    name: str
    user: str
    queue: str
    state: str
    final_status: str
    application_type: str
    priority: int
    progress: float
    started_ms: int
    finished_ms: int
    diagnostics: str
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Application:
        return cls(
            app_id=d["id"], name=d.get("name", ""), user=d.get("user", ""), queue=d.get("queue", ""),
            state=d.get("state", "UNKNOWN"), final_status=d.get("finalStatus", "UNDEFINED"),
            application_type=d.get("applicationType", ""), priority=int(d.get("priority", 0)),
            progress=float(d.get("progress", 0.0)), started_ms=int(d.get("startedTime", 0)),
            finished_ms=int(d.get("finishedTime", 0)), diagnostics=d.get("diagnostics", ""), raw=d)

    @property
    def is_done(self) -> bool:
        return self.state in ("FINISHED", "FAILED", "KILLED")


@dataclass(frozen=True)
class ClusterMetrics:
    apps_running: int
    apps_pending: int
    apps_completed: int
    active_nodes: int
    vcores_total: int
    vcores_allocated: int
    memory_mb_total: int
    memory_mb_allocated: int
    containers_allocated: int
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ClusterMetrics:
        return cls(
            apps_running=int(d.get("appsRunning", 0)), apps_pending=int(d.get("appsPending", 0)),
            apps_completed=int(d.get("appsCompleted", 0)), active_nodes=int(d.get("activeNodes", 0)),
            vcores_total=int(d.get("totalVirtualCores", 0)),
            vcores_allocated=int(d.get("allocatedVirtualCores", 0)),
            memory_mb_total=int(d.get("totalMB", 0)), memory_mb_allocated=int(d.get("allocatedMB", 0)),
            containers_allocated=int(d.get("containersAllocated", 0)), raw=d)


@dataclass(frozen=True)
class Container:
    container_id: str
    state: str
    user: str
    exit_code: int | None
    memory_mb: int
    vcores: int
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Container:
        exit_code = d.get("exitCode")
        return cls(
            container_id=d["id"], state=d.get("state", "UNKNOWN"), user=d.get("user", ""),
            exit_code=None if exit_code in (None, -1000) else int(exit_code),
            memory_mb=int(d.get("totalMemoryNeededMB", 0)), vcores=int(d.get("totalVCoresNeeded", 0)),
            raw=d)


@dataclass(frozen=True)
class AllocatedContainer:
    """A container the RM has allocated to an application attempt, and where."""

    container_id: str
    node_id: str
    node_http_address: str
    memory_mb: int
    vcores: int
    is_am: bool
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any], am_container: str = "") -> AllocatedContainer:
        return cls(
            container_id=d["containerId"], node_id=d.get("nodeId") or d.get("assignedNodeId", ""),
            node_http_address=d.get("nodeHttpAddress", ""), memory_mb=int(d.get("allocatedMB", 0)),
            vcores=int(d.get("allocatedVCores", 0)), is_am=d["containerId"] == am_container, raw=d)
