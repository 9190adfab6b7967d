"""Simulator benchmark: events/s, wall time and peak memory per policy on fixed traces.

Run: ``.venv/bin/python -m bench.sim_bench [--jobs N] [--nodes N] [--policy NAME ...]`` or
``schedbridge bench sim``. The traces are generated here, from a fixed seed, so the figures stay
comparable across commits: a Yahoo-sized mix (24,262 jobs, ~1.2M tasks, 9.4% long jobs holding
~98% of the task-seconds, per-task Gaussian(mean, 2*mean) durations without negatives, Poisson
arrivals) sized to load the cluster at about ``--load``.
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import tracemalloc
from collections.abc import Sequence

from workloads.model import Job

YAHOO_JOBS = 24_262
LONG_FRACTION = 0.0941
# (mean tasks per job, mean task duration in s) for the short and the long class
SHORT = (30.0, 10.0)
LONG = (240.0, 800.0)
CUTOFF = 90.5811


def yahoo_like(n_jobs: int = YAHOO_JOBS, nodes: int = 4000, load: float = 0.9, seed: int = 1) -> list[Job]:
    """A fixed synthetic trace shaped like the thesis' Yahoo trace (see the module docstring)."""
    rng = random.Random(seed)
    shapes = []
    work = 0.0
    for _ in range(n_jobs):
        long = rng.random() < LONG_FRACTION
        tasks_mean, dur_mean = LONG if long else SHORT
        n = max(1, round(rng.expovariate(1 / tasks_mean)))
        mean = rng.expovariate(1 / dur_mean)
        if long:
            mean = max(mean, CUTOFF * 1.01)
        else:
            mean = min(mean, CUTOFF * 0.99)
        durs = []
        for _ in range(n):
            d = -1.0
            while d < 0:
                d = rng.gauss(mean, 2 * mean)
            durs.append(round(d, 3))
        shapes.append((durs, mean))
        work += sum(durs)
    span = work / (nodes * load)             # seconds of arrivals that load the cluster at ~load
    rate = n_jobs / span
    t = 0.0
    jobs = []
    for i, (durs, mean) in enumerate(shapes):
        jobs.append(Job(i, round(t, 6), tuple(durs), round(mean, 6)))
        t += rng.expovariate(rate)
    return jobs


def run_one(policy: str, jobs: Sequence[Job], nodes: int, seed: int = 1,
            settings: Sequence[str] = ()) -> dict[str, float | int | str]:
    from bridge.sim.engine import Simulation
    from policies.api import ClusterSpec, PolicyEnv
    from policies.registry import config_for, create

    spec = ClusterSpec(nodes)
    pol = create(policy, PolicyEnv(spec, seed), config_for(policy, settings))
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    sim = Simulation(jobs, pol, spec)
    res = sim.run()
    wall = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"policy": policy, "nodes": nodes, "jobs": len(jobs), "tasks": sum(j.n_tasks for j in jobs),
            "events": res.events, "wall_s": round(wall, 2), "events_per_s": round(res.events / wall),
            "peak_mb": round(peak / 2**20, 1), "unfinished": len(res.unfinished)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=YAHOO_JOBS)
    ap.add_argument("--nodes", type=int, default=4000)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--policy", action="append", default=None)
    ap.add_argument("--no-tracemalloc", action="store_true", help="(tracemalloc slows the run ~2x)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    policies = a.policy or ["fifo", "sparrow", "hawk", "lwl", "dlwl"]
    t0 = time.perf_counter()
    jobs = yahoo_like(a.jobs, a.nodes, a.load)
    gen = time.perf_counter() - t0
    print(f"trace: {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks, generated in {gen:.1f}s",
          file=sys.stderr)
    rows = []
    for p in policies:
        if a.no_tracemalloc:
            import bench.sim_bench as me
            me.tracemalloc = _NoTrace()  # type: ignore[attr-defined]
        row = run_one(p, jobs, a.nodes)
        rows.append(row)
        if a.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"{row['policy']:10} {row['events']:>10} events {row['wall_s']:>8.2f} s "
                  f"{row['events_per_s']:>9} ev/s  peak {row['peak_mb']:>8.1f} MB  unfinished {row['unfinished']}",
                  flush=True)
    return 0


class _NoTrace:
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def get_traced_memory(self) -> tuple[int, int]:
        return (0, 0)


if __name__ == "__main__":
    raise SystemExit(main())
