"""What the agent needs from its NodeManager: the containers it runs.

`NodeManagerSource` is the narrow interface the agent depends on (tests pass fakes); `YarnNodeManager`
adapts the project's `yarnclient.NodeManagerClient` (NM REST `/ws/v1/node/containers[/{id}]`) to it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from yarnclient.errors import YarnError, YarnNotFound
from yarnclient.models import Container
from yarnclient.nodemanager import NodeManagerClient

from bridge.agent.errors import BadRequest, NodeManagerUnavailable

CONTAINER_ID_RE = re.compile(r"container_(e\d+_)?\d+_\d+_\d+_\d+")
RUNNING = "RUNNING"


def check_container_id(container_id: str) -> str:
    """Return `container_id` if it has YARN's syntax, else raise BadRequest naming it."""
    if not CONTAINER_ID_RE.fullmatch(container_id):
        raise BadRequest(f"not a YARN container id: {container_id!r}")
    return container_id


@dataclass(frozen=True)
class NmContainer:
    """One container as its NodeManager reports it."""

    id: str
    state: str
    user: str
    memory_mb: int
    vcores: int

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    @classmethod
    def of(cls, container: Container) -> NmContainer:
        return cls(container.container_id, container.state, container.user, container.memory_mb,
                   container.vcores)


class NodeManagerSource(Protocol):
    """The agent's view of its own NodeManager."""

    def containers(self) -> list[NmContainer]:
        """Every container the NodeManager currently lists (any state)."""
        ...

    def container(self, container_id: str) -> NmContainer | None:
        """One container, or None if the NodeManager does not know it."""
        ...


class YarnNodeManager:
    """NodeManagerSource over the NM REST API; YARN errors become NodeManagerUnavailable."""

    def __init__(self, url: str, timeout_s: float = 5.0) -> None:
        self.url = url
        self._client = NodeManagerClient(url, timeout=(timeout_s, timeout_s), retries=1)

    def containers(self) -> list[NmContainer]:
        try:
            return [NmContainer.of(c) for c in self._client.containers()]
        except (YarnError, KeyError, TypeError, ValueError) as exc:
            raise NodeManagerUnavailable(f"NodeManager {self.url}: cannot list containers: {exc}") from exc

    def container(self, container_id: str) -> NmContainer | None:
        try:
            return NmContainer.of(self._client.container(check_container_id(container_id)))
        except YarnNotFound:
            return None
        except (YarnError, KeyError, TypeError, ValueError) as exc:
            raise NodeManagerUnavailable(f"NodeManager {self.url}: cannot read {container_id}: {exc}") from exc


class NoNodeManager:
    """The NodeManagerSource of `--restore-only`, which needs none: it restores from the state file and
    the groups on disk, and must work when the NodeManager is gone or its address unknown."""

    def containers(self) -> list[NmContainer]:
        raise NodeManagerUnavailable("no NodeManager in a restore-only run")

    def container(self, container_id: str) -> NmContainer | None:
        raise NodeManagerUnavailable(f"no NodeManager in a restore-only run; cannot read {container_id}")


APP_ID_RE = re.compile(r"application_(\d+_\d+)")


class AppFilter:
    """A NodeManagerSource showing only some applications' containers.

    For a node shared with other users' experiments (the one-host testbed): the agent then adopts,
    and accepts commands for, only these applications' containers; any other id reads as unknown."""

    def __init__(self, inner: NodeManagerSource, app_ids: tuple[str, ...]) -> None:
        keys = []
        for app_id in app_ids:
            match = APP_ID_RE.fullmatch(app_id)
            if match is None:
                raise BadRequest(f"not a YARN application id: {app_id!r}")
            keys.append(f"_{match.group(1)}_")
        self.inner, self.keys = inner, tuple(keys)

    def _mine(self, container_id: str) -> bool:
        return any(key in container_id for key in self.keys)

    def containers(self) -> list[NmContainer]:
        return [c for c in self.inner.containers() if self._mine(c.id)]

    def container(self, container_id: str) -> NmContainer | None:
        return self.inner.container(container_id) if self._mine(container_id) else None
