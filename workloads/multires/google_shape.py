"""A generated trace with the Google 2011 trace's shape, for the Psychas–Ghaderi Fig. 5 study.

The real trace is not available offline, so we draw what Fig. 5 depends on (our reading):
many distinct, mostly small CPU and memory requests normalised to [0, 1] and correlated
(lognormal, quantised to 1/1024 like the trace's rescaled values), heavy-tailed durations,
and Poisson arrivals. The paper's size is max(CPU, memory); slots are 100 ms.
"""
from __future__ import annotations

import numpy as np

from workloads.model import Job

SLOT = 0.1
QUANTUM = 1 / 1024


def requests(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 2) CPU and memory requests, correlated, median ≈ 0.03, tail to 0.5."""
    z = rng.multivariate_normal([0.0, 0.0], [[1.0, 0.6], [0.6, 1.0]], n)
    raw = np.exp(np.log(0.03) + 0.9 * z)
    return np.clip(np.ceil(raw / QUANTUM) * QUANTUM, QUANTUM, 0.5)


def durations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Whole slots, lognormal with median 20 s, capped at 30 min."""
    raw = np.exp(np.log(20.0) + 1.2 * rng.standard_normal(n))
    return np.clip(np.round(raw / SLOT), 1, 18_000) * SLOT


def generate(servers: int, n_tasks: int, scaling: float, seed: int, base_load: float = 0.65) -> list[Job]:
    """``n_tasks`` single-task jobs; arrival times are the base trace's divided by ``scaling``
    (the paper's 1/β), the base offering ``base_load`` of ``servers`` unit servers."""
    rng = np.random.default_rng(seed)
    req = requests(rng, n_tasks)
    size = req.max(axis=1)
    dur = durations(rng, n_tasks)
    rate = base_load * servers / float((size * dur).mean())  # jobs per second at scaling 1
    gaps = rng.exponential(1.0 / rate, n_tasks)
    submits = np.floor(np.cumsum(gaps) / scaling / SLOT) * SLOT
    return [Job(i, float(submits[i]), (float(dur[i]),), demands=(tuple(map(float, req[i])),))
            for i in range(n_tasks)]
