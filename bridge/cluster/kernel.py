"""Discrete-event kernel: a clock, a heap and a dispatcher. It knows no policy and no cluster.

Events are :class:`~policies.framework.api.BaseEvent` values: a ``time`` and a ``tier`` of their class.
The queue (:class:`~policies.common.heap.MinHeap`) holds each event under its time, tie-broken by
``tier * 2**SEQ_BITS + seq`` with ``seq`` from a counter, so same-instant events run by tier and
then in the order they were scheduled; events themselves are never compared.
Handlers are registered per event type; a handler returns a list of the new events it causes (or
None) instead of pushing them itself (a list: compiled, the loop over them is native): the event it
handles stays at the top of the heap until it returns, and the first event it returns takes that
place (one sift of the heap, not two).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, cast

from mypy_extensions import mypyc_attr

from policies.framework.api import BaseEvent
from policies.common.heap import MinHeap

Handler = Callable[[Any], "list[Any] | None"]
SEQ_BITS: Final = 40   # Final: compiled, a constant rather than a global's lookup per event
"""Bits of an entry's key below its tier: 2**40 (10**12) events per run before two tiers mix."""


@mypyc_attr(native_class=False)  # an exception: mypyc compiles no subclass of a builtin
class SimulationError(RuntimeError):
    """The kernel was misused (event in the past, no handler for an event type)."""


class Kernel:
    __slots__ = ("now", "_heap", "_seq", "_handlers", "events", "_stopped")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap = MinHeap()
        self._seq = 0
        self._handlers: dict[type, Handler] = {}
        self.events = 0          # events dispatched so far
        self._stopped = False

    def on(self, event_type: type, handler: Handler) -> None:
        if event_type in self._handlers:
            raise SimulationError(f"a handler for {event_type.__name__} is already registered")
        self._handlers[event_type] = handler

    def schedule(self, ev: BaseEvent) -> None:
        self.schedule_all((ev,))

    def schedule_all(self, evs: Iterable[BaseEvent]) -> None:
        heap, seq, now = self._heap, self._seq, self.now
        for ev in evs:
            t = ev.time
            if t < now:
                raise SimulationError(f"event {ev!r} is scheduled in the past (now={now})")
            seq += 1
            heap.push(t, 0.0, (ev.tier << SEQ_BITS) + seq, ev)
        self._seq = seq

    def advance(self, now: float) -> None:
        """Move the clock to ``now`` without dispatching (a live driver's wall clock); events
        scheduled before it that have not run yet still run, in order, at the next :meth:`run`."""
        if now > self.now:
            self.now = now

    def next_time(self) -> float:
        """Time of the next pending event (``inf`` if none): when a live driver must look again."""
        return self._heap.top_key() if self._heap else float("inf")

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
        heap, seq = self._heap, self._seq
        handlers = self._handlers
        ev: BaseEvent
        e: BaseEvent
        new: list[Any] | None
        n = self.events
        self._stopped = False
        bounded = until != float("inf")
        next_tick = (n // tick_every + 1) * tick_every if tick is not None else -1
        done = True     # whether the event at the top has left the heap
        try:
            while heap:
                t = heap.top_key()
                if bounded and t > until:
                    break
                ev = cast(BaseEvent, heap.top_item())
                self.now = t
                done = False
                new = handlers[ev.__class__](ev)
                n += 1
                if new:
                    for e in new:
                        et = e.time
                        if et < t:
                            raise SimulationError(f"event {e!r} is scheduled in the past (now={t})")
                        seq += 1
                        if done:
                            heap.push(et, 0.0, (e.tier << SEQ_BITS) + seq, e)
                        else:   # the first takes the handled event's place: one sift instead of two
                            heap.replace_top(et, 0.0, (e.tier << SEQ_BITS) + seq, e)
                            done = True
                if not done:
                    heap.pop()
                    done = True
                if self._stopped:
                    break
                if n == next_tick and tick is not None:
                    tick(n, t)
                    next_tick += tick_every
        except KeyError:
            if ev.__class__ in handlers:
                raise
            raise SimulationError(f"no handler for {type(ev).__name__}") from None
        finally:
            if not done:    # a handler failed: its event is consumed all the same
                heap.pop()
            self.events = n
            self._seq = seq
