"""TPC-H-shaped monotask DAGs for the Ursa placement ranking (our reading of §5's workload).

A query scans 1–3 tables (CPU stages), then joins/aggregates level by level: each level is
a shuffle (network monotasks reading every parent stage, a barrier) followed by a CPU stage.
DAG depth is 2–8 stages; parallelism and per-task durations vary per stage (lognormal,
median 1 s), so stages are irregular. Jobs arrive as a Poisson stream.
"""
from __future__ import annotations

import numpy as np

from workloads.model import Job

RESOURCES = ("cpu", "net", "mem")
CPU, NET = (1.0, 0.0), (0.0, 1.0)


def _stages(rng: np.random.Generator) -> list[tuple[tuple[float, float], tuple[int, ...]]]:
    """(kind, parent stages) in topological order."""
    scans = int(rng.integers(1, 4))
    stages: list[tuple[tuple[float, float], tuple[int, ...]]] = [(CPU, ())] * scans
    frontier = list(range(scans))
    for _ in range(int(rng.integers(1, 4))):
        shuffle = len(stages)
        stages.append((NET, tuple(frontier)))
        stages.append((CPU, (shuffle,)))
        frontier = [len(stages) - 1]
    return stages


def generate(jobs: int, rate: float, seed: int, max_parallelism: int = 16, mem: float = 2.0) -> list[Job]:
    rng = np.random.default_rng(seed)
    submits = np.cumsum(rng.exponential(1.0 / rate, jobs)) - 1.0 / rate
    out = []
    for j in range(jobs):
        demands, durations, stage_of = [], [], []
        stages = _stages(rng)
        for s, (kind, _) in enumerate(stages):
            width = int(rng.integers(2, max_parallelism + 1))
            median = float(np.exp(rng.normal(0.0, 0.5)))
            for d in np.exp(np.log(median) + 0.4 * rng.standard_normal(width)):
                demands.append((*kind, mem))
                durations.append(round(float(min(d, 20.0)), 3))
                stage_of.append(s)
        out.append(Job(j, max(0.0, float(submits[j])), tuple(durations), demands=tuple(demands),
                       stage_of=tuple(stage_of), stage_parents=tuple(p for _, p in stages), name=f"tpch-{j}"))
    return out
