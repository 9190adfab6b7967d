"""The one thing that differs between worlds: how a driver runs the tasks the cluster state starts."""
from __future__ import annotations

import enum
from typing import Any, Protocol

from bridge.cluster.events import SegmentEnd
from bridge.cluster.slots import Running
from policies.framework.api import ProbeInfo


class Pausing(enum.Enum):
    """What ``Suspend`` did to a task, as its runner reports it (:meth:`TaskRunner.pause`): it keeps
    its attained service and can be resumed (the simulator stops its clock, the node driver shrinks
    its container, Spark alone lets it run on to its end), or it was killed and the platform re-runs
    it as new work (live Spark with ``kill_on_suspend``): it is done as far as the state is concerned."""

    SUSPEND = "suspend"
    KILL = "kill"


class TaskRunner(Protocol):
    """How a driver runs the tasks the state starts; every call appends its effects to ``out``."""

    def run(self, node: int, slot: int, r: Running, until: float, out: list[Any]) -> None:
        """``r`` progresses on ``node``/``slot`` from now; by the job's durations (the truth in the
        simulator, estimates live) this run segment ends at ``until``."""

    def pause(self, node: int, slot: int, r: Running, now: float, out: list[Any]) -> Pausing:
        """``r`` stops progressing: suspended, or killed where the runner cannot (or is told not
        to) pause tasks; the runner alone knows which, and says so."""

    @property
    def notices_queues(self) -> bool:
        """Whether ``queued`` does anything: the state calls it only then (the simulator's hot path)."""

    def queued(self, node: int, probe: ProbeInfo) -> None:
        """``probe`` reached ``node``'s queue (a runner that must start a bound task's process
        before the policy runs it acts here: the node driver; the others do nothing)."""


class TimedRunner:
    """The simulator's :class:`TaskRunner`: a run segment ends after the service it has left, unless
    a suspension makes its token stale first. The cluster state calls its ``run`` natively."""

    __slots__ = ()

    def run(self, node: int, slot: int, r: Running, until: float, out: list[Any]) -> None:
        out.append(SegmentEnd(until, node, slot, r.token))

    def pause(self, node: int, slot: int, r: Running, now: float, out: list[Any]) -> Pausing:
        """Nothing to do: the segment's end event is stale from now on."""
        return Pausing.SUSPEND

    @property
    def notices_queues(self) -> bool:
        return False

    def queued(self, node: int, probe: ProbeInfo) -> None:
        """Nothing to do: a simulated task needs no process before it runs."""
