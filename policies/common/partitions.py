"""Static cluster partitions as contiguous node-id ranges (thesis §0.4 [X]).

``small_pct`` is the share of nodes, counted from id 0, where short tasks may go (100 = the whole
cluster); ``big_pct`` is the share, counted from the highest id, where long tasks may go. The
short-only partition is ``[0, n - big)`` and the general partition ``[n - big, n)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


def check_percent(name: str, value: float) -> None:
    if not 0 <= value <= 100 or math.isnan(value):
        raise ValueError(f"{name} must be a percentage within [0, 100], got {value}")


@dataclass(frozen=True, slots=True)
class Partition:
    n: int
    short_lo: int
    short_hi: int     # short tasks may go to [short_lo, short_hi)
    long_lo: int
    long_hi: int      # long tasks may go to [long_lo, long_hi)

    @classmethod
    def from_percent(cls, n: int, small_pct: float = 100.0, big_pct: float = 100.0) -> Partition:
        check_percent("small partition", small_pct)
        check_percent("big partition", big_pct)
        short_n = max(1, round(n * small_pct / 100)) if small_pct > 0 else 0
        big_n = max(1, round(n * big_pct / 100)) if big_pct > 0 else 0
        return cls(n, 0, short_n, n - big_n, n)

    @property
    def general(self) -> range:
        """Nodes where long tasks may run (victims for stealing)."""
        return range(self.long_lo, self.long_hi)

    @property
    def short_only(self) -> range:
        """Nodes reserved for short tasks."""
        return range(self.short_lo, min(self.short_hi, self.long_lo))

    def in_general(self, node: int) -> bool:
        return self.long_lo <= node < self.long_hi
