"""`schedbridge trace generate KIND ...`: write a seeded synthetic trace and print its statistics."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from bridge.common.magnitudes import MAX_TIME_S
from bridge.common.options import JOBS, NODES, FiniteFloat, OutputPath, output_dir
from workloads.model import Job
from workloads.multires import dag_jobs
from workloads.multires.jsonl import write_jsonl
from workloads.synthetic import scaling
from workloads.synthetic.base import interarrival_for_load, write_trace
from workloads.synthetic.kinds import KINDS, generate


@click.group()
def trace() -> None:
    """Traces for the simulator: synthetic ones (`generate`) and a cluster's own history (`import`)."""


DAG_KIND = "falcon-dag"
DAG_DEFAULT_JOBS = 200
# Falcon's largest demand (3 cores, 6 GB on its 6-core 12 GB workers) scaled to one slot of
# `simulate --nodes --slots` (1 core, 4 GB: `bridge.sim.shape.MEMORY_GB_PER_CORE`), each resource
# by its own factor, so that slot-based baselines (which put one task on each free slot) run on
# the trace beside the packers. Our reading.
SLOT_SHARE = (1.0 / 3.0, 4.0 / 6.0)


@trace.command("generate")
@click.argument("kind", type=click.Choice([*sorted(KINDS), DAG_KIND]), metavar="KIND")
@click.option("--jobs", type=JOBS, default=None, help="Number of jobs [default: the thesis' size].")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--load", type=FiniteFloat(min=0.001, max=100), default=None,
              help="Offered load on --nodes single-slot nodes [default: the kind's native arrival rate].")
@click.option("--nodes", type=NODES, default=None, help="Cluster size the load refers to.")
@click.option("--shrink", type=FiniteFloat(min=0, min_open=True, max=1), default=None,
              help="Shrink for a cluster FACTOR times the size: keep ceil(n x FACTOR) tasks of each job and "
                   "stretch arrivals so the load is unchanged (workloads.synthetic.scaling).")
@click.option("--out", type=OutputPath(dir_okay=False), required=True)
def generate_command(kind: str, jobs: int | None, seed: int, load: float | None, nodes: int | None,
                     shrink: float | None, out: Path) -> None:
    """Generate a KIND trace into --out and print its statistics.

    KIND is one of: yahoo, cloudera, facebook, google (synthetic stand-ins calibrated to the
    thesis' Tables 2.1/2.2/3.1), hawk-motivation (Fig 2.1), kairos and kairos-uniform (Table 4.1);
    falcon-dag: Falcon-style jobs of 10-20 tasks in a layered DAG with (CPU, memory) demands that
    fit one slot (at most 1 core and 4 GB), in the rich format (.jsonl).
    """
    if kind == DAG_KIND:
        _falcon_dag(jobs or DAG_DEFAULT_JOBS, seed, load, nodes, shrink, out)
        return
    try:
        generated = generate(kind, jobs=jobs, seed=seed, load=load, nodes=nodes)
    except ValueError as err:
        raise click.ClickException(str(err)) from None
    written = generated.jobs if shrink is None else scaling.shrink(generated.jobs, shrink)
    _refuse_late_arrivals(max(job.submit_time for job in written))
    cutoff = generated.stats.cutoff
    try:
        with output_dir(out.parent):
            write_trace(written, out, (cutoff, f"(the thesis simulator's for {kind}; schedbridge trace generate)"))
    except OSError as err:
        raise click.ClickException(f"cannot write {out}: {err.strerror}") from err
    click.echo(f"{kind}: {KINDS[kind].description}")
    click.echo(generated.stats.describe())
    if shrink is not None:
        largest = max(len(job.durations) for job in written)
        click.echo(f"shrunk x{shrink:g}: {sum(len(job.durations) for job in written)} tasks, largest job {largest}; "
                   f"the same offered load at {generated.stats.slots * shrink:g} nodes x 1 slot")
    click.echo(f"reporting cutoff {cutoff:g} s, the thesis simulator's for {kind}, stated in the trace: "
               "simulate and report split short and long jobs by it")
    click.echo(f"wrote {out}")


def _refuse_late_arrivals(last: float) -> None:
    """A trace arriving past MAX_TIME_S would be refused by every reader (a --shrink of 1e-300 put
    arrivals near 1e302 s): say so now, with what to change, and write nothing."""
    if not last <= MAX_TIME_S:
        raise click.ClickException(f"the last job would arrive at {last:g} s, past {MAX_TIME_S:g} s (the longest "
                                   "time a trace may hold): ask for fewer --jobs, a higher --load, more --nodes "
                                   "or a larger --shrink")


def _falcon_dag(jobs: int, seed: int, load: float | None, nodes: int | None, shrink: float | None,
                out: Path) -> None:
    """`workloads.multires.dag_jobs` (Falcon §V, our reading), one job a second, or as many as give
    ``load`` on ``nodes`` single-slot nodes (task-seconds per second over nodes)."""
    if out.suffix != ".jsonl":
        raise click.BadParameter(f"{out}: a {DAG_KIND} trace has demands and task parents, which only the "
                                 "rich format keeps: name it .jsonl", param_hint="--out")
    if shrink is not None:
        raise click.BadParameter(f"{DAG_KIND} jobs are already small (10-20 tasks)", param_hint="--shrink")
    if (load is None) != (nodes is None):
        raise click.BadParameter(f"{DAG_KIND} needs --load and --nodes together", param_hint="--load")
    made: list[Job] = [replace(j, demands=tuple((round(c * SLOT_SHARE[0], 4), round(m * SLOT_SHARE[1], 4))
                                                for c, m in j.demands or ()))
                       for j in dag_jobs.generate(dag_jobs.DagSpec(jobs, rate=1.0), seed)]
    work = sum(sum(j.durations) for j in made)
    if load is not None and nodes is not None:
        interval = interarrival_for_load(work, len(made), load, nodes)
        made = [replace(j, submit=j.job_id * interval) for j in made]
    _refuse_late_arrivals(made[-1].submit)
    try:
        with output_dir(out.parent):
            write_jsonl(out, made)
    except OSError as err:
        raise click.ClickException(f"cannot write {out}: {err.strerror}") from err
    tasks = sum(j.n_tasks for j in made)
    span = made[-1].submit
    click.echo(f"{DAG_KIND}: {len(made)} jobs, {tasks} tasks in layered DAGs, (cpu, mem) demands of at most "
               f"one slot's (1 core, 4 GB); "
               f"{work:.1f} task-seconds over {span:.1f} s of arrivals")
    click.echo(f"wrote {out}")
