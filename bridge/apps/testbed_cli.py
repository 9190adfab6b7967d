"""`schedbridge testbed up | down | status | logs | restore`."""
from __future__ import annotations

import importlib.util

import click

from bridge.common.options import MAX_SECONDS, SLOTS, FiniteFloat
from bridge.nodes.node_capacity import load_record
from bridge.nodes.node_capacity import restore as restore_vcores
from bridge.testbed.cluster import Testbed, TestbedError
from bridge.testbed.layout import ClusterLayout, default_layout
from bridge.testbed.local_agents import restore_recorded_agents
from yarnclient import ResourceManagerClient


def _testbed(nodemanagers: int, vcores: int, memory_mb: int) -> Testbed:
    return Testbed(default_layout(nodemanagers=nodemanagers, vcores=vcores, memory_mb=memory_mb))


_shape = [
    click.option("--nodemanagers", default=2, show_default=True, type=click.IntRange(1, 64),
                 help="Number of NodeManagers."),
    click.option("--vcores", default=4, show_default=True, type=SLOTS,
                 help="Virtual cores per NodeManager."),
    click.option("--memory-mb", default=4096, show_default=True, type=click.IntRange(1, 4 * 1024 * 1024),
                 help="Memory per NodeManager (MB)."),
]


def shape_options(func):
    for option in reversed(_shape):
        func = option(func)
    return func


@click.group()
def testbed() -> None:
    """A real local Hadoop 3.5.0 cluster (HDFS + YARN) on loopback."""


@testbed.command()
@shape_options
@click.option("--timeout", default=180.0, show_default=True, type=FiniteFloat(min=0, min_open=True, max=MAX_SECONDS),
              help="Seconds to wait for readiness.")
def up(nodemanagers: int, vcores: int, memory_mb: int, timeout: float) -> None:
    """Start NameNode, DataNode, ResourceManager and the NodeManagers; wait until ready."""
    bed = _testbed(nodemanagers, vcores, memory_mb)
    try:
        bed.up(timeout_s=timeout, progress=lambda msg: click.echo(f"testbed: {msg}", err=True))
    except TestbedError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(bed.status_text())
    for line in shell_exports(bed.layout):
        click.echo(line)


def shell_exports(layout: ClusterLayout) -> list[str]:
    """What a shell needs for `hadoop`, `yarn` and plain `spark-submit --master yarn` against the
    testbed: without SPARK_CONF_DIR, Spark would upload its ~400 MB of jars for every application
    and bind the driver away from loopback. Spark's only where pyspark is installed."""
    lines = [f"export HADOOP_CONF_DIR={layout.conf_dir}"]
    if importlib.util.find_spec("pyspark") is not None:
        from bridge.testbed.spark import write_spark_conf  # imports pyspark: only when installed

        lines.append(f"export SPARK_CONF_DIR={write_spark_conf(layout)}")
    return lines


@testbed.command()
@shape_options
def down(nodemanagers: int, vcores: int, memory_mb: int) -> None:
    """Stop the daemons this testbed started (by their recorded pids)."""
    stopped = _testbed(nodemanagers, vcores, memory_mb).down(
        progress=lambda msg: click.echo(f"testbed: {msg}", err=True))
    click.echo(f"stopped {len(stopped)} daemon(s)" if stopped else "nothing was running")


@testbed.command()
@shape_options
def status(nodemanagers: int, vcores: int, memory_mb: int) -> None:
    """Which daemons run, and the nodes the ResourceManager sees."""
    click.echo(_testbed(nodemanagers, vcores, memory_mb).status_text())


@testbed.command()
@shape_options
@click.argument("daemon", required=False)
@click.option("-n", "--lines", default=40, show_default=True, type=click.IntRange(0, 1_000_000))
def logs(nodemanagers: int, vcores: int, memory_mb: int, daemon: str | None, lines: int) -> None:
    """The end of a daemon's log (all daemons if none is named)."""
    bed = _testbed(nodemanagers, vcores, memory_mb)
    names = [spec.name for spec in bed.daemons()]
    if daemon and daemon not in names:
        raise click.ClickException(f"unknown daemon {daemon!r}; known: {', '.join(names)}")
    for name in [daemon] if daemon else names:
        click.echo(f"==> {bed.processes.log_path(name)} <==")
        click.echo(bed.processes.tail(name, lines))


@testbed.command()
def restore() -> None:
    """Undo what a killed `replay --preempt` left: stop its node agents, restore their containers
    and give the NodeManagers back their original vcores."""
    layout = default_layout()
    agents, failed = restore_recorded_agents(layout)
    if agents:
        click.echo(f"{agents - len(failed)} of {agents} node agent(s) stopped, their containers restored")
    record = layout.vcores_record
    try:
        saved = load_record(record)
    except ValueError as exc:
        raise click.ClickException("; ".join([*failed, str(exc)])) from None
    if saved:
        failed += [f"could not restore {node}'s vcores at {layout.rm_url}; {record} is kept"
                   for node in restore_vcores(ResourceManagerClient(layout.rm_url, user=layout.user), record)]
        click.echo(", ".join(f"{node}: {vcores} vcores" for node, (vcores, _) in sorted(saved.items()))
                   + (" (restore failed)" if failed else " (restored)"))
    if failed:
        raise click.ClickException("; ".join(failed) + "; run `schedbridge testbed restore` again")
    if not (agents or saved):
        click.echo(f"nothing to restore: no vcores record at {record}, no node agent left")

# The docker-compose services' entry points live in their own module, on this same group.
from bridge.apps.compose_cli import render_cmd, run_daemon  # noqa: E402

testbed.add_command(render_cmd)
testbed.add_command(run_daemon)
