"""Discrete-event kernel: a clock, a heap and a dispatcher. It knows no policy and no cluster.

Events are frozen values with a ``time`` field and a class-level ``tier``. The heap holds
``(time, tier, seq, event)`` with ``seq`` from a counter, so same-instant events run by tier and
then in the order they were scheduled; events themselves are never compared. Handlers are
registered per event type; a handler returns the new events it causes (or None) instead of
pushing them itself.
"""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from mypy_extensions import mypyc_attr

Handler = Callable[[Any], "Iterable[Any] | None"]


@mypyc_attr(native_class=False)  # an exception: mypyc compiles no subclass of a builtin
class SimulationError(RuntimeError):
    """The kernel was misused (event in the past, no handler for an event type)."""


class Kernel:
    __slots__ = ("now", "_heap", "_seq", "_handlers", "events", "_stopped")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()
        self._handlers: dict[type, Handler] = {}
        self.events = 0          # events dispatched so far
        self._stopped = False

    def on(self, event_type: type, handler: Handler) -> None:
        if event_type in self._handlers:
            raise SimulationError(f"a handler for {event_type.__name__} is already registered")
        self._handlers[event_type] = handler

    def schedule(self, ev: Any) -> None:
        if ev.time < self.now:
            raise SimulationError(f"event {ev!r} is scheduled in the past (now={self.now})")
        heapq.heappush(self._heap, (ev.time, ev.tier, next(self._seq), ev))

    def schedule_all(self, evs: Iterable[Any]) -> None:
        push, heap, seq, now = heapq.heappush, self._heap, self._seq, self.now
        for ev in evs:
            t = ev.time
            if t < now:
                raise SimulationError(f"event {ev!r} is scheduled in the past (now={now})")
            push(heap, (t, ev.tier, next(seq), ev))

    def advance(self, now: float) -> None:
        """Move the clock to ``now`` without dispatching (a live driver's wall clock); events
        scheduled before it that have not run yet still run, in order, at the next :meth:`run`."""
        if now > self.now:
            self.now = now

    def next_time(self) -> float:
        """Time of the next pending event (``inf`` if none): when a live driver must look again."""
        return self._heap[0][0] if self._heap else float("inf")

    def pending(self) -> int:
        return len(self._heap)

    def stop(self) -> None:
        """Make :meth:`run` return after the current event."""
        self._stopped = True

    def run(self, until: float = float("inf"), tick: Callable[[int, float], None] | None = None,
            tick_every: int = 1 << 16) -> None:
        """Dispatch events in (time, tier, seq) order until the heap is empty, ``until`` is
        passed or :meth:`stop` is called. ``tick(events, now)`` is called every ``tick_every``
        events (progress reporting)."""
        heap, pop, push, seq = self._heap, heapq.heappop, heapq.heappush, self._seq
        handlers = self._handlers
        n = self.events
        self._stopped = False
        if until == float("inf") and tick is None:
            # the common case, without the per-event checks of the general loop below
            try:
                while heap:
                    t, _, _, ev = pop(heap)
                    self.now = t
                    new = handlers[ev.__class__](ev)
                    n += 1
                    if new:
                        for e in new:
                            et = e.time
                            if et < t:
                                raise SimulationError(f"event {e!r} is scheduled in the past (now={t})")
                            push(heap, (et, e.tier, next(seq), e))
                    if self._stopped:
                        break
            except KeyError:
                if ev.__class__ in handlers:
                    raise
                raise SimulationError(f"no handler for {type(ev).__name__}") from None
            finally:
                self.events = n
            return
        while heap and not self._stopped:
            if heap[0][0] > until:
                break
            t, _, _, ev = pop(heap)
            self.now = t
            try:
                handler = handlers[type(ev)]
            except KeyError:
                raise SimulationError(f"no handler for {type(ev).__name__}") from None
            new = handler(ev)
            n += 1
            if new:
                for e in new:
                    et = e.time
                    if et < t:
                        raise SimulationError(f"event {e!r} is scheduled in the past (now={t})")
                    push(heap, (et, e.tier, next(seq), e))
            if tick is not None and not n % tick_every:
                tick(n, t)
        self.events = n
