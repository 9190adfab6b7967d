"""Simulator-internal events (the policy-facing ones live in ``policies.api``).

Same shape as the API events: frozen values with a ``time`` and a class-level ``tier``.
"""
from __future__ import annotations

from typing import ClassVar

from policies.api import ProbeInfo, value


@value
class SegmentEnd:
    """The run segment ``token`` on ``node``/``slot`` reaches its end (stale if preempted)."""

    time: float
    node: int
    slot: int
    token: int
    tier: ClassVar[int] = 0


@value
class FreeSlot:
    """A reserved slot is released (Cancel reply reached the node)."""

    time: float
    node: int
    slot: int
    tier: ClassVar[int] = 1


@value
class StealAttempt:
    """``thief`` asks ``victims`` in order until one gives entries (all in one instant)."""

    time: float
    thief: int
    victims: tuple[int, ...]
    tier: ClassVar[int] = 2


@value
class Deliver:
    """The copies of one Probe decision reaching their ``nodes`` (same instant and tier as
    ProbeArrival; handled as one ProbeArrival per node, in order)."""

    time: float
    nodes: tuple[int, ...]
    probe: ProbeInfo
    tier: ClassVar[int] = 3
