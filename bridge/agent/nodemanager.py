"""What the agent needs from its NodeManager: the containers it runs, read over the NM REST API.

`NodeManagerSource` is the narrow interface the agent depends on; `RestNodeManager` implements it with
`requests`. The lead's `yarnclient` NodeManager client can satisfy the same protocol and replace it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import requests

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
    def from_json(cls, raw: dict[str, Any]) -> NmContainer:
        try:
            return cls(id=str(raw["id"]), state=str(raw["state"]), user=str(raw.get("user", "")),
                       memory_mb=int(raw.get("totalMemoryNeededMB", 0)),
                       vcores=int(raw.get("totalVCoresNeeded", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise NodeManagerUnavailable(f"malformed container entry from NodeManager: {raw!r}") from exc


class NodeManagerSource(Protocol):
    """The agent's view of its own NodeManager."""

    def containers(self) -> list[NmContainer]:
        """Every container the NodeManager currently lists (any state)."""
        ...

    def container(self, container_id: str) -> NmContainer | None:
        """One container, or None if the NodeManager does not know it."""
        ...


class RestNodeManager:
    """NodeManagerSource over `GET <nm>/ws/v1/node/containers[/{id}]`."""

    def __init__(self, base_url: str, timeout_s: float = 2.0) -> None:
        self._base = base_url.rstrip("/") + "/ws/v1/node/containers"
        self._timeout = timeout_s
        self._session = requests.Session()

    def containers(self) -> list[NmContainer]:
        body = self._get(self._base)
        wrapper = body.get("containers") or {}  # an idle NM sends {"containers": null} or {}
        entries = (wrapper.get("container") or []) if isinstance(wrapper, dict) else []
        if isinstance(entries, dict):  # Jersey renders a one-element list as an object
            entries = [entries]
        return [NmContainer.from_json(entry) for entry in entries]

    def container(self, container_id: str) -> NmContainer | None:
        body = self._get(f"{self._base}/{check_container_id(container_id)}", missing_ok=True)
        return NmContainer.from_json(body["container"]) if body else None

    def _get(self, url: str, missing_ok: bool = False) -> dict[str, Any]:
        try:
            response = self._session.get(url, timeout=self._timeout,
                                         headers={"Accept": "application/json"})
        except requests.RequestException as exc:
            raise NodeManagerUnavailable(f"NodeManager at {url} unreachable: {exc}") from exc
        if missing_ok and response.status_code == 404:
            return {}
        if response.status_code != 200:
            raise NodeManagerUnavailable(f"NodeManager GET {url} returned HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError as exc:
            raise NodeManagerUnavailable(f"NodeManager GET {url} returned non-JSON") from exc
        if not isinstance(body, dict):
            raise NodeManagerUnavailable(f"NodeManager GET {url} returned {type(body).__name__}, not an object")
        return body
