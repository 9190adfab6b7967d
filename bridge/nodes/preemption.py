"""Suspend and resume real YARN containers through their nodes' agents; knows no policy.

A live driver (Kairos' node side, or Big-C's and Falcon's preemption) decides *whom* to pause; this
module only carries the command to the right node agent, times it, and remembers what it throttled
so that ``restore_all`` can give every container its full share back when the driver stops, and
``held`` can tell the lease renewal (``bridge.nodes.leases``) what to renew: every suspend holds
for ``lease_s`` seconds at the agent, so a driver that dies leaves no throttle for long. A
container that has already finished is not an error here: the agent refuses it (404/409) and the
outcome is ``SKIP``, because a task that ended needs no throttle.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from bridge.agent.errors import AgentError, ContainerNotRunning, UnknownContainer
from bridge.agent.leases import DEFAULT_LEASE_S
from policies.framework.api import Code, Status

log = logging.getLogger(__name__)


class Agent(Protocol):
    """The part of `bridge.agent.client.AgentClient` this module uses."""

    def suspend(self, container_id: str, freeze: bool = False, lease_s: float | None = None) -> dict[str, Any]: ...

    def resume(self, container_id: str) -> dict[str, Any]: ...

    def renew(self, container_ids: list[str], lease_s: float | None = None,
              timeout_s: float | None = None) -> dict[str, Any]: ...


@dataclass(frozen=True, order=True)
class ContainerRef:
    """A YARN container on a node (``node`` keys the agents mapping, e.g. the NM's web address)."""

    node: str
    container: str


@dataclass(frozen=True)
class Command:
    """One applied command, for logs, metrics and the latency benchmark."""

    ref: ContainerRef
    action: str          # "suspend" | "resume"
    status: Status
    seconds: float       # command to acknowledged effect (the agent answers after the cgroup write)
    at_epoch: float = 0.0  # wall-clock time of the acknowledgement (when the share changed, for analyses)
    share: float | None = None  # cores the container runs at after it, as the agent answered (None: full or unknown)


class ContainerPreemptor:
    """Applies suspend/resume to containers; thread-compatible (callers serialize, as the drivers do),
    except ``held`` and ``lapsed``, which the lease renewal calls from its own thread."""

    def __init__(self, agents: Mapping[str, Agent], freeze: bool = False,
                 clock: Callable[[], float] = time.monotonic, lease_s: float = DEFAULT_LEASE_S,
                 awaiting_agents: bool = False) -> None:
        """``awaiting_agents``: the agents are opened later (``attach``), once the application they
        manage exists; until then a sender holds commands rather than count them failed."""
        self.agents = dict(agents)
        self.awaiting_agents = awaiting_agents
        self.freeze = freeze
        self.clock = clock
        self.lease_s = lease_s
        self.commands: list[Command] = []
        self._suspends = 0  # numbers each suspend, so a lapse seen late never undoes a newer one
        self._since: dict[ContainerRef, int] = {}  # every container held throttled -> its suspend's number
        self._lock = threading.Lock()

    def attach(self, agents: Mapping[str, Agent]) -> None:
        """The agents, now open: commands held for them can be sent."""
        self.agents.update(agents)
        self.awaiting_agents = False

    def ready_for(self, node: str) -> bool:
        """A command for ``node`` can be sent now (an agent missing once the agents are open is a
        failed command, counted)."""
        return node in self.agents or not self.awaiting_agents

    def suspend(self, ref: ContainerRef) -> Status:
        """Shrink ``ref`` to its agent's minimum share (or freeze it, if configured) under a lease."""
        status = self._send(ref, "suspend",
                            lambda agent: agent.suspend(ref.container, freeze=self.freeze, lease_s=self.lease_s))
        if status.ok:
            with self._lock:
                self._suspends += 1
                self._since[ref] = self._suspends
        return status

    def resume(self, ref: ContainerRef) -> Status:
        """Give ``ref`` its full share back."""
        status = self._send(ref, "resume", lambda agent: agent.resume(ref.container))
        if status.code is not Code.ERROR:
            with self._lock:
                self._since.pop(ref, None)
        return status

    @property
    def throttled(self) -> frozenset[ContainerRef]:
        """Every container this preemptor holds throttled."""
        with self._lock:
            return frozenset(self._since)

    def held(self) -> dict[ContainerRef, int]:
        """Every container held throttled, with the number of the suspend that throttled it."""
        with self._lock:
            return dict(self._since)

    def lapsed(self, ref: ContainerRef, since: int) -> None:
        """The agent holds no lease on ``ref`` any more (it expired, or the container finished): it
        runs at full share, unless suspended again after ``since``."""
        with self._lock:
            if self._since.get(ref) == since:
                del self._since[ref]

    def restore_all(self) -> list[ContainerRef]:
        """Resume every container this preemptor throttled; returns those still throttled (unreachable)."""
        for ref in sorted(self.throttled):
            self.resume(ref)
        return sorted(self.throttled)

    def _send(self, ref: ContainerRef, action: str, call: Callable[[Agent], object]) -> Status:
        agent = self.agents.get(ref.node)
        start = self.clock()
        share = None
        if agent is None:
            status = Status(Code.ERROR, f"no node agent for node {ref.node!r} ({ref.container})", "preemption")
        else:
            status, share = _outcome(call, agent, ref, action)
        command = Command(ref, action, status, self.clock() - start, time.time(), share)
        self.commands.append(command)
        if status.code is Code.ERROR:  # counted in `failures`: a line each would bury a progress bar
            log.debug("preemption: %s %s on %s failed: %s", action, ref.container, ref.node, status.reason)
        return status

    def failures(self) -> str:
        """One line on the commands that failed ("" if none), for the end of a run."""
        failed = [c for c in self.commands if c.status.code is Code.ERROR]
        if not failed:
            return ""
        nodes = ", ".join(sorted({c.ref.node for c in failed}))
        return (f"{len(failed)} of {len(self.commands)} preemption command(s) failed, on {nodes} "
                f"(last: {failed[-1].status.reason})")


def _outcome(call: Callable[[Agent], object], agent: Agent, ref: ContainerRef,
             action: str) -> tuple[Status, float | None]:
    """The command's status, and the share the agent says the container runs at now."""
    try:
        answer = call(agent)
    except (UnknownContainer, ContainerNotRunning) as exc:
        return Status(Code.SKIP, f"{action} {ref.container}: container gone: {exc}", "preemption"), None
    except AgentError as exc:
        return Status(Code.ERROR, f"{action} {ref.container}: {type(exc).__name__}: {exc}", "preemption"), None
    return Status(), _share(answer)


def _share(answer: object) -> float | None:
    """Cores a container runs at from an agent's answer (``GET /v1/containers/ID``'s fields):
    0 if frozen, its share if throttled, None at full share."""
    if not isinstance(answer, dict) or not answer.get("throttled"):
        return None
    if answer.get("frozen"):
        return 0.0
    share = answer.get("share")
    return float(share) if isinstance(share, (int, float)) else None
