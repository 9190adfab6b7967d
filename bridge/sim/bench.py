"""Simulator benchmark: events/s, wall time, CPU time and peak memory per policy on fixed traces.

``schedbridge bench sim [--trace yahoo|google] [--jobs N] [--nodes N] [--policy NAME ...]`` (also
``python -m bench.sim_bench``). The traces are generated from fixed seeds, so figures stay
comparable across commits:

* ``yahoo`` (default): a Yahoo-sized mix generated here (24,262 jobs, ~1.2M tasks, ~9.4% long
  jobs holding ~98% of the task-seconds, per-task Gaussian(mean, 2*mean) durations without
  negatives, Poisson arrivals) scaled to load the cluster at about ``--load``; 4,000 nodes.
* ``google``: ``workloads.synthetic`` kind ``google`` (506,460 jobs, ~10% long jobs holding ~83%
  of the task-seconds, its native 1 s mean inter-arrival; ``--load`` is ignored), 15,000 nodes,
  and the thesis' Google policy settings (cutoff 1129.532 s, 17% short-only partition, Kairos
  W = 10,000 s) for the policies that have those parameters.

Each policy runs in a fresh child process so peak RSS is per policy.
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

from bridge.options import FiniteFloat
from workloads.model import Job

YAHOO_JOBS = 24_262
LONG_FRACTION = 0.0941
SHORT = (30.0, 10.0)     # (mean tasks per job, mean task duration in s), short class
LONG = (240.0, 800.0)    # long class
CUTOFF = 90.5811
DEFAULT_POLICIES = ("fifo", "sparrow", "hawk", "lwl", "dlwl", "eagle", "kairos")
TRACES = {"yahoo": (YAHOO_JOBS, 4000), "google": (506_460, 15_000)}   # default jobs, nodes


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


def google_like(n_jobs: int = TRACES["google"][0], seed: int = 1) -> list[Job]:
    """The ``google`` synthetic kind (see the module docstring) as simulator jobs."""
    from workloads.synthetic.kinds import generate

    trace = generate("google", jobs=n_jobs, seed=seed)
    return [Job(i, tj.submit_time, tj.durations, tj.estimate) for i, tj in enumerate(trace.jobs)]


def trace_jobs(trace: str, n_jobs: int, nodes: int, load: float) -> list[Job]:
    if trace == "google":
        return google_like(n_jobs)
    return yahoo_like(n_jobs, nodes, load)


def trace_settings(trace: str, policy: str) -> dict[str, Any]:
    """The trace's values for those of the policy's parameters it sets (none for ``yahoo``,
    whose values are the defaults)."""
    if trace != "google":
        return {}
    from dataclasses import fields

    from policies.registry import default_registry
    from workloads.synthetic.kinds import get_kind

    params = get_kind("google").policy_parameters()
    names = {f.name for f in fields(default_registry().config(policy, ()))}
    return {k: v for k, v in params.items() if k in names}


def run_one(policy: str, jobs: Sequence[Job], nodes: int, seed: int = 1,
            settings: Sequence[str] | dict[str, Any] = ()) -> dict[str, Any]:
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
    from bridge.cluster.events import SegmentEnd
    from bridge.cluster.kernel import Kernel

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


def _child(policy: str, n_jobs: int, nodes: int, load: float, trace: str = "yahoo") -> None:
    jobs = trace_jobs(trace, n_jobs, nodes, load)
    settings = trace_settings(trace, policy)
    row = {"trace": trace, **run_one(policy, jobs, nodes, settings=settings)}
    if settings:
        row["settings"] = settings
    row["kernel_floor_us_per_event"] = kernel_floor()
    print(json.dumps(row))


@click.command("sim")
@click.option("--trace", type=click.Choice(sorted(TRACES)), default="yahoo", show_default=True,
              help="which fixed trace (see the module docstring)")
@click.option("--jobs", "n_jobs", type=click.IntRange(1), default=None,
              help="number of jobs (default: the full trace, 24,262 yahoo / 506,460 google)")
@click.option("--nodes", type=click.IntRange(1), default=None, help="cluster size (default: 4,000 yahoo / 15,000 google)")
@click.option("--load", type=FiniteFloat(0.01, 10), default=0.9, show_default=True,
              help="offered load (yahoo only; google keeps its native arrival rate)")
@click.option("--policy", "policies", multiple=True, help="policy to run (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per policy")
def sim(trace: str, n_jobs: int | None, nodes: int | None, load: float, policies: tuple[str, ...],
        as_json: bool) -> None:
    """Simulated events/s, wall time and peak memory on a fixed Yahoo- or Google-sized trace."""
    from policies.registry import default_registry

    known = default_registry().names()
    for p in policies:
        if p not in known:
            raise click.BadParameter(f"unknown policy {p!r}; known policies: {', '.join(known)}", param_hint="--policy")
    n_jobs = TRACES[trace][0] if n_jobs is None else n_jobs
    nodes = TRACES[trace][1] if nodes is None else nodes
    t0 = time.perf_counter()
    jobs = trace_jobs(trace, n_jobs, nodes, load)
    click.echo(f"trace {trace}: {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks, {nodes} nodes"
               + (f", load ~{load}" if trace == "yahoo" else "")
               + f" (generated in {time.perf_counter() - t0:.1f}s)", err=True)
    del jobs
    for p in policies or DEFAULT_POLICIES:
        proc = subprocess.run([sys.executable, "-c",
                               f"from bridge.sim.bench import _child; _child({p!r}, {n_jobs}, {nodes}, {load}, {trace!r})"],
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
