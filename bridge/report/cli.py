"""`schedbridge report RESULTS...`: compare runs side by side, in a table and in plots."""
from __future__ import annotations

from pathlib import Path

import click

from bridge.options import OutputPath, output_dir, require_directory_place

from bridge.replay.results import write_atomically
from bridge.report.load import ResultsError, load_runs
from bridge.report.plots import write_plots
from bridge.report.table import build
from bridge.tables import text as render_text


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=OutputPath(file_okay=False),
              help="Where to write report.csv, report.txt and the PNG plots "
                   "(default: report/ inside the first results directory).")
def report(results: tuple[Path, ...], out: Path | None) -> None:
    """Side-by-side table and plots for several runs: replay results directories and/or
    simulator per-job files (`schedbridge simulate --out FILE.csv`)."""
    try:
        runs = load_runs(list(results))
    except ResultsError as exc:
        raise click.ClickException(str(exc)) from None
    first = results[0]
    target = out or (first / "report" if first.is_dir() else first.with_name(f"{first.stem}-report"))
    require_directory_place(target, "the report")
    table = build(runs)
    text = render_text(table, index=True)
    with output_dir(target):
        write_atomically(target / "report.csv", table.to_csv())
        write_atomically(target / "report.txt", text + "\n")
        plots = write_plots(runs, target)
    click.echo(text)
    for path in plots:
        click.echo(f"plot: {path}")
