"""`schedbridge report RESULTS...`: compare runs side by side, in a table and in plots."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click
import pandas as pd

from bridge.apps.report.load import load_runs
from bridge.apps.report.measures import (
    CLASSES, allocated_vcores, alone_estimates, busy_series, completed, resolve_cutoff, with_ideal,
)
from bridge.apps.report.run import ResultsError, Run
from bridge.apps.report.table import build
from bridge.common import atomic, plots
from bridge.common.options import ChoiceList, FiniteFloat, OutputPath, output_dir, require_directory_place
from bridge.common.tables import text as render_text
from bridge.history.logs import is_event_log

MEASURES = (("jct", "job completion time", "job completion time (s)"),
            ("slowdown", "slowdown", "slowdown (JCT / runtime alone)"))


def write_plots(runs: list[Run], out: Path, cutoff: float, formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """jct_cdf, slowdown_cdf (a CDF panel per class: short, long) and utilization in `out`, each
    in every one of `formats` (`bridge.common.plots.FORMATS`)."""
    out.mkdir(parents=True, exist_ok=True)
    estimates = alone_estimates(runs)
    done = {r.label: completed(with_ideal(r, estimates), cutoff) for r in runs}
    first, also = f".{formats[0]}", formats[1:]
    drawn = [plots.draw([[cdf_panel(done, column, cls, xlabel, cutoff) for cls in CLASSES]],
                        out / f"{column}_cdf{first}", also=also,
                        title=f"CDF of {name}: jobs long iff their mean task duration is above {cutoff:.4g} s")
             for column, name, xlabel in MEASURES]
    drawn.append(plots.draw([[_utilization_panel(runs)]], out / f"utilization{first}", panel_size=(7, 3.5),
                            also=also))
    return [path.with_suffix(f".{fmt}") for path in drawn for fmt in formats]


def cdf_panel(done: dict[str, pd.DataFrame], column: str, cls: str, xlabel: str, cutoff: float) -> plots.Panel:
    """One class's CDF of `column` for every run, its x axis logarithmic where the values span
    a decade or more (`bridge.common.plots.spans_decades`)."""
    values = {label: jobs.loc[jobs["cls"] == cls, column] for label, jobs in done.items()}
    pooled = [v for series in values.values() for v in series]
    return plots.Panel([plots.cdf(label, series) for label, series in values.items()],
                       f"{cls} jobs (mean task duration {'<=' if cls == 'short' else '>'} {cutoff:.4g} s)",
                       xlabel, "fraction of jobs", ylim=(0, 1.02), logx=plots.spans_decades(pooled),
                       empty=f"no completed {cls} jobs in these results")


def _utilization_panel(runs: list[Run]) -> plots.Panel:
    """Busy task slots (solid) and, for live runs, allocated vcores (dashed, same colour), as shares."""
    series = []
    for i, run in enumerate(runs):
        busy = busy_series(run)
        if busy is None:
            continue
        series.append(plots.Series(f"{run.label} busy", busy["time"], busy["utilization"], step=True, color=f"C{i}"))
        if run.allocation is not None and run.n_slots:
            series.append(plots.Series(f"{run.label} allocated", run.allocation["time_s"],
                                       allocated_vcores(run.allocation) / run.n_slots, step=True, dashed=True,
                                       color=f"C{i}"))
    return plots.Panel(series, "Cluster utilization", "time since start (s)", "share of vcores", ylim=(0, 1.05),
                       empty="no per-task times in these results\n(a simulator run's are in the file "
                             "`simulate --tasks-out` writes)")


def _default_out(first: Path) -> Path:
    """Inside a results directory; beside a file; beside an event log under a name Spark's History
    Server, which may scan that folder, does not take for a log (`eventlog_v2_*`, or a file)."""
    if is_event_log(first):
        return first.with_name(f"report-{first.name}")
    return first / "report" if first.is_dir() else first.with_name(f"{first.stem}-report")


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=OutputPath(file_okay=False),
              help="Where to write report.csv, report.txt and the figures (default: report/ inside "
                   "the first results directory; beside a first event log or per-job file).")
@click.option("--cutoff", type=FiniteFloat(min=0, max=1e9), default=None,
              help="Reporting cutoff (s) on a job's mean task duration: above it a job is long "
                   "[default: the one the simulator's per-job files recorded, else every command's "
                   "rule: the 90th percentile of the jobs' mean task durations].")
@click.option("--format", "formats", type=ChoiceList(plots.FORMATS), default="png", show_default=True,
              help="The figures' formats, comma-separated (png,svg,pdf): each figure in each, side by side.")
@click.option("--partial", is_flag=True,
              help="Report a replay that did not finish (meta.json state running or interrupted) over "
                   "the jobs that did, its column marked [partial]; without it such a run is refused.")
def report(results: tuple[Path, ...], out: Path | None, cutoff: float | None, formats: tuple[str, ...],
           partial: bool) -> None:
    """Side-by-side table and plots for several runs: replay results directories, simulator
    per-job files (`schedbridge simulate --out FILE.csv`) or per-task files (`--tasks-out FILE.csv`:
    the same jobs, less any that never ran a task, with utilization over time) and/or Spark event
    logs of applications (a file, or Spark 4's rolled eventlog_v2_* folder; plain or
    zstd-compressed, Spark's default).

    A replay that did not finish is refused, naming the jobs that never finished: its percentiles
    would silently leave out the slowest jobs. --partial reports it anyway, marked.

    Short and long jobs are reported apart, split as `simulate` splits them (--cutoff)."""
    try:
        runs = load_runs(list(results))
        cutoff, origin = resolve_cutoff(runs, cutoff)
    except ResultsError as exc:
        raise click.ClickException(str(exc)) from None
    notes = [run.not_finished() for run in runs if not run.complete]
    if notes and not partial:
        raise click.ClickException("\n".join(notes) + "\nrerun it, or pass --partial to report the "
                                   "jobs that finished")
    runs = [run if run.complete else replace(run, label=f"{run.label} [partial]") for run in runs]
    target = out or _default_out(results[0])
    require_directory_place(target, "the report")
    table = build(runs, cutoff)
    text = "\n".join([f"reporting cutoff {cutoff:.6g} s ({origin}): a job is long iff its mean task "
                      "duration is above it", render_text(table, index=True),
                      *(f"partial: {note}" for note in notes)])
    with output_dir(target):
        atomic.write_text(target / "report.csv", table.to_csv())
        atomic.write_text(target / "report.txt", text + "\n")
        figures = write_plots(runs, target, cutoff, formats)
    click.echo(text)
    for path in figures:
        click.echo(f"plot: {path}")
