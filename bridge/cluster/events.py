"""Simulator-internal events (the policy-facing ones live in ``policies.framework.api``).

Same shape as the API events (``policies/framework/messages.py``): values with a ``time`` and a tier of
their class.
"""
from __future__ import annotations

from dataclasses import dataclass

from policies.framework.api import BaseEvent, ProbeInfo


@dataclass(init=False, unsafe_hash=True)
class SegmentEnd(BaseEvent):
    """The run segment ``token`` on ``node``/``slot`` reaches its end (stale if preempted)."""

    time: float
    node: int
    slot: int
    token: int

    def __init__(self, time: float, node: int, slot: int, token: int) -> None:
        self.time = time
        self.node = node
        self.slot = slot
        self.token = token

    @property
    def tier(self) -> int:
        return 0


@dataclass(init=False, unsafe_hash=True)
class OffSlotEnd(BaseEvent):
    """Task ``job_id``/``task``, off its slot at ``node`` (queued or suspended), completes its work:
    simulated at the state's ``offslot_share`` (stale if ``token`` is no longer its own), or seen
    ending by a live driver (``token`` -1)."""

    time: float
    node: int
    job_id: int
    task: int
    token: int

    def __init__(self, time: float, node: int, job_id: int, task: int, token: int) -> None:
        self.time = time
        self.node = node
        self.job_id = job_id
        self.task = task
        self.token = token

    @property
    def tier(self) -> int:
        return 0


@dataclass(init=False, unsafe_hash=True)
class FreeSlot(BaseEvent):
    """A reserved slot is released (Cancel reply reached the node)."""

    time: float
    node: int
    slot: int

    def __init__(self, time: float, node: int, slot: int) -> None:
        self.time = time
        self.node = node
        self.slot = slot

    @property
    def tier(self) -> int:
        return 1


@dataclass(init=False, unsafe_hash=True)
class Deliver(BaseEvent):
    """The copies of one Probe decision reaching their ``nodes`` (same instant and tier as
    ProbeArrival; handled as one ProbeArrival per node, in order)."""

    time: float
    nodes: tuple[int, ...]
    probe: ProbeInfo

    def __init__(self, time: float, nodes: tuple[int, ...], probe: ProbeInfo) -> None:
        self.time = time
        self.nodes = nodes
        self.probe = probe

    @property
    def tier(self) -> int:
        return 3
