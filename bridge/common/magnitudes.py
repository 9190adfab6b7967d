"""The magnitudes a cluster's history can mean, in one place, for every reader of times.

A trace, a generator's output, a Spark event log or a ResourceManager's reply that holds a time
beyond these is a mistake or a hostile file: read as it stands it simulates to nonsense (a job
submitted at 1e300 s completes at 0.0, as float sums lose it) or reports a mean of -inf. Readers
refuse it with one error that names the bound (:func:`time_s`, :func:`time_ms`).
"""
from __future__ import annotations

import math

MAX_TIME_S = 1e10
"""The largest time, in seconds, a reader accepts: a trace's submission or task duration, an
event log's epoch time or duration. About 317 years: past any cluster's history (epoch seconds reach it in
2286), and small enough that a float still resolves microseconds."""

MAX_TIME_MS = MAX_TIME_S * 1000.0
""":data:`MAX_TIME_S` in milliseconds, the unit of Spark's and YARN's times."""


def _bounded(value: object, what: str, limit: float, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"{what} is {type(value).__name__}, not a number")
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        number = math.inf
    except ValueError:
        raise ValueError(f"{what} {str(value)[:40]!r} is not a number") from None
    if not 0 <= number <= limit:  # NaN fails both comparisons
        raise ValueError(f"{what} {str(value)[:40]} is not a time within [0, {limit:g}] {unit}")
    return number


def time_s(value: object, what: str) -> float:
    """``value`` (a JSON number or its text) as seconds within [0, MAX_TIME_S]; ValueError or
    TypeError naming ``what`` and the bound otherwise."""
    return _bounded(value, what, MAX_TIME_S, "s")


def time_ms(value: object, what: str) -> float:
    """``value`` as milliseconds (an epoch time, a duration) within [0, MAX_TIME_MS]; ValueError or
    TypeError naming ``what`` and the bound otherwise."""
    return _bounded(value, what, MAX_TIME_MS, "ms")
