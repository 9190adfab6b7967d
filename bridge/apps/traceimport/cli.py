"""`schedbridge trace import`: a Spark event log or a ResourceManager's applications into a trace
file, and the `trace` group it joins (`trace generate` is `workloads.synthetic.cli`'s)."""
from __future__ import annotations

from pathlib import Path

import click

from bridge.apps.traceimport import imported as imp
from bridge.apps.traceimport.spark import read_event_log
from bridge.apps.traceimport.yarn import TASK_READINGS, read_applications
from bridge.common.options import OutputPath, output_dir
from bridge.history.logs import EventLogError
from workloads.synthetic.cli import trace

__all__ = ["trace"]


def _read(eventlogs: tuple[Path, ...], rm_url: str | None, rm_tasks: str,
          skipped: imp.Skipped) -> tuple[list[imp.ImportedJob], list[str]]:
    from yarnclient.errors import YarnError
    from yarnclient.resourcemanager import ResourceManagerClient

    jobs: list[imp.ImportedJob] = []
    read: list[str] = []
    try:
        for path in eventlogs:
            found, what = read_event_log(path, skipped)
            jobs += found
            read.append(what)
        if rm_url is not None:
            client = ResourceManagerClient(rm_url)
            try:
                found, what = read_applications(client, rm_tasks, skipped)
            finally:
                client.close()
            jobs += found
            read.append(what)
    except (EventLogError, YarnError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot read {exc.filename or 'the event log'}: {exc.strerror or exc}") from None
    return jobs, read


@trace.command("import")
@click.option("--from-eventlog", "eventlogs", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="A Spark application's event log: a file (plain or zstd-compressed, as Spark 4 writes it) "
                   "or a rolled eventlog_v2_* folder. Repeatable: the applications' jobs in one trace.")
@click.option("--from-rm", "rm_url", default=None, metavar="URL",
              help="A ResourceManager's web address (http://HOST:8088): its applications over REST.")
@click.option("--rm-tasks", type=click.Choice(TASK_READINGS), default="vcores", show_default=True,
              help="With --from-rm, an application's tasks: its average vcores held (vcoreSeconds / "
                   "duration), each lasting the application's duration, or one such task.")
@click.option("--format", "fmt", type=click.Choice(imp.FORMATS), default=None,
              help="thesis (submit n mean d1..dn; a job is a bag of tasks) or jsonl (the rich format: "
                   "each job's stages and their parents kept) [default: by --out's extension].")
@click.option("--out", type=OutputPath(dir_okay=False), required=True, help="The trace file to write.")
def import_command(eventlogs: tuple[Path, ...], rm_url: str | None, rm_tasks: str, fmt: str | None,
                   out: Path) -> None:
    """Import a cluster's history (Spark event logs, a ResourceManager) as a trace.

    Each Spark job of an event log (its submission,
    its successful tasks' durations, its stages), or each finished application of a
    ResourceManager, becomes a job; submissions are in seconds after the first. Prints what was
    read and what was left out, and why."""
    if bool(eventlogs) == (rm_url is not None):
        raise click.UsageError("give --from-eventlog PATH (repeatable) or --from-rm URL, one of the two")
    try:
        fmt = imp.format_of(out, fmt)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--format") from None
    skipped = imp.Skipped()
    found, read = _read(eventlogs, rm_url, rm_tasks, skipped)
    for line in read:
        click.echo(f"read {line}")
    if skipped.counts:
        click.echo("left out:")
        for line in skipped.lines():
            click.echo(line)
    if not found:
        raise click.ClickException("no job to import: nothing written")
    jobs = imp.trace_jobs(found, stages=fmt == "jsonl")
    try:
        with output_dir(out.parent):
            imp.write(jobs, out, fmt)
    except OSError as exc:
        raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from None
    stages = sum(len(j.stage_parents or ()) for j in found)
    kept = (f", {stages} stages with their parents" if fmt == "jsonl"
            else "; stages not kept (the thesis format has none: write a .jsonl trace for them)" if stages else "")
    span = jobs[-1].submit
    click.echo(f"imported {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks{kept}, submitted over "
               f"{span:g} s")
    click.echo(f"wrote {out} ({fmt} format)")
