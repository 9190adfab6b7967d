"""Psychas–Ghaderi workloads: one single-task job per paper "job", arriving at slot starts.

Arrivals per slot are Poisson; service is geometric (each slot the job completes with
probability μ) or deterministic, always a whole number of slots, so departures fall on slot
boundaries. Sizes are demands on a single resource of the given capacity.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from workloads.model import Job

SizeDraw = Callable[[np.random.Generator, int], np.ndarray]
ServiceDraw = Callable[[np.random.Generator, int], np.ndarray]


@dataclass(frozen=True)
class SlottedSpec:
    """Arrival rate (jobs per slot), horizon (slots), size and service-time draws."""

    rate: float
    horizon: int
    sizes: SizeDraw
    service: ServiceDraw
    slot: float = 1.0


def geometric(mu: float) -> ServiceDraw:
    """Geometric service with mean 1/μ slots (support ≥ 1)."""
    return lambda rng, n: rng.geometric(mu, n)


def deterministic(slots: int) -> ServiceDraw:
    return lambda rng, n: np.full(n, slots)


def discrete(values: tuple[float, ...], probs: tuple[float, ...]) -> SizeDraw:
    return lambda rng, n: rng.choice(np.array(values), size=n, p=np.array(probs))


def uniform(lo: float, hi: float) -> SizeDraw:
    return lambda rng, n: rng.uniform(lo, hi, n)


def generate(spec: SlottedSpec, seed: int) -> list[Job]:
    """Jobs in submission order; ties within a slot keep generation order."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(spec.rate, spec.horizon)
    n = int(counts.sum())
    sizes = spec.sizes(rng, n)
    service = spec.service(rng, n)
    submits = np.repeat(np.arange(spec.horizon), counts)
    return [Job(i, float(submits[i]) * spec.slot, (float(service[i]) * spec.slot,),
                demands=((float(sizes[i]),),))
            for i in range(n)]


def fig3a(rate: float = 0.014, horizon: int = 300_000) -> SlottedSpec:
    """One unit server; sizes 0.4/0.6 equally likely; geometric service, mean 100 slots."""
    return SlottedSpec(rate, horizon, discrete((0.4, 0.6), (0.5, 0.5)), geometric(0.01))


def fig3b(rate: float = 0.0306, horizon: int = 300_000) -> SlottedSpec:
    """One server of capacity 10; sizes 2 and 5 in ratio 2:1; deterministic 100-slot service."""
    return SlottedSpec(rate, horizon, discrete((2.0, 5.0), (2 / 3, 1 / 3)), deterministic(100))


def fig4(alpha: float, large: bool, servers: int = 5, horizon: int = 200_000) -> SlottedSpec:
    """Unif[0.01, 0.19] (a) or Unif[0.1, 0.9] (b) sizes, μ = 0.01, rate α·μ·L / R̄."""
    lo, hi = (0.1, 0.9) if large else (0.01, 0.19)
    mean = (lo + hi) / 2
    return SlottedSpec(alpha * 0.01 * servers / mean, horizon, uniform(lo, hi), geometric(0.01))
