"""Randomized work stealing (Hawk): who to ask, and what a victim gives away."""
from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Sequence
from random import Random
from typing import TypeVar

from librt.vecs import vec
from mypy_extensions import i64

E = TypeVar("E")

BLOCK = 512
"""Values :class:`Draws` makes at a time."""


class Draws:
    """The values ``rng.random()`` would return, in its order, made a block at a time: one
    ``getrandbits`` call takes the Mersenne Twister's next 32-bit words, which ``random()``
    combines two to a value as done here, so a value costs an array read, not a Python call and
    a boxed float. ``rng`` runs up to a block ahead: only for a generator nothing else draws from."""

    def __init__(self, rng: Random, block: int = BLOCK) -> None:
        self.rng = rng
        self.block = block
        self.values = vec[float]()
        self.at: i64 = 0

    def next(self) -> float:
        """The next value of ``rng.random()``."""
        if self.at == len(self.values):
            self._refill()
        v = self.values[self.at]
        self.at += 1
        return v

    def _refill(self) -> None:
        n = self.block
        words = array("I", self.rng.getrandbits(64 * n).to_bytes(8 * n, "little"))  # first word lowest
        assert words.itemsize == 4
        if sys.byteorder == "big":
            words.byteswap()
        # CPython's random_random: (a * 2**26 + b) / 2**53 of the next two words' top 27 and 26 bits
        self.values = vec[float]([((words[2 * i] >> 5) * 67108864.0 + (words[2 * i + 1] >> 6))
                                  * (1.0 / 9007199254740992.0) for i in range(n)])
        self.at = 0


def pick_victims(draws: Draws, attempts: int, lo: int, hi: int, thief: int,
                 allow_thief: bool = False) -> tuple[int, ...]:
    """``attempts`` victims drawn uniformly (with replacement) from ``[lo, hi)`` with ``draws``. A
    draw that hits the thief is redrawn, unless ``allow_thief`` (the authors' simulator: that
    attempt is wasted, since the thief's own queue is empty)."""
    span = hi - lo
    if span <= 0 or (span == 1 and lo == thief and not allow_thief):
        return ()
    out = [0] * attempts
    hit = False
    for i in range(attempts):   # a loop, not a comprehension: compiled, no boxed counter
        v = out[i] = lo + int(draws.next() * span)
        hit = hit or v == thief
    if hit and not allow_thief:   # redraw the thief, in order, so the draws stay deterministic
        for i, v in enumerate(out):
            while v == thief:
                v = lo + int(draws.next() * span)
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
