"""Python client the bridge uses to drive one node agent; every call has a timeout and raises typed errors.

Errors are the classes of `bridge.agent.errors`, rebuilt from the agent's `{"error", "message"}` reply:
e.g. `UnknownContainer` (404), `ContainerNotRunning` (409), `Unauthorized` (401); a timeout or refused
connection raises `AgentUnavailable`.
"""
from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import requests

from bridge.agent.errors import ERRORS_BY_CODE, AgentError, AgentUnavailable
from bridge.common.tls import client_context
from yarnclient.http import WatchedAdapter, call_deadline


class AgentClient:
    """Talks to `http(s)://<host>:<port>` with `Authorization: Bearer <token>`.

    The default timeout exceeds the agent's own NodeManager timeout (5 s), so a slow NM yields the
    agent's typed `NodeManagerUnavailable` rather than a client-side `AgentUnavailable`. An https
    agent's certificate and host name are verified against ``ca`` (a PEM file, e.g. the agents'
    self-signed certificate), else the system's trust store; a bad ``ca`` is a ``ValueError`` naming it.

    Every call ends within its timeout in all, not per byte (requests' read timeout restarts with
    each byte, so an agent answering a byte a second held a call for ever).
    """

    def __init__(self, base_url: str, token: str, timeout_s: float = 8.0, ca: Path | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._session = requests.Session()
        self._session.headers["Authorization"] = f"Bearer {token}"
        self._session.mount("http://", WatchedAdapter())
        if self.base_url.startswith("https://"):
            self._session.mount("https://", _TlsAdapter(client_context(ca)))

    def node(self) -> dict[str, Any]:
        return self._call("GET", "/v1/node")

    def containers(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/containers")["containers"]

    def container(self, container_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/containers/{container_id}")

    def suspend(self, container_id: str, freeze: bool = False, lease_s: float | None = None) -> dict[str, Any]:
        """Shrink the container to the agent's minimum CPU share (or freeze it outright) for
        ``lease_s`` seconds (None: the agent's default) unless renewed."""
        return self._call("POST", f"/v1/containers/{container_id}/suspend", _leased({"freeze": freeze}, lease_s))

    def resume(self, container_id: str) -> dict[str, Any]:
        """Give the container its full size back."""
        return self._call("POST", f"/v1/containers/{container_id}/resume", {})

    def resize(self, container_id: str, cpus: float, lease_s: float | None = None) -> dict[str, Any]:
        """Cap the container at `cpus` cores (at least the agent's minimum share), leased as a suspend."""
        return self._call("POST", f"/v1/containers/{container_id}/resize", _leased({"cpus": cpus}, lease_s))

    def renew(self, container_ids: list[str], lease_s: float | None = None,
              timeout_s: float | None = None) -> dict[str, Any]:
        """Extend the leases on ``container_ids``: ``{"renewed": [...], "not_held": [...]}``; within
        ``timeout_s`` if given (a renewal must not outlast its round), else the client's timeout."""
        return self._call("POST", "/v1/leases/renew", _leased({"containers": container_ids}, lease_s), timeout_s)

    def close(self) -> None:
        self._session.close()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              timeout_s: float | None = None) -> dict[str, Any]:
        url, seconds = self.base_url + path, timeout_s or self.timeout_s
        try:
            with call_deadline(seconds) as deadline:
                response = self._session.request(method, url, json=body, timeout=seconds)
                content = response.content
        except requests.RequestException as exc:
            why = f"no whole reply within {seconds:g} s" if deadline.passed else str(exc)
            raise AgentUnavailable(f"node agent at {self.base_url} did not answer {method} {path}: {why}") from exc
        if deadline.passed:  # cut short, a reply can even look whole
            raise AgentUnavailable(f"node agent at {self.base_url} did not answer {method} {path}: "
                                   f"no whole reply within {seconds:g} s")
        try:
            payload = json.loads(content)
        except ValueError as exc:
            raise AgentError(f"{method} {path}: agent sent non-JSON (HTTP {response.status_code})") from exc
        if response.status_code != 200:
            error, message = AgentError, None
            if isinstance(payload, dict):
                error, message = ERRORS_BY_CODE.get(payload.get("error", ""), AgentError), payload.get("message")
            raise error(message or f"{method} {path}: HTTP {response.status_code}")
        return payload


class _TlsAdapter(WatchedAdapter):
    """requests' adapter with our verifying context (a CA file or the system store, TLS 1.2+)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)


def _leased(body: dict[str, Any], lease_s: float | None) -> dict[str, Any]:
    return body if lease_s is None else {**body, "lease_s": lease_s}
