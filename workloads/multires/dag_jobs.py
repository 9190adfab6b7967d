"""Falcon-style jobs: 10–20 sub-second tasks in a layered random DAG, with (CPU, memory)
demands whose dominant resource differs from task to task (Falcon §V; our reading).

The paper takes demands from the Google 2011 trace and says nothing of the DAGs, so we draw
2–4 layers with edge probability p (each non-root task keeps at least one parent), half
the tasks CPU-heavy and half memory-heavy, and lognormal durations around 100 ms.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workloads.model import Job

RESOURCES = ("cpu", "mem")
WORKER = (6.0, 12.0)  # the paper's EC2 worker: six processors, 12 GB


@dataclass(frozen=True)
class DagSpec:
    """Number of jobs, submission rate (jobs/s), tasks per job and DAG shape."""

    jobs: int
    rate: float
    min_tasks: int = 10
    max_tasks: int = 20
    layers: tuple[int, int] = (2, 4)
    edge_p: float = 0.3
    median_duration: float = 0.1


def _parents(rng: np.random.Generator, n: int, spec: DagSpec) -> tuple[tuple[int, ...], ...]:
    n_layers = int(rng.integers(spec.layers[0], spec.layers[1] + 1))
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n_layers - 1, n - 1), replace=False))
    layer = np.searchsorted(cuts, np.arange(n), side="right")
    out: list[tuple[int, ...]] = []
    for i in range(n):
        prev = np.flatnonzero(layer == layer[i] - 1)
        if prev.size == 0:
            out.append(())
            continue
        chosen = prev[rng.random(prev.size) < spec.edge_p]
        if chosen.size == 0:
            chosen = rng.choice(prev, size=1)
        out.append(tuple(int(p) for p in chosen))
    return tuple(out)


def _demands(rng: np.random.Generator, n: int) -> tuple[tuple[float, float], ...]:
    cpu_heavy = rng.random(n) < 0.5
    cpu = np.where(cpu_heavy, rng.uniform(1.0, 3.0, n), rng.uniform(0.25, 1.0, n))
    mem = np.where(cpu_heavy, rng.uniform(0.5, 2.0, n), rng.uniform(3.0, 6.0, n))
    return tuple((round(float(c) * 4) / 4, round(float(m) * 4) / 4) for c, m in zip(cpu, mem))


def generate(spec: DagSpec, seed: int) -> list[Job]:
    """Jobs submitted every 1/rate seconds."""
    rng = np.random.default_rng(seed)
    jobs = []
    for j in range(spec.jobs):
        n = int(rng.integers(spec.min_tasks, spec.max_tasks + 1))
        durs = np.clip(np.exp(np.log(spec.median_duration) + 0.5 * rng.standard_normal(n)), 0.01, 2.0)
        jobs.append(Job(j, j / spec.rate, tuple(round(float(d), 4) for d in durs),
                        demands=_demands(rng, n), parents=_parents(rng, n, spec)))
    return jobs
