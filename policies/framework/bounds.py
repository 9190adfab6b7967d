"""Explicit ranges for the numeric parameters of policy configs.

Every ``int`` or ``float`` field of a registered policy's config declares the values a real
cluster or study could need, ``field(default=..., metadata=within(low, high))``, and the config's
``__post_init__`` calls :func:`check_bounds`. A value outside is one ``ValueError`` naming the
parameter and its range (the registry makes it a ``ConfigError``), so a huge count never
allocates until memory runs out, a tiny period never makes a run endless (periods and durations
are at least 1 ms of simulated time) and nothing downstream sees an infinity.
``tests/unit/test_numeric_ranges.py`` holds every registered policy to it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

METADATA_KEY = "schedbridge.bounds"
MS = 0.001           # the shortest period or duration a parameter may give, in seconds
DAY = 86_400.0       # the longest period a parameter may give, in seconds
LONG = 1e9           # the longest task duration a cutoff may name, in seconds (~31 years)


@dataclass(frozen=True)
class Bounds:
    """``low <= value <= high``, or exactly 0 where ``zero_off`` (0 switches the feature off)."""

    low: float
    high: float
    zero_off: bool = False

    def admits(self, value: float) -> bool:
        return self.low <= value <= self.high or (self.zero_off and value == 0)

    def describe(self) -> str:
        span = f"within [{self.low:g}, {self.high:g}]"
        return f"0 (off) or {span}" if self.zero_off else span


def within(low: float, high: float, *, zero_off: bool = False) -> dict[str, Any]:
    """Field metadata declaring the range of a numeric parameter."""
    return {METADATA_KEY: Bounds(low, high, zero_off)}


def bounds_of(cls: Any) -> dict[str, Bounds]:
    """The declared range of each parameter of config class (or instance) ``cls``."""
    return {f.name: f.metadata[METADATA_KEY] for f in dataclasses.fields(cls) if METADATA_KEY in f.metadata}


def check_bounds(config: Any) -> None:
    """Raise ``ValueError`` for the first parameter of ``config`` outside its declared range."""
    for name, bounds in bounds_of(config).items():
        value = getattr(config, name)
        if not bounds.admits(value):
            raise ValueError(f"{name} must be {bounds.describe()}, got {value!r}")


# Ranges several configs share.
CUTOFF = within(0, LONG)          # a short/long cutoff on estimated task durations, seconds
PERCENT = within(0, 100)          # a share of the nodes (partitions), in percent
FRACTION = within(0, 1)
STARVATION_CAP = within(0, 1e6)   # a bypass budget, in estimated task durations
PROBE_RATIO = within(0.01, 500)   # probes per task
MIN_PROBES = within(0, 100_000)   # probes per job, whatever its size
MASTERS = within(1, 10_000)
SUSPENDED_PER_NODE = within(0, 10_000)   # suspended tasks a worker may hold; 0: no limit
ESTIMATE_NOISE = within(0, 100)   # relative error of a runtime estimate
