"""The policy host: answers the Spark plugin's offer rounds with a planner's placements.

Transport-free: ``handle`` takes one request string and returns the reply string, so the same
host serves a PySpark driver in-process (py4j callback) and many applications as a daemon (TCP).
It keeps every application's state, asks for a snapshot when it has none (daemon restarted),
turns planner exceptions into error replies (the plugin then falls back to Spark for that round)
and keeps a bounded log of its decisions.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bridge.live.spark_protocol import (LiveEvent, OfferRound, Placement, ProtocolError, decode,
                                        encode_error, encode_placement, encode_pong, encode_resync, parse_event,
                                        parse_round)
from bridge.live.spark_state import AppState, LiveCluster

log = logging.getLogger(__name__)


class RoundPlanner(Protocol):
    """Turns one application's offer round into a placement; sees every application's state."""

    name: str

    def rebuild(self, state: AppState) -> None:
        """An application's state was rebuilt from a snapshot: drop what was derived from it."""

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        """The placement for ``rnd``; ``events`` (already applied to ``cluster``) came with it."""


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One answered round, for logs, metrics and tests."""

    app: str
    round: int
    placement: Placement
    micros: int


class PolicyHost:
    """Serves offer rounds for any number of applications with one planner (thread-safe)."""

    def __init__(self, planner: RoundPlanner, history: int = 10_000) -> None:
        self.planner = planner
        self.cluster = LiveCluster()
        self.decisions: deque[DecisionRecord] = deque(maxlen=history)
        self._lock = threading.Lock()
        self._failing = False
        self._mismatch_warned: set[str] = set()

    def handle(self, text: str) -> str:
        """One request in, one reply out; never raises."""
        try:
            msg = decode(text)
            if msg.get("kind") == "ping":
                return encode_pong()
            rnd = parse_round(msg)
            events = [parse_event(e) for e in rnd.events]
        except ProtocolError as e:
            log.warning("schedbridge host: bad request: %s", e)
            return encode_error(str(e))
        with self._lock:
            if rnd.snapshot is not None:
                self._check_request(rnd)
                state = self.cluster.reset(rnd.app, rnd.snapshot, rnd.request)
                log.info("schedbridge host: %s state rebuilt from snapshot: %d executors, %d running "
                         "tasks, %d active jobs", rnd.app, len(state.executors), len(state.running),
                         len(state.jobs))
                self.planner.rebuild(state)
            elif rnd.app not in self.cluster:
                return encode_resync()
            self.cluster.apply(rnd.app, events)
            return self._plan(rnd, events)

    def _plan(self, rnd: OfferRound, events: Sequence[LiveEvent]) -> str:
        start = time.perf_counter_ns()
        try:
            placement = self.planner.plan(rnd, events, self.cluster)
        except Exception as e:  # noqa: BLE001 - any policy bug must only cost this round
            if not self._failing:
                log.warning("schedbridge host: policy %s failed (%s: %s); the plugin falls back to "
                            "Spark for such rounds", self.planner.name, type(e).__name__, e)
            self._failing = True
            return encode_error(f"{type(e).__name__}: {e}")
        self._failing = False
        micros = (time.perf_counter_ns() - start) // 1000
        self.decisions.append(DecisionRecord(rnd.app, rnd.round, placement, micros))
        if (placement.grants or placement.preempt) and log.isEnabledFor(logging.INFO):  # formatting costs per round
            log.info("schedbridge host: %s round %d: %s%s", rnd.app, rnd.round,
                     " ".join(f"s{g.stage}.{g.attempt}->{g.executor}x{g.slots}" for g in placement.grants),
                     f" preempt {list(placement.preempt)}" if placement.preempt else "")
        return encode_placement(placement)

    def _check_request(self, rnd: OfferRound) -> None:
        req = rnd.request
        if req is not None and req.policy != self.planner.name and rnd.app not in self._mismatch_warned:
            self._mismatch_warned.add(rnd.app)
            log.warning("schedbridge host: %s asked for policy %r; this host runs %r", rnd.app,
                        req.policy, self.planner.name)
