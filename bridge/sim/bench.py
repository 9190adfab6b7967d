"""Simulator benchmark: events/s, wall time, CPU time and peak memory per policy on fixed traces.

``schedbridge bench sim [--jobs N] [--nodes N] [--policy NAME ...]`` (also
``python -m bench.sim_bench``). The trace is generated here from a fixed seed, so figures stay
comparable across commits: a Yahoo-sized mix (24,262 jobs, ~1.2M tasks, ~9.4% long jobs holding
~98% of the task-seconds, per-task Gaussian(mean, 2*mean) durations without negatives, Poisson
arrivals) scaled to load the cluster at about ``--load``. Each policy runs in a fresh child
process so peak RSS is per policy.
"""
from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import click

from workloads.model import Job

YAHOO_JOBS = 24_262
LONG_FRACTION = 0.0941
SHORT = (30.0, 10.0)     # (mean tasks per job, mean task duration in s), short class
LONG = (240.0, 800.0)    # long class
CUTOFF = 90.5811
DEFAULT_POLICIES = ("fifo", "sparrow", "hawk", "lwl", "dlwl")


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
        mean = max(mean, CUTOFF * 1.01) if long else min(mean, CUTOFF * 0.99)
        durs = []
        for _ in range(n):
            d = -1.0
            while d < 0:
                d = rng.gauss(mean, 2 * mean)
            durs.append(round(d, 3))
        shapes.append((durs, mean))
        work += sum(durs)
    rate = n_jobs * nodes * load / work
    t = 0.0
    jobs = []
    for i, (durs, mean) in enumerate(shapes):
        jobs.append(Job(i, round(t, 6), tuple(durs), round(mean, 6)))
        t += rng.expovariate(rate)
    return jobs


def run_one(policy: str, jobs: Sequence[Job], nodes: int, seed: int = 1,
            settings: Sequence[str] = ()) -> dict[str, Any]:
    """Simulate one policy in this process and measure it."""
    from bridge.sim.engine import Simulation
    from policies.api import ClusterSpec, PolicyEnv
    from policies.registry import config_for, create

    spec = ClusterSpec(nodes)
    pol = create(policy, PolicyEnv(spec, seed), config_for(policy, settings))
    w0, c0 = time.perf_counter(), time.process_time()
    res = Simulation(jobs, pol, spec).run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"policy": policy, "nodes": nodes, "jobs": len(jobs), "tasks": sum(j.n_tasks for j in jobs),
            "events": res.events, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "events_per_s": round(res.events / wall), "events_per_cpu_s": round(res.events / cpu),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "unfinished": len(res.unfinished)}


def kernel_floor(n_events: int = 300_000) -> float:
    """CPU microseconds per event of the bare kernel (a trivial handler scheduling one event):
    a yardstick for how fast this machine runs the simulator's inner loop right now."""
    from bridge.sim.events import SegmentEnd
    from bridge.sim.kernel import Kernel

    k = Kernel()
    left = [n_events]

    def handler(ev: SegmentEnd) -> list[SegmentEnd] | None:
        left[0] -= 1
        return [SegmentEnd(ev.time + 1.0, ev.node, ev.slot, ev.token)] if left[0] > 0 else None

    k.on(SegmentEnd, handler)
    for i in range(4000):
        k.schedule(SegmentEnd(i * 1e-3, i, 0, 0))
    c0 = time.process_time()
    k.run()
    return round((time.process_time() - c0) / k.events * 1e6, 3)


def _child(policy: str, n_jobs: int, nodes: int, load: float) -> None:
    jobs = yahoo_like(n_jobs, nodes, load)
    row = run_one(policy, jobs, nodes)
    row["kernel_floor_us_per_event"] = kernel_floor()
    print(json.dumps(row))


@click.group()
def bench() -> None:
    """Benchmarks (reported, never asserted)."""


@bench.command("sim")
@click.option("--jobs", "n_jobs", type=click.IntRange(1), default=YAHOO_JOBS, show_default=True)
@click.option("--nodes", type=click.IntRange(1), default=4000, show_default=True)
@click.option("--load", type=click.FloatRange(0.01, 10), default=0.9, show_default=True)
@click.option("--policy", "policies", multiple=True, help="policy to run (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per policy")
def sim(n_jobs: int, nodes: int, load: float, policies: tuple[str, ...], as_json: bool) -> None:
    """Simulated events/s, wall time and peak memory on a fixed Yahoo-sized trace."""
    from policies.registry import default_registry

    known = default_registry().names()
    for p in policies:
        if p not in known:
            raise click.BadParameter(f"unknown policy {p!r}; known policies: {', '.join(known)}", param_hint="--policy")
    t0 = time.perf_counter()
    jobs = yahoo_like(n_jobs, nodes, load)
    click.echo(f"trace: {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks, {nodes} nodes, "
               f"load ~{load} (generated in {time.perf_counter() - t0:.1f}s)", err=True)
    del jobs
    for p in policies or DEFAULT_POLICIES:
        proc = subprocess.run([sys.executable, "-c",
                               f"from bridge.sim.bench import _child; _child({p!r}, {n_jobs}, {nodes}, {load})"],
                              capture_output=True, text=True)
        if proc.returncode:
            raise click.ClickException(f"{p}: benchmark failed:\n{proc.stderr[-2000:]}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        if as_json:
            click.echo(json.dumps(row))
        else:
            click.echo(f"{row['policy']:10} {row['events']:>10} events  wall {row['wall_s']:>7.2f} s  "
                       f"cpu {row['cpu_s']:>7.2f} s  {row['events_per_cpu_s']:>8} ev/cpu-s  "
                       f"peak RSS {row['peak_rss_mb']:>7.1f} MB  unfinished {row['unfinished']}  "
                       f"kernel floor {row['kernel_floor_us_per_event']} us/event")
