"""The universal partition of (0, 1] into 2J size classes and the 4J−4 reduced
configurations of VQS (Psychas & Ghaderi, Eq. 6, Def. 5 and Eq. 7).

Boundaries are compared exactly with rationals: a float size like 2/3 must land in the
class the paper's half-open intervals assign it to, not in its neighbour.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property


@dataclass(frozen=True)
class Partition:
    """Classes I_{2m} = ((2/3)/2^m, 1/2^m] and I_{2m+1} = ((1/2)/2^m, (2/3)/2^m], m < J.

    Sizes at most 1/2^J ("tiny") join the last class and occupy 1/2^J when placed.
    """

    J: int

    def __post_init__(self) -> None:
        if self.J < 2:
            raise ValueError(f"VQS needs J > 1, got J={self.J}")

    @property
    def classes(self) -> int:
        return 2 * self.J

    @property
    def tiny(self) -> Fraction:
        return Fraction(1, 2 ** self.J)

    def bounds(self, j: int) -> tuple[Fraction, Fraction]:
        """(inf, sup] of class j; the last class also takes the tiny sizes below inf."""
        m, odd = divmod(j, 2)
        top = Fraction(1, 2 ** m)
        return (top / 2, top * 2 / 3) if odd else (top * 2 / 3, top)

    def classify(self, size: float) -> int:
        """Class of a job of this size, 0 < size ≤ 1. Powers of two compare exactly in
        floating point; the 2/3 boundaries fall back to rationals only when close."""
        if not 0 < size <= 1:
            raise ValueError(f"job size must lie in (0, 1], got {size}")
        if size <= 2.0 ** -self.J:
            return self.classes - 1
        m = 0
        while size <= 2.0 ** -(m + 1):
            m += 1
        scaled = 3 * size * 2 ** m  # > 2 exactly when size > (2/3)/2^m
        above = scaled > 2 if abs(scaled - 2) > 1e-9 else Fraction(size) * 3 * 2 ** m > 2
        return 2 * m if above else 2 * m + 1

    def effective_size(self, size: float) -> float:
        """The capacity a job occupies: its own size, or 1/2^J for a tiny job."""
        return max(size, float(self.tiny))


@dataclass(frozen=True)
class Configuration:
    """A reduced configuration: ``counts`` maps class -> number of jobs (Def. 5)."""

    family: str
    m: int
    counts: tuple[tuple[int, int], ...]

    def count(self, j: int) -> int:
        return dict(self.counts).get(j, 0)

    @cached_property
    def reserves_class1(self) -> bool:
        """Families C and D hold one class-1 job beside one other class."""
        return self.count(1) == 1

    @cached_property
    def other_class(self) -> int:
        """The class this configuration serves besides the optional class-1 job."""
        return next(j for j, _ in self.counts if j != 1)

    def weight(self, queue_lengths: Sequence[int]) -> int:
        """Eq. (5): ⟨k, Q⟩ with Q_j the number of queued class-j jobs."""
        return sum(k * queue_lengths[j] for j, k in self.counts)

    def load(self, partition: Partition) -> Fraction:
        """Capacity used when every job has its class's upper-rounded size."""
        return sum((k * partition.bounds(j)[1] for j, k in self.counts), Fraction(0))


def reduced_configurations(J: int) -> tuple[Configuration, ...]:
    """𝒦_RED^(J), in the paper's order: A_m, B_m, C_m, D_m (4J − 4 in total, Eq. 7)."""
    a = [Configuration("A", m, ((2 * m, 2 ** m),)) for m in range(J)]
    b = [Configuration("B", m, ((2 * m + 1, 3 * 2 ** (m - 1)),)) for m in range(1, J)]
    c = [Configuration("C", m, ((1, 1), (2 * m, 2 ** m // 3))) for m in range(2, J)]
    d = [Configuration("D", m, ((1, 1), (2 * m + 1, 2 ** (m - 1)))) for m in range(1, J)]
    return tuple(a + b + c + d)


def max_weight(configs: Sequence[Configuration], queue_lengths: Sequence[int]) -> Configuration:
    """Eq. (8): the configuration of largest weight; ties keep list order (our reading)."""
    best = configs[0]
    for k in configs[1:]:
        if k.weight(queue_lengths) > best.weight(queue_lengths):
            best = k
    return best
