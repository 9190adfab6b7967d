"""Simulator benchmark: events/s, wall time, CPU time and peak memory per policy on fixed traces.

``schedbridge bench sim [--trace yahoo|google] [--jobs N] [--nodes N] [--policy NAME ...]``.
The traces are generated from fixed seeds, so figures stay comparable across commits:

* ``yahoo`` (default): the trace generator's ``yahoo`` kind (``schedbridge trace generate
  yahoo``: 24,262 jobs, ~1.2M tasks, ~9.4% long jobs holding ~98% of the task-seconds), its
  Poisson arrivals at the rate that offers ``--load`` to the cluster; 4,000 nodes.
* ``google``: the ``google`` kind (506,460 jobs, ~10% long jobs holding ~83% of the
  task-seconds, its native 1 s mean inter-arrival; ``--load`` is ignored), 15,000 nodes.

Each policy takes the trace's settings the thesis gives it (``workloads.synthetic.trace_settings``:
Hawk, Eagle and DLWL the cutoff and long partition, Big-C the cutoff, Kairos W).

Each policy runs in a fresh child process so peak RSS is per policy.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from bridge.common.options import JOBS, NODES, REPEATS, FiniteFloat
from workloads.model import Job

DEFAULT_POLICIES = ("fifo", "sparrow", "hawk", "lwl", "dlwl", "eagle", "kairos")
TRACES = ("google", "yahoo")
SEED = 1


def trace_jobs(trace: str, n_jobs: int | None = None, nodes: int | None = None, load: float = 0.9) -> list[Job]:
    """The benchmark's fixed trace: kind `trace` of the trace generator, seeded; a kind without
    a native arrival rate (yahoo) arrives at the rate that offers `load` to `nodes` nodes."""
    from workloads.synthetic import generate, get_kind, simulator_jobs

    native = get_kind(trace).native_interarrival is not None
    return simulator_jobs(generate(trace, jobs=n_jobs, seed=SEED, load=None if native else load, nodes=nodes).jobs)


def run_one(policy: str, jobs: Sequence[Job], nodes: int, seed: int = 1,
            settings: Sequence[str] | dict[str, Any] = ()) -> dict[str, Any]:
    """Simulate one policy in this process and measure it."""
    from bridge.sim.engine import Simulation
    from policies.framework.api import ClusterSpec, PolicyEnv
    from policies.framework.compiled import CORE
    from policies.framework.registry import config_for, create

    spec = ClusterSpec(nodes)
    pol = create(policy, PolicyEnv(spec, seed), config_for(policy, settings))
    w0, c0 = time.perf_counter(), time.process_time()
    res = Simulation(jobs, pol, spec).run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"policy": policy, "nodes": nodes, "jobs": len(jobs), "tasks": sum(j.n_tasks for j in jobs),
            "events": res.events, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "events_per_s": round(res.events / wall), "events_per_cpu_s": round(res.events / cpu),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "unfinished": len(res.unfinished), "core": CORE.describe()}


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
    from workloads.synthetic import trace_settings

    jobs = trace_jobs(trace, n_jobs, nodes, load)
    settings = trace_settings(trace, policy)
    row = {"trace": trace, **run_one(policy, jobs, nodes, settings=settings)}
    if settings:
        row["settings"] = settings
    row["kernel_floor_us_per_event"] = kernel_floor()
    print(json.dumps(row))


def check_policies(policies: Sequence[str]) -> None:
    """Refuse an unknown `--policy` before any run, naming the known ones."""
    from policies.framework.registry import default_registry

    known = default_registry().names()
    for p in policies:
        if p not in known:
            raise click.BadParameter(f"unknown policy {p!r}; known policies: {', '.join(known)}", param_hint="--policy")


def measure(policy: str, n_jobs: int, nodes: int, load: float, trace: str = "yahoo") -> dict[str, Any]:
    """One policy on the fixed trace of `n_jobs` jobs over `nodes` nodes, run and measured in a
    fresh child process (so its peak RSS is this run's alone): the child's row (`run_one`'s
    figures, the trace, the settings, the kernel floor)."""
    child = f"from bridge.sim.bench import _child; _child({policy!r}, {n_jobs}, {nodes}, {load}, {trace!r})"
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    if proc.returncode:
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
        raise click.ClickException(f"{policy}: benchmark failed ({how}):\n{proc.stderr[-2000:]}")
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return row


@click.command("sim")
@click.option("--trace", type=click.Choice(TRACES), default="yahoo", show_default=True,
              help="which fixed trace (see the module docstring)")
@click.option("--jobs", "n_jobs", type=JOBS, default=None,
              help="number of jobs (default: the full trace, 24,262 yahoo / 506,460 google)")
@click.option("--nodes", type=NODES, default=None,
              help="cluster size (default: 4,000 yahoo / 15,000 google)")
@click.option("--load", type=FiniteFloat(0.01, 10), default=0.9, show_default=True,
              help="offered load (yahoo only; google keeps its native arrival rate)")
@click.option("--policy", "policies", multiple=True, help="policy to run (repeatable)")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per policy")
@click.option("--baseline", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="another tree (e.g. `git archive COMMIT | tar -x -C DIR`): run it and this tree side by "
                   "side, alternating, and compare CPU time, peak RSS and the jobs' percentiles")
@click.option("--repeat", type=REPEATS, default=1, show_default=True,
              help="with --baseline: runs per policy and tree")
@click.option("--same-policies", is_flag=True,
              help="with --baseline: this tree's engine runs the baseline's policies package (engine-only change)")
@click.option("--tolerance", type=FiniteFloat(0, 1), default=0.05, show_default=True,
              help="with --baseline: largest relative change of a short/long p50/p90/p99 that passes")
def sim(trace: str, n_jobs: int | None, nodes: int | None, load: float, policies: tuple[str, ...],
        as_json: bool, baseline: Path | None, repeat: int, same_policies: bool, tolerance: float) -> None:
    """Simulated events/s, wall time and peak memory on a fixed Yahoo- or Google-sized trace;
    with --baseline, this tree against another, side by side."""
    from policies.framework.compiled import CORE
    from workloads.synthetic import get_kind

    check_policies(policies)
    kind = get_kind(trace)
    n_jobs = kind.default_jobs if n_jobs is None else n_jobs
    nodes = kind.default_nodes if nodes is None else nodes
    t0 = time.perf_counter()
    jobs = trace_jobs(trace, n_jobs, nodes, load)
    click.echo(f"trace {trace}: {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks, {nodes} nodes"
               + (f", load ~{load}" if trace == "yahoo" else "")
               + f" (generated in {time.perf_counter() - t0:.1f}s)\n{CORE.describe()}", err=True)
    del jobs
    if baseline is not None:
        _side_by_side(baseline.resolve(), policies or DEFAULT_POLICIES, n_jobs, nodes, load, trace, repeat,
                      same_policies, tolerance, as_json)
        return
    for p in policies or DEFAULT_POLICIES:
        row = measure(p, n_jobs, nodes, load, trace)
        if as_json:
            click.echo(json.dumps(row))
        else:
            click.echo(f"{row['policy']:10} {row['events']:>10} events  wall {row['wall_s']:>7.2f} s  "
                       f"cpu {row['cpu_s']:>7.2f} s  {row['events_per_cpu_s']:>8} ev/cpu-s  "
                       f"peak RSS {row['peak_rss_mb']:>7.1f} MB  unfinished {row['unfinished']}  "
                       f"kernel floor {row['kernel_floor_us_per_event']} us/event  ({row['core']})")


def _side_by_side(baseline: Path, policies: Sequence[str], n_jobs: int, nodes: int, load: float, trace: str,
                  repeat: int, same_policies: bool, tolerance: float, as_json: bool) -> None:
    """``--baseline``: both trees, alternating, one summary per policy (see ``bridge.sim.sidebyside``)."""
    from bridge.sim.sidebyside import Side, compare, differing_policy_files, policies_only

    here = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="schedbridge-bench-") as tmp:
        new = Side("new", here, policies_only(baseline, Path(tmp)) if same_policies else None)
        differ = [] if same_policies else differing_policy_files(baseline, here)
        click.echo(f"old: {baseline}\nnew: {here}" + (" with the old tree's policies" if same_policies else "")
                   + f"\npolicy files that differ between the two sides: {', '.join(differ) or 'none'}", err=True)
        try:
            rows = compare((Side("old", baseline), new), policies, n_jobs, nodes, load, trace, repeat, tolerance,
                           lambda line: click.echo(line, err=True))
        except RuntimeError as exc:  # a child that failed, or a run too short to time: said, not a traceback
            raise click.ClickException(str(exc)) from None
    for row in rows:
        row["policy_files_differ"] = differ
        if as_json:
            click.echo(json.dumps(row))
            continue
        verdict = "ok" if row["percentiles_ok"] else "OVER: " + "; ".join(row["percentiles_over_tolerance"])
        click.echo(f"{row['policy']:10} sim CPU old {row['old_sim_cpu_s']} new {row['new_sim_cpu_s']} "
                   f"-> {row['speedup_sim_cpu']}x (process {row['speedup_proc_cpu']}x, "
                   f"pairs {row['speedup_per_pair']})  "
                   f"peak RSS {row['old_peak_rss_mb']} -> {row['new_peak_rss_mb']} MB (at the simulation's end "
                   f"{row['old_sim_peak_rss_mb']} -> {row['new_sim_peak_rss_mb']})  events {row['old_events']} -> "
                   f"{row['new_events']}  percentiles: largest change {row['percentiles_worst_rel_diff']:.2%} "
                   f"(tolerance {tolerance:.0%}) {verdict}\n  old {row['old_core']}\n  new {row['new_core']}")
