"""How the simulator's time and memory grow with a trace's jobs and a cluster's nodes.

``schedbridge bench sim-growth [--jobs-sizes 3000,10000,30000,100000] [--nodes-sizes 1000,3000,10000]
[--at-nodes 10000] [--at-jobs 10000] [--load 0.9] [--policy P ...] [--json] [--plot FILE.png]``

Two series of ``bench sim`` runs on its fixed Yahoo-like trace, each run in a fresh child process
(:func:`bridge.sim.bench.measure`, so each peak RSS is one run's): the jobs growing on a cluster of
``--at-nodes`` nodes, and the nodes growing under ``--at-jobs`` jobs; a point both series share is
run once. The sizes run in the order given (largest first, an interrupted run has printed the
costliest rows already). The offered load stays fixed, so more jobs make a longer trace at the same pace, and more
nodes the same tasks arriving proportionally faster: the nodes series shows what a node costs
beyond the work it runs.

For each policy, series and measure (CPU time, peak RSS), the growth exponent: the slope of the
least-squares line through the points on log-log axes (1: linear; peak RSS includes the
interpreter's fixed ~50 MB, which flattens its slope at small sizes). ``--rows FILE`` runs
nothing: it fits and plots the runs of earlier ``--json`` output (several runs' concatenated).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np

from bridge.common.options import JOBS, NODES, FiniteFloat, OutputPath
from bridge.sim.bench import check_policies, measure

POLICIES = ("sparrow", "hawk", "eagle")
AXES = ("jobs", "nodes")                                    # what grows, and the row's key for it
MEASURES = {"cpu_s": "CPU s", "peak_rss_mb": "peak RSS MB"}  # row key -> axis label


@dataclass(frozen=True)
class Plan:
    """The two series: `job_sizes` at `at_nodes` nodes, `node_sizes` under `at_jobs` jobs."""

    job_sizes: tuple[int, ...]
    node_sizes: tuple[int, ...]
    at_nodes: int
    at_jobs: int

    def points(self) -> list[tuple[int, int]]:
        """Every (jobs, nodes) to run, each once, the jobs series first."""
        return list(dict.fromkeys([(j, self.at_nodes) for j in self.job_sizes]
                                  + [(self.at_jobs, n) for n in self.node_sizes]))

    def series(self, axis: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows of the series along `axis` ("jobs" or "nodes"), by size."""
        if axis == "jobs":
            picked = [r for r in rows if r["nodes"] == self.at_nodes and r["jobs"] in self.job_sizes]
        else:
            picked = [r for r in rows if r["jobs"] == self.at_jobs and r["nodes"] in self.node_sizes]
        return sorted(picked, key=lambda r: r[axis])


def exponent(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The slope of log y on log x (least squares): y grows as x to this power. None where it
    cannot be read: fewer than two sizes, or a value of 0 (a run too short to time)."""
    if len(set(xs)) < 2 or min(ys) <= 0:
        return None
    return round(float(np.polyfit(np.log(xs), np.log(ys), 1)[0]), 3)


def growth(plan: Plan, rows: Sequence[dict[str, Any]], policy: str) -> dict[str, float | None]:
    """Each measure's exponent along each axis for `policy`, keyed ``"cpu_s~jobs"`` etc."""
    mine = [r for r in rows if r["policy"] == policy]
    out: dict[str, float | None] = {}
    for axis in AXES:
        line = plan.series(axis, mine)
        for key in MEASURES:
            out[f"{key}~{axis}"] = exponent([r[axis] for r in line], [r[key] for r in line])
    return out


def plot(plan: Plan, rows: Sequence[dict[str, Any]], policies: Sequence[str], path: Path, title: str) -> Path:
    """Log-log panels, one row per axis and one column per measure, a line per policy labelled with
    its exponent."""
    from bridge.common import plots

    grid = []
    for axis in AXES:
        fixed = f"at {plan.at_nodes:,} nodes" if axis == "jobs" else f"under {plan.at_jobs:,} jobs"
        panels = []
        for key, label in MEASURES.items():
            lines = []
            for p in policies:
                line = plan.series(axis, [r for r in rows if r["policy"] == p])
                slope = exponent([r[axis] for r in line], [r[key] for r in line])
                lines.append(plots.Series(f"{p} (slope {'n/a' if slope is None else f'{slope:.2f}'})",
                                          [r[axis] for r in line], [r[key] for r in line], marker="o"))
            panels.append(plots.Panel(lines, title=f"{label} by {axis}, {fixed}", xlabel=axis, ylabel=label,
                                      logx=True, logy=True))
        grid.append(panels)
    return plots.draw(grid, path, title=title)


class SizeList(click.ParamType):
    """Comma-separated sizes within `bounds`, each once, at least two (a slope needs two points)."""

    name = "N,N,..."

    def __init__(self, bounds: click.IntRange) -> None:
        self.bounds = bounds

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        sizes = tuple(self.bounds.convert(click.INT.convert(item.strip(), param, ctx), param, ctx)
                      for item in str(value).split(","))
        if len(set(sizes)) < len(sizes):
            self.fail(f"{value!r} gives a size twice", param, ctx)
        if len(sizes) < 2:
            self.fail(f"{value!r}: give at least two sizes (a growth exponent needs two points)", param, ctx)
        return sizes


def _plot_path(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    from bridge.common.plots import FORMATS

    if value is not None and value.suffix.lstrip(".") not in FORMATS:
        raise click.BadParameter(f"{value}: the image's suffix must be one of .{', .'.join(FORMATS)}")
    return value


RUN_KEYS = ("policy", "jobs", "nodes", "cpu_s", "peak_rss_mb", "load", "core")


def read_rows(path: Path, load: float) -> list[dict[str, Any]]:
    """The runs among the JSON lines of earlier ``--json`` output (several runs' output may be
    concatenated; the exponent lines are skipped), each of offered load `load`."""
    rows = []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise click.ClickException(f"{path}:{number}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise click.ClickException(f"{path}:{number}: not a JSON object")
        if "growth_exponents" in obj:
            continue
        missing = [k for k in RUN_KEYS if k not in obj]
        if missing:
            raise click.ClickException(f"{path}:{number}: a run without {missing[0]!r}")
        if obj["load"] != load:
            raise click.ClickException(f"{path}:{number}: a run at load {obj['load']}, not --load {load}")
        rows.append(obj)
    if not rows:
        raise click.ClickException(f"{path}: no runs in it")
    return rows


def _line(row: dict[str, Any]) -> str:
    return (f"{row['policy']:8} {row['jobs']:>7} jobs {row['nodes']:>6} nodes {row['events']:>10} events  "
            f"cpu {row['cpu_s']:>7.2f} s  wall {row['wall_s']:>7.2f} s  peak RSS {row['peak_rss_mb']:>7.1f} MB  "
            f"{row['events_per_cpu_s']:>7} ev/cpu-s  unfinished {row['unfinished']}")


@click.command("sim-growth")
@click.option("--jobs-sizes", "job_sizes", type=SizeList(JOBS), default="3000,10000,30000,100000",
              show_default=True, help="the jobs series: trace sizes, run at --at-nodes nodes")
@click.option("--nodes-sizes", "node_sizes", type=SizeList(NODES), default="1000,3000,10000",
              show_default=True, help="the nodes series: cluster sizes, run under --at-jobs jobs")
@click.option("--at-nodes", type=NODES, default=10_000, show_default=True, help="cluster size of the jobs series")
@click.option("--at-jobs", type=JOBS, default=10_000, show_default=True, help="trace size of the nodes series")
@click.option("--load", type=FiniteFloat(0.01, 10), default=0.9, show_default=True,
              help="offered load: the arrival rate follows each point's node count")
@click.option("--policy", "policies", multiple=True, help=f"policy to run (repeatable; default {', '.join(POLICIES)})")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per run, then one per policy's exponents")
@click.option("--plot", "plot_path", type=OutputPath(dir_okay=False), callback=_plot_path, default=None,
              help="write the log-log plot of CPU time and peak RSS against jobs and nodes here (.png/.svg/.pdf)")
@click.option("--rows", "rows_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="run nothing: fit (and plot) the runs of earlier --json output saved in this file")
def sim_growth(job_sizes: tuple[int, ...], node_sizes: tuple[int, ...], at_nodes: int, at_jobs: int, load: float,
               policies: tuple[str, ...], as_json: bool, plot_path: Path | None, rows_path: Path | None) -> None:
    """How the simulator's CPU time and peak memory grow with the jobs and with the nodes (the
    Yahoo-like trace of `bench sim`), with each growth exponent read off a log-log fit."""
    check_policies(policies)
    plan = Plan(job_sizes, node_sizes, at_nodes, at_jobs)
    if rows_path is None:
        policies = policies or POLICIES
        rows = _run(plan, policies, load, as_json)
    else:
        rows = read_rows(rows_path, load)
        policies = policies or tuple(dict.fromkeys(r["policy"] for r in rows))
    for p in policies:
        fit = growth(plan, rows, p)
        if as_json:
            click.echo(json.dumps({"policy": p, "growth_exponents": fit}))
        else:
            click.echo(f"{p:8} growth exponents: " + "  ".join(
                f"{k} {'n/a' if v is None else f'{v:.2f}'}" for k, v in fit.items()))
    if plot_path is not None:
        cores = sorted({"compiled core" if r["core"].startswith("simulator core: compiled") else "pure-Python core"
                        for r in rows})
        plot(plan, rows, policies, plot_path, f"Simulator growth, Yahoo-like trace at load {load} ({', '.join(cores)})")
        click.echo(f"plot: {plot_path}", err=True)


def _run(plan: Plan, policies: Sequence[str], load: float, as_json: bool) -> list[dict[str, Any]]:
    """Every point of `plan` under every policy, each row printed as its run ends."""
    points = plan.points()
    click.echo(f"{len(points)} sizes x {len(policies)} policies, Yahoo-like trace at load {load}: jobs "
               f"{', '.join(map(str, plan.job_sizes))} at {plan.at_nodes} nodes; nodes "
               f"{', '.join(map(str, plan.node_sizes))} under {plan.at_jobs} jobs", err=True)
    rows: list[dict[str, Any]] = []
    for n_jobs, nodes in points:
        for p in policies:
            row = {**measure(p, n_jobs, nodes, load), "load": load}
            if not rows:
                click.echo(row["core"], err=True)
            rows.append(row)
            click.echo(json.dumps(row) if as_json else _line(row))
    return rows
