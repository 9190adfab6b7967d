"""Typed agent errors, shared by the server (which maps them to HTTP) and the client (which rebuilds them)."""
from __future__ import annotations


class AgentError(Exception):
    """Base error: `code` names the failure on the wire, `status` is its HTTP status."""

    code = "agent_error"
    status = 500


class BadRequest(AgentError):
    """The request is malformed (bad JSON, bad container id, share out of range)."""

    code = "bad_request"
    status = 400


class Unauthorized(AgentError):
    """The shared token is missing or wrong."""

    code = "unauthorized"
    status = 401


class NoSuchEndpoint(AgentError):
    """The path or method is not part of the agent's API."""

    code = "no_such_endpoint"
    status = 404


class UnknownContainer(AgentError):
    """The agent's NodeManager does not know the container."""

    code = "unknown_container"
    status = 404


class ContainerNotRunning(AgentError):
    """The container exists but is not RUNNING (finished, or not started yet)."""

    code = "container_not_running"
    status = 409


class NoContainerProcesses(AgentError):
    """The container is RUNNING but no verified process of it was found on this host."""

    code = "no_container_processes"
    status = 409


class NodeManagerUnavailable(AgentError):
    """The NodeManager REST API did not answer (or answered garbage) within the timeout."""

    code = "nodemanager_unavailable"
    status = 502


class CgroupError(AgentError):
    """A cgroup operation failed (permissions, missing controller)."""

    code = "cgroup_error"
    status = 500


class AgentUnavailable(AgentError):
    """Client side only: the agent did not answer within the timeout."""

    code = "agent_unavailable"
    status = 503


ERRORS_BY_CODE: dict[str, type[AgentError]] = {
    cls.code: cls
    for cls in (AgentError, BadRequest, Unauthorized, NoSuchEndpoint, UnknownContainer, ContainerNotRunning,
                NoContainerProcesses, NodeManagerUnavailable, CgroupError, AgentUnavailable)
}
