"""Typed agent errors, shared by the server (which maps them to HTTP) and the client (which rebuilds them).

Each class declares its wire `code` and HTTP `status` once, and registers itself in ERRORS_BY_CODE.
"""
from __future__ import annotations

from typing import Any

ERRORS_BY_CODE: dict[str, type[AgentError]] = {}


class AgentError(Exception):
    """Base error: `code` names the failure on the wire, `status` is its HTTP status."""

    code = "agent_error"
    status = 500

    def __init_subclass__(cls, code: str, status: int, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.code, cls.status = code, status
        ERRORS_BY_CODE[code] = cls


ERRORS_BY_CODE[AgentError.code] = AgentError


class BadRequest(AgentError, code="bad_request", status=400):
    """The request is malformed (bad JSON, bad container id, share out of range)."""


class Unauthorized(AgentError, code="unauthorized", status=401):
    """The shared token is missing or wrong."""


class PayloadTooLarge(AgentError, code="payload_too_large", status=413):
    """The request body is larger than the agent accepts."""


class AgentLocked(AgentError, code="agent_locked", status=409):
    """Start-up only: another agent already runs with this state file (it holds the lock)."""


class NoSuchEndpoint(AgentError, code="no_such_endpoint", status=404):
    """The path or method is not part of the agent's API."""


class UnknownContainer(AgentError, code="unknown_container", status=404):
    """The agent's NodeManager does not know the container."""


class ContainerNotRunning(AgentError, code="container_not_running", status=409):
    """The container exists but is not RUNNING (finished, or not started yet)."""


class NoContainerProcesses(AgentError, code="no_container_processes", status=409):
    """The container is RUNNING but no verified process of it was found on this host."""


class NodeManagerUnavailable(AgentError, code="nodemanager_unavailable", status=502):
    """The NodeManager REST API did not answer (or answered garbage) within the timeout."""


class CgroupError(AgentError, code="cgroup_error", status=500):
    """A cgroup operation failed (permissions, missing controller)."""


class AgentUnavailable(AgentError, code="agent_unavailable", status=503):
    """Client side only: the agent did not answer within the timeout."""
