"""When Ursa retries a placement pass: a grid of instants ``origin + k·interval``.

The grid starts at the last pass that was not one of its ticks (an arrival or completion
instant) and every retry while ready tasks remain unplaced lands on it. Each tick is computed
from the origin by one multiplication, not by adding the interval tick after tick, so a
scheduler that skipped ticks which could place nothing finds the next one in constant time,
and at exactly the instant that retrying every interval would have reached.
"""
from __future__ import annotations

import math


class RetryGrid:
    """The retry instants, the index of the next one, and whether retrying is paused
    (``stalled``: the last pass placed nothing and nothing has changed since)."""

    __slots__ = ("interval", "origin", "k", "stalled")

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.origin: float | None = None
        self.k = 0
        self.stalled = False

    def _tick(self, k: int) -> float:
        assert self.origin is not None
        return self.origin + k * self.interval

    def first_at_or_after(self, at: float) -> int:
        """Index of the first tick at or after ``at``, counting from the next one due."""
        assert self.origin is not None
        k = max(self.k, math.ceil((at - self.origin) / self.interval))
        while self._tick(k) < at:    # the division may round either way by an ulp
            k += 1
        while k > self.k and self._tick(k - 1) >= at:
            k -= 1
        return k

    def is_tick(self, at: float) -> bool:
        return self.origin is not None and self._tick(self.first_at_or_after(at)) == at

    def after_pass(self, at: float) -> float:
        """The retry after a pass at ``at``: the next tick, on a new grid from ``at`` unless
        ``at`` is a tick of this one."""
        if self.is_tick(at):
            self.k = self.first_at_or_after(at) + 1
        else:
            self.origin, self.k = at, 1
        self.stalled = False
        return self._tick(self.k)

    def stall(self, at: float) -> None:
        """A pass at ``at`` placed nothing: no retry until something changes (:meth:`resume`)."""
        self.after_pass(at)
        self.stalled = True

    def resume(self, at: float) -> float:
        """Leave a stall at ``at``: the first tick at or after it (the ticks skipped in between
        would have placed nothing)."""
        self.stalled = False
        self.k = self.first_at_or_after(at)
        return self._tick(self.k)

    def clear(self) -> None:
        """Nothing is waiting: the next pass starts a new grid."""
        self.origin, self.k, self.stalled = None, 0, False
