"""`schedbridge experiment NAME`: named, reproducible experiments that write tables and plots.

Experiments are listed in one place, :data:`EXPERIMENTS` (name -> ``"module:function"`` and a line
saying what it shows, for ``--list``), and imported only when run. A function takes
``(out_dir: Path, quick: bool)`` and returns the files it wrote; ``quick`` runs a reduced version
(fewer points and seeds) for smoke tests. A function that also takes a keyword ``scale`` supports
``--scale`` (a size factor: nodes, jobs and tasks per job for the thesis experiments); the others
refuse it. Results are deterministic under the seeds each experiment fixes. Every experiment but
``sparrow-hol`` (two runs) runs its simulations through :func:`bridge.apps.sweep.run_points`, on
``--workers`` processes or as the tasks of a Spark application on ``--master`` (with Spark's
settings as ``submit`` and ``replay`` take them: ``--conf``, ``--policy``/``--param`` for the
plugin's masters, ``--hadoop-conf-dir`` for YARN), with the same results as on one.
"""
from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import click

import sparkplugin
from bridge.apps import sweep
from bridge.common.options import (
    FiniteFloat,
    KeyValue,
    OutputPath,
    output_dir,
    pairs_to_dict,
    param_option,
    require_directory_place,
)
from bridge.target.config import hadoop_conf_dir_option
from policies.framework.registry import STOCK

class Experiment(NamedTuple):
    """Where an experiment's function is (``"module:function"``) and what it shows, in a line."""

    target: str
    summary: str


_MULTIRES, _THESIS = "bridge.apps.experiments_multires", "bridge.apps.experiments_thesis"
EXPERIMENTS: dict[str, Experiment] = {
    "falcon-orderings": Experiment(f"{_MULTIRES}:falcon_orderings",
                                   "Falcon: makespan and JCT vs jobs and tasks, every policy of the paper (Figs. 4-7)"),
    "falcon-ablations": Experiment(f"{_MULTIRES}:falcon_ablations",
                                   "Falcon: delta sweep, packing off, priority and reading variants"),
    "psychas-stability": Experiment(f"{_MULTIRES}:psychas_stability",
                                    "Psychas-Ghaderi: VQS's throughput limit and BF-J/S lock-in (Fig. 3)"),
    "psychas-load": Experiment(f"{_MULTIRES}:psychas_load",
                               "Psychas-Ghaderi: average queue vs traffic intensity (Fig. 4)"),
    "psychas-trace": Experiment(f"{_MULTIRES}:psychas_trace",
                                "Psychas-Ghaderi: queue vs traffic scaling on a Google-shaped trace (Fig. 5)"),
    "ursa-placement": Experiment(f"{_MULTIRES}:ursa_placement",
                                 "Ursa: placement ranking on TPC-H-shaped DAGs (Table 4) and the staircase of 5.3"),
    "cross-family": Experiment(f"{_MULTIRES}:cross_family",
                               "every registered policy on one multi-resource DAG workload"),
    "hawk-vs-sparrow": Experiment(f"{_THESIS}:hawk_vs_sparrow",
                                 "Hawk vs Sparrow, JCT ratios by class (Figs. 2.5, 2.6)"),
    "hawk-breakdown": Experiment(f"{_THESIS}:hawk_breakdown",
                                 "Hawk without its central scheduler, partition or stealing, each in turn (Fig. 2.7)"),
    "eagle-vs-hawk": Experiment(f"{_THESIS}:eagle_vs_hawk", "Eagle vs Hawk, JCT ratios by class (Fig. 3.2)"),
    "kairos-vs-eagle": Experiment(f"{_THESIS}:kairos_vs_eagle",
                                 "Kairos vs Eagle, JCT ratios by class (Figs. 4.8, 4.9)"),
    "kairos-prototype": Experiment(f"{_THESIS}:kairos_prototype_experiment",
                                   "Kairos vs Big-C and FIFO, Q/W sensitivity and tie-breaks (Figs. 4.4-4.7)"),
    "sparrow-hol": Experiment(f"{_THESIS}:sparrow_hol_experiment",
                              "Sparrow's short jobs stuck behind long tasks, and Hawk (Fig. 2.1)"),
}
PLUGIN_DEFAULT_POLICY = "fifo"  # the plugin's own default for spark.schedbridge.policy (docs/spark-plugin.md)


def load(name: str) -> Callable[[Path, bool], list[Path]]:
    entry = EXPERIMENTS.get(name)
    if entry is None:
        raise click.ClickException(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))} "
                                   "(see --list)")
    module, attr = entry.target.split(":")
    return getattr(importlib.import_module(module), attr)


def spark_run(master: str | None, workers: int | None, policy: str | None, params: dict[str, str],
              conf: dict[str, str], hadoop_conf_dir: Path | None) -> sweep.SparkRun | None:
    """The Spark application ``--master`` asks for, or None; the options that need another one,
    or a master at all, are refused naming both."""
    if master is None:
        given = [name for name, value in (("--policy", policy), ("--param", params), ("--conf", conf),
                                          ("--hadoop-conf-dir", hadoop_conf_dir)) if value]
        if given:
            raise click.UsageError(f"{', '.join(given)} apply to Spark runs only: add --master MASTER")
        return None
    if workers is not None:
        raise click.UsageError("--workers and --master exclude each other: worker processes on this machine, "
                               "or Spark tasks on MASTER's executors")
    plugin = master.startswith(sparkplugin.MASTER_PREFIX)
    if not plugin and (policy or params):
        raise click.UsageError(f"--policy and --param choose the schedbridge plugin's policy: they apply with "
                               f"--master {sparkplugin.MASTER_PREFIX}<yarn|local[N]|spark://...> only")
    run = sweep.SparkRun(master, (policy or PLUGIN_DEFAULT_POLICY) if plugin else STOCK.name,
                         _spark_conf(conf, params), hadoop_conf_dir)
    if hadoop_conf_dir is not None and run.inner_master != "yarn":
        raise click.UsageError("--hadoop-conf-dir applies to a YARN master only (yarn, spark-schedbridge://yarn)")
    return run


def _spark_conf(conf: dict[str, str], params: dict[str, str]) -> dict[str, str]:
    """``--conf`` with the policy parameters, spelt and checked as `replay` does."""
    from bridge.replay.cli import spark_settings

    return spark_settings(conf, params)


@click.command()
@click.argument("name", required=False)
@click.option("--out", "out_dir", type=OutputPath(file_okay=False), default=None,
              show_default="results", help="Directory for tables (CSV, Markdown) and plots (PNG).")
@click.option("--quick", is_flag=True, help="Reduced version (fewer points and seeds).")
@click.option("--scale", type=FiniteFloat(min=0, min_open=True, max=1), default=None,
              help="Size factor for experiments that take one (thesis experiments: nodes, jobs and "
                   "tasks per job; 0.01 runs in seconds).")
@click.option("--workers", type=click.IntRange(1, 1024), default=None, show_default="the machine's cores",
              help="Worker processes for the experiment's independent runs (1: one after another in this "
                   "process); the results are the same for any number.")
@click.option("--master", default=None,
              help="Run the independent runs as the tasks of one Spark application on this Spark master "
                   "instead (local[N], yarn, spark://HOST:PORT, or spark-schedbridge://MASTER for the "
                   "schedbridge plugin's scheduler); the results are the same. schedbridge must be "
                   "installed on every node.")
@click.option("--policy", default=None,
              help=f"With --master spark-schedbridge://...: the policy placing the runs' tasks "
                   f"(default {PLUGIN_DEFAULT_POLICY}).")
@param_option("With --master spark-schedbridge://...: a parameter of --policy (repeatable).")
@click.option("--conf", multiple=True, type=KeyValue(), callback=pairs_to_dict, metavar="KEY=VALUE",
              help="With --master: a Spark setting (repeatable), e.g. spark.executor.instances=4.")
@hadoop_conf_dir_option
@click.option("--list", "list_only", is_flag=True, help="List the experiments, each with what it shows, and exit.")
def experiment(name: str | None, out_dir: Path | None, quick: bool, scale: float | None, workers: int | None,
               master: str | None, policy: str | None, params: dict[str, str], conf: dict[str, str],
               hadoop_conf_dir: Path | None, list_only: bool) -> None:
    """Run the experiment NAME and write its results under --out."""
    if list_only or name is None:
        width = max(map(len, EXPERIMENTS))
        for n, entry in sorted(EXPERIMENTS.items()):
            click.echo(f"{n:{width}}  {entry.summary}")
        return
    run = load(name)
    spark = spark_run(master, workers, policy, params, conf, hadoop_conf_dir)
    if out_dir is None:  # the default is checked here, so that listing works in any directory
        out_dir = Path("results")
        require_directory_place(out_dir, "the results (--out)")
    kwargs: dict[str, float] = {}
    if scale is not None:
        if "scale" not in inspect.signature(run).parameters:
            raise click.ClickException(f"experiment {name!r} does not take --scale")
        kwargs["scale"] = scale
    points = (sweep.on_spark(spark, f"schedbridge-experiment-{name}") if spark is not None
              else sweep.workers(workers or os.cpu_count() or 1))
    with points, output_dir(out_dir / name) as target:
        written = run(target, quick, **kwargs)
    for path in written:
        click.echo(str(path))
