"""Multi-resource demand/capacity vectors: the arithmetic every packing policy shares.

Vectors are plain tuples of floats, one entry per resource type, in the order the
cluster declares (for example ``("cpu", "mem")``). Keeping them as tuples keeps the
policy code free of any container type and makes them hashable and immutable.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

Vector = tuple[float, ...]
K = TypeVar("K", bound=Hashable)

# Slack for float comparisons: demands summed over many tasks must not fail a fit
# test by one ulp.
EPS = 1e-9


def add(a: Sequence[float], b: Sequence[float]) -> Vector:
    """Component-wise sum."""
    return tuple(x + y for x, y in zip(a, b, strict=True))


def sub(a: Sequence[float], b: Sequence[float]) -> Vector:
    """Component-wise difference ``a - b``. Loops by index, as :func:`fits` does."""
    _same_length(a, b)
    return tuple([a[i] - b[i] for i in range(len(a))])


def total(vectors: Iterable[Sequence[float]], dims: int) -> Vector:
    """Sum of many vectors of length ``dims`` (the zero vector when empty)."""
    out = [0.0] * dims
    for v in vectors:
        for h, x in enumerate(v):
            out[h] += x
    return tuple(out)


def ceiling(vectors: Iterable[Sequence[float]], dims: int) -> Vector:
    """Component-wise maximum of many vectors of length ``dims`` (the zero vector when empty): a
    demand that does not fit it fits none of them."""
    out = [0.0] * dims
    for v in vectors:
        for h, x in enumerate(v):
            if x > out[h]:
                out[h] = x
    return tuple(out)


def fits(demand: Sequence[float], available: Sequence[float]) -> bool:
    """True when ``demand`` fits in ``available`` on every resource. Loops by index: compiled
    (:mod:`policies.framework.compiled`), a generator over ``zip(..., strict=True)`` costs some
    4,000 instructions a call (the Ursa family's worker queues call this per task started)."""
    _same_length(demand, available)
    for i in range(len(demand)):
        if not demand[i] <= available[i] + EPS:
            return False
    return True


def _same_length(a: Sequence[float], b: Sequence[float]) -> None:
    """What ``zip(..., strict=True)`` checks: vectors of different lengths are a caller's error."""
    if len(a) != len(b):
        raise ValueError(f"vectors of lengths {len(a)} and {len(b)}")


def normalized(demand: Sequence[float], capacity: Sequence[float]) -> Vector:
    """Demand as a share of capacity, so CPU cores and GB of memory become comparable."""
    return tuple(d / c if c > 0 else 0.0 for d, c in zip(demand, capacity, strict=True))


def dominant(share: Sequence[float]) -> int:
    """Index of the resource with the largest (normalised) demand; ties go to the lowest index."""
    return max(range(len(share)), key=lambda h: (share[h], -h))


def leftover(available: Sequence[float], demand: Sequence[float], capacity: Sequence[float]) -> float:
    """What remains on a server after placing ``demand``: normalised sum over resources."""
    return sum(normalized(sub(available, demand), capacity))


def most_matched(demand: Sequence[float],
                 servers: Iterable[tuple[K, Sequence[float], Sequence[float]]]) -> K | None:
    """Best fit: among ``(key, available, capacity)`` servers that fit ``demand``, the one
    left with the least remaining resources. Ties keep the first server given, so callers
    control tie-breaking by the order they pass servers in. None when nothing fits."""
    best: tuple[float, K] | None = None
    for key, available, capacity in servers:
        if not fits(demand, available):
            continue
        rest = leftover(available, demand, capacity)
        if best is None or rest < best[0] - EPS:
            best = (rest, key)
    return None if best is None else best[1]
