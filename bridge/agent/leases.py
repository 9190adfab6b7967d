"""Leases on throttles: a container stays below full size only while its controller keeps saying so.

The list of suspended containers otherwise lives only in the controller's memory (`serve`, or the
policy host beside a driver). If the controller dies (SIGKILL, a lost host), nobody would resume them,
and they would crawl at the minimum share until they exit. So every suspend or resize holds for
`lease_s` seconds; the controller renews its leases in one batch call per node
(`POST /v1/leases/renew`) every lease/3, and the agent (`NodeAgent.watch_leases`) resumes a
container whose lease ran out. Leases are kept in memory only: an agent that restarts releases every container anyway.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from bridge.agent.errors import BadRequest

DEFAULT_LEASE_S = 30.0  # a dead controller's throttles last at most this long; renewed every 10 s
MAX_LEASE_S = 600.0


def lease_seconds(value: Any) -> float:
    """A request's ``lease_s``: None means the default; else seconds within (0, MAX_LEASE_S]."""
    if value is None:
        return DEFAULT_LEASE_S
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= MAX_LEASE_S:
        raise BadRequest(f"'lease_s' must be a number of seconds within (0, {MAX_LEASE_S:g}], got {value!r}")
    return float(value)


class Leases:
    """Each held container's deadline on ``clock``, and when leases ran out; not thread-safe (the
    agent calls it under its lock)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._deadlines: dict[str, float] = {}
        self.expired_at: dict[str, float] = {}  # container -> wall time its last lease ran out
        self.expired_total = 0

    def grant(self, container_id: str, lease_s: float) -> None:
        self._deadlines[container_id] = self.clock() + lease_s
        self.expired_at.pop(container_id, None)

    def renew(self, container_ids: Iterable[str], lease_s: float) -> tuple[list[str], list[str]]:
        """Extend the leases held on ``container_ids``: (renewed, not held)."""
        renewed, not_held = [], []
        deadline = self.clock() + lease_s
        for cid in container_ids:
            if cid in self._deadlines:
                self._deadlines[cid] = deadline
                renewed.append(cid)
            else:
                not_held.append(cid)
        return renewed, not_held

    def drop(self, container_id: str) -> None:
        self._deadlines.pop(container_id, None)

    def forget(self, container_id: str) -> None:
        """The container is gone: nothing of it is kept."""
        self.drop(container_id)
        self.expired_at.pop(container_id, None)

    def due(self) -> list[str]:
        """Containers whose lease has run out (still held until ``expire``)."""
        now = self.clock()
        return sorted(cid for cid, deadline in self._deadlines.items() if deadline <= now)

    def expire(self, container_id: str) -> None:
        self.drop(container_id)
        self.expired_at[container_id] = time.time()
        self.expired_total += 1

    def left(self, container_id: str) -> float | None:
        """Seconds until the lease on ``container_id`` runs out; None if it holds none."""
        deadline = self._deadlines.get(container_id)
        return None if deadline is None else max(0.0, deadline - self.clock())

    def __len__(self) -> int:
        return len(self._deadlines)
