"""`schedbridge trace import`: Spark event logs (files, or folders of them, local or in HDFS, or a
History Server's) or a ResourceManager's applications into a trace file, and the `trace` group it
joins (`trace generate` is `workloads.synthetic.cli`'s)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click

from bridge.apps.history_sources import SOURCE_HELP, EventLogSource, has_hdfs, history_server_option, history_sources
from bridge.apps.traceimport import imported as imp
from bridge.apps.traceimport.cluster import Executor, shape_of
from bridge.apps.traceimport.spark import read_event_log
from bridge.apps.traceimport.yarn import TASK_READINGS, read_applications
from bridge.common.options import OutputPath, output_dir
from bridge.history.logs import EventLogError
from bridge.history.sources import Applications, RemoteSource, source_logs
from bridge.target.config import announce, hadoop_conf_dir_option, resolve
from workloads.synthetic.cli import trace
from workloads.trace import cluster_comment
from yarnclient.hadoopconf import HadoopConfError

__all__ = ["trace"]


@dataclass
class _History:
    """What the sources held: jobs, executors, a line per source read, and notes (duplicates)."""

    jobs: list[imp.ImportedJob] = field(default_factory=list)
    executors: list[Executor] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _read_eventlogs(sources: list[Path | RemoteSource], skipped: imp.Skipped, history: _History) -> None:
    """Every application in ``sources`` (a log, a folder of them at any depth, a remote source),
    each once."""
    applications = Applications()
    for _, log in source_logs(sources, applications, files_as_logs=True):
        with log.named_errors():
            app = read_event_log(log.path, skipped)
        history.jobs += app.jobs
        history.executors += app.executors
        history.read.append(log.shown(app.what))
    history.notes += applications.notes


def _read_rm(rm_url: str, conf_dir: Path | None, rm_tasks: str, skipped: imp.Skipped, history: _History) -> None:
    """The finished applications of the ResourceManager at ``rm_url``, else of the cluster's
    configuration (`bridge.target.config`: --hadoop-conf-dir, $HADOOP_CONF_DIR, ..., with HA)."""
    from yarnclient.resourcemanager import ResourceManagerClient

    if rm_url:
        client = ResourceManagerClient(rm_url)
    else:
        target = resolve(conf_dir, hdfs=False)
        announce("trace import", target)
        client = target.rm_client()
    try:
        found, what = read_applications(client, rm_tasks, skipped)
    finally:
        client.close()
    history.jobs += found
    history.read.append(what)


def _read(eventlogs: tuple[Path | str, ...], history_servers: tuple[str, ...], rm_url: str | None,
          conf_dir: Path | None, rm_tasks: str, skipped: imp.Skipped) -> _History:
    from yarnclient.errors import YarnError

    history = _History()
    try:
        if eventlogs or history_servers:
            _read_eventlogs(history_sources(eventlogs, history_servers, conf_dir, "trace import"), skipped, history)
        if rm_url is not None:
            _read_rm(rm_url, conf_dir, rm_tasks, skipped, history)
    except (EventLogError, YarnError, HadoopConfError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot read {exc.filename or 'the event log'}: {exc.strerror or exc}") from None
    return history


def _cluster_header(history: _History) -> list[str]:
    """The trace's cluster comment, from the event logs' executors (none from a ResourceManager),
    and a line saying what it is."""
    if not history.executors:
        return []
    shape = shape_of(history.executors)
    if shape.nodes is None or shape.slots is None:
        click.echo(f"cluster not recorded: {shape.why}")
        return []
    click.echo(f"cluster {shape.nodes} x {shape.slots} slots ({shape.why}): simulate and rank use it "
               "when given no --nodes")
    return [cluster_comment(shape.nodes, shape.slots, f"executors x slots, from the event logs ({shape.why})")]


@trace.command("import")
@click.option("--from-eventlog", "eventlogs", multiple=True, type=EventLogSource(),
              help=f"{SOURCE_HELP}. Repeatable, and with --from-history-server: "
                   "the applications' jobs in one trace, each application once.")
@history_server_option
@click.option("--from-rm", "rm_url", is_flag=False, flag_value="", metavar="[URL]",  # no default: URL optional
              help="A ResourceManager's web address (http://HOST:8088): its applications over REST. Without "
                   "URL, the ResourceManager (with HA, the active one) of --hadoop-conf-dir, else "
                   "$HADOOP_CONF_DIR, else $YARN_CONF_DIR, else the local testbed.")
@hadoop_conf_dir_option
@click.option("--rm-tasks", type=click.Choice(TASK_READINGS), default="vcores", show_default=True,
              help="With --from-rm, an application's tasks: its average vcores held (vcoreSeconds / "
                   "duration), each lasting the application's duration, or one such task.")
@click.option("--format", "fmt", type=click.Choice(imp.FORMATS), default=None,
              help="thesis (submit n mean d1..dn; a job is a bag of tasks) or jsonl (the rich format: "
                   "each job's stages and their parents kept) [default: by --out's extension].")
@click.option("--out", type=OutputPath(dir_okay=False), required=True, help="The trace file to write.")
def import_command(eventlogs: tuple[Path | str, ...], history_servers: tuple[str, ...], rm_url: str | None,
                   hadoop_conf_dir: Path | None, rm_tasks: str, fmt: str | None, out: Path) -> None:
    """Import a cluster's history (Spark event logs, a History Server, a ResourceManager) as a trace.

    Each Spark job of an event log (its submission,
    its successful tasks' durations, its stages), or each finished application of a
    ResourceManager, becomes a job; submissions are in seconds after the first. From event logs,
    the trace records the cluster the jobs ran on (executors as nodes, their task slots). Prints
    what was read and what was left out, and why."""
    if bool(eventlogs or history_servers) == (rm_url is not None):
        raise click.UsageError("give --from-eventlog PATH or --from-history-server URL (each repeatable), "
                               "or --from-rm [URL], one of the two")
    if hadoop_conf_dir is not None and rm_url != "" and not has_hdfs(eventlogs):
        raise click.UsageError("--hadoop-conf-dir names the cluster of --from-rm given without a URL, "
                               "or of hdfs:// event logs")
    try:
        fmt = imp.format_of(out, fmt)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--format") from None
    skipped = imp.Skipped()
    history = _read(eventlogs, history_servers, rm_url, hadoop_conf_dir, rm_tasks, skipped)
    found = history.jobs
    for line in history.read:
        click.echo(f"read {line}")
    for line in history.notes:
        click.echo(line)
    if skipped.counts:
        click.echo("left out:")
        for line in skipped.lines():
            click.echo(line)
    if not found:
        raise click.ClickException("no job to import: nothing written")
    jobs = imp.trace_jobs(found, stages=fmt == "jsonl")
    header = _cluster_header(history)
    try:
        with output_dir(out.parent):
            imp.write(jobs, out, fmt, header)
    except OSError as exc:
        raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from None
    stages = sum(len(j.stage_parents or ()) for j in found)
    kept = (f", {stages} stages with their parents" if fmt == "jsonl"
            else "; stages not kept (the thesis format has none: write a .jsonl trace for them)" if stages else "")
    span = jobs[-1].submit
    click.echo(f"imported {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks{kept}, submitted over "
               f"{span:g} s")
    click.echo(f"wrote {out} ({fmt} format)")
