"""`schedbridge trace generate KIND ...`: write a seeded synthetic trace and print its statistics."""
from __future__ import annotations

from pathlib import Path

import click

from bridge.common.options import JOBS, NODES, FiniteFloat, OutputPath, output_dir
from workloads.synthetic import scaling
from workloads.synthetic.base import write_trace
from workloads.synthetic.kinds import KINDS, generate


@click.group()
def trace() -> None:
    """Traces for the simulator: synthetic ones (`generate`) and a cluster's own history (`import`)."""


@trace.command("generate")
@click.argument("kind", type=click.Choice(sorted(KINDS)), metavar="KIND")
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
    thesis' Tables 2.1/2.2/3.1), hawk-motivation (Fig 2.1), kairos and kairos-uniform (Table 4.1).
    """
    try:
        generated = generate(kind, jobs=jobs, seed=seed, load=load, nodes=nodes)
    except ValueError as err:
        raise click.ClickException(str(err)) from None
    written = generated.jobs if shrink is None else scaling.shrink(generated.jobs, shrink)
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
