"""Ursa's job orders (§4.2.2–4.2.3): EJF and SRJF, plus the worker-queue monotask order."""
from __future__ import annotations

from collections.abc import Sequence


def ejf_bonus(weight: float, submitted: float, now: float) -> float:
    """EJF: W·T added to every stage score of a job submitted T seconds ago."""
    return weight * (now - submitted)


def srjf_score(remaining: Sequence[float], cluster_remaining: Sequence[float]) -> float:
    """SRJF: Σ_r (2L_r − R_r)·R_r / L_r, the job's remaining work R weighted up on
    resources the admitted jobs contend for (L = all admitted jobs' remaining work).
    Our reading of "the dot product of (2L − R) and R normalized by L"; smaller is first."""
    return sum((2 * total - r) * r / total for r, total in zip(remaining, cluster_remaining, strict=True) if total > 0)


def srjf_priority(remaining: Sequence[float], cluster_remaining: Sequence[float]) -> float:
    """SRJF priority: the inverse of the score (a finished job has infinite priority)."""
    s = srjf_score(remaining, cluster_remaining)
    return float("inf") if s <= 0 else 1.0 / s


def monotask_order(job_rank: tuple[float, ...], input_size: float, is_cpu: bool) -> tuple[float, ...]:
    """Worker-queue sort key (MO): job order first; within a job CPU monotasks by
    descending input (big ones start early), network/disk ascending (unblock CPU sooner)."""
    return (*job_rank, -input_size if is_cpu else input_size)
