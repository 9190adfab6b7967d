"""`schedbridge experiment NAME`: named, reproducible experiments that write tables and plots.

Experiments are listed in one place, :data:`EXPERIMENTS` (name -> ``"module:function"``),
and imported only when run. A function takes ``(out_dir: Path, quick: bool)`` and returns
the files it wrote; ``quick`` runs a reduced version (fewer points and seeds) for smoke
tests. A function that also takes a keyword ``scale`` supports ``--scale`` (a size factor: nodes,
jobs and tasks per job for the thesis experiments); the others refuse it. Results are
deterministic under the seeds each experiment fixes. Every experiment but ``sparrow-hol`` (two
runs) runs its simulations through :func:`bridge.sweep.run_points`, on ``--workers`` processes,
with the same results as on one.
"""
from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from pathlib import Path

import click

from bridge import sweep
from bridge.options import FiniteFloat, OutputPath, output_dir, require_directory_place

EXPERIMENTS: dict[str, str] = {
    "falcon-orderings": "bridge.experiments_multires:falcon_orderings",
    "falcon-ablations": "bridge.experiments_multires:falcon_ablations",
    "psychas-stability": "bridge.experiments_multires:psychas_stability",
    "psychas-load": "bridge.experiments_multires:psychas_load",
    "psychas-trace": "bridge.experiments_multires:psychas_trace",
    "ursa-placement": "bridge.experiments_multires:ursa_placement",
    "cross-family": "bridge.experiments_multires:cross_family",
    "hawk-vs-sparrow": "bridge.experiments_thesis:hawk_vs_sparrow",
    "hawk-breakdown": "bridge.experiments_thesis:hawk_breakdown",
    "eagle-vs-hawk": "bridge.experiments_thesis:eagle_vs_hawk",
    "kairos-vs-eagle": "bridge.experiments_thesis:kairos_vs_eagle",
    "kairos-prototype": "bridge.experiments_thesis:kairos_prototype_experiment",
    "sparrow-hol": "bridge.experiments_thesis:sparrow_hol_experiment",
}


def load(name: str) -> Callable[[Path, bool], list[Path]]:
    target = EXPERIMENTS.get(name)
    if target is None:
        raise click.ClickException(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


@click.command()
@click.argument("name", required=False)
@click.option("--out", "out_dir", type=OutputPath(file_okay=False), default=None,
              show_default="results", help="Directory for tables (CSV, Markdown) and plots (PNG).")
@click.option("--quick", is_flag=True, help="Reduced version (fewer points and seeds).")
@click.option("--scale", type=FiniteFloat(min=0, min_open=True, max=1), default=None,
              help="Size factor for experiments that take one (thesis experiments: nodes, jobs and "
                   "tasks per job; 0.01 runs in seconds).")
@click.option("--workers", type=click.IntRange(min=1), default=None, show_default="the machine's cores",
              help="Worker processes for the experiment's independent runs (1: one after another in this "
                   "process); the results are the same for any number.")
@click.option("--list", "list_only", is_flag=True, help="List the experiments and exit.")
def experiment(name: str | None, out_dir: Path | None, quick: bool, scale: float | None, workers: int | None,
               list_only: bool) -> None:
    """Run the experiment NAME and write its results under --out."""
    if list_only or name is None:
        for n in sorted(EXPERIMENTS):
            click.echo(n)
        return
    run = load(name)
    if out_dir is None:  # the default is checked here, so that listing works in any directory
        out_dir = Path("results")
        require_directory_place(out_dir, "the results (--out)")
    kwargs: dict[str, float] = {}
    if scale is not None:
        if "scale" not in inspect.signature(run).parameters:
            raise click.ClickException(f"experiment {name!r} does not take --scale")
        kwargs["scale"] = scale
    with output_dir(out_dir / name) as target, sweep.workers(workers or os.cpu_count() or 1):
        written = run(target, quick, **kwargs)
    for path in written:
        click.echo(str(path))
