"""Randomized work stealing (Hawk): who to ask, and what a victim gives away."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

E = TypeVar("E")


def pick_victims(draw: Callable[[], float], attempts: int, lo: int, hi: int, thief: int,
                 allow_thief: bool = False) -> tuple[int, ...]:
    """``attempts`` victims drawn uniformly (with replacement) from ``[lo, hi)`` with ``draw`` (a
    ``random.Random``'s ``random``, looked up once by the caller). A draw that hits the thief is
    redrawn, unless ``allow_thief`` (the authors' simulator: that attempt is wasted, since the
    thief's own queue is empty)."""
    span = hi - lo
    if span <= 0 or (span == 1 and lo == thief and not allow_thief):
        return ()
    out = [0] * attempts
    hit = False
    for i in range(attempts):   # a loop, not a comprehension: compiled, no boxed counter
        v = out[i] = lo + int(draw() * span)
        hit = hit or v == thief
    if hit and not allow_thief:   # redraw the thief, in order, so the draws stay deterministic
        for i, v in enumerate(out):
            while v == thief:
                v = lo + int(draw() * span)
            out[i] = v
    return tuple(out)


def first_short_group_after_long(queue: Sequence[E], is_long: Callable[[E], bool],
                                 running_short: bool, cap: int = 10_000) -> tuple[int, int]:
    """Hawk's rule (Fig. 2.3): the slice ``[i, j)`` of ``queue`` holding the first consecutive
    group of short entries that comes after a long one.

    If the victim is running a short task, its leading run of short entries is not stealable
    (they are not blocked); skip it, then skip the following long entries, and take the maximal
    run of shorts after them (at most ``cap``). If it runs a long task (or nothing), the
    stealable group is the leading run of shorts right behind that long task (when idle there is
    nothing blocked at the head, so the rule treats it like running short). Returns ``(i, i)``
    when nothing is stealable."""
    n = len(queue)
    i = 0
    if running_short:
        while i < n and not is_long(queue[i]):
            i += 1
    while i < n and is_long(queue[i]):
        i += 1
    j = i
    while j < n and j - i < cap and not is_long(queue[j]):
        j += 1
    return i, j
