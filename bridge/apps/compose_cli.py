"""`schedbridge testbed render | run-daemon`: the docker-compose services' entry point.

Registered on the `testbed` group, so a compose container and `schedbridge testbed up` share
one implementation of the configuration and of every daemon's command line.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from bridge.common.paths import testbed_home
from bridge.testbed import hadoopconf
from bridge.testbed.cgroupdelegate import DelegationError
from bridge.testbed.cluster import TestbedError
from bridge.testbed.compose import ROLES, TOKEN_FILE, compose_layout, node_name, render, role_commands
from bridge.testbed.foreground import supervise
from bridge.testbed.layout import ClusterLayout, default_layout

_home = click.option("--home", type=click.Path(file_okay=False, path_type=Path), default=testbed_home,
                     show_default="$SCHEDBRIDGE_TESTBED or .testbed",
                     help="Where configuration, data and logs go.")


def _progress(message: str) -> None:
    click.echo(f"schedbridge: {message}", err=True)


@click.command("render")
@click.option("--layout", "kind", type=click.Choice(["local", "compose"]), default="local", show_default=True)
@_home
def render_cmd(kind: str, home: Path) -> None:
    """Write the Hadoop configuration of the local testbed or of the compose cluster, to inspect or diff."""
    layout: ClusterLayout = compose_layout(home) if kind == "compose" else replace(default_layout(), home=home)
    hadoopconf.write_all(layout)
    click.echo(layout.conf_dir)
    for nm in layout.nodemanagers:
        click.echo(layout.nm_conf_dir(nm))


@click.command("run-daemon")
@click.argument("role", type=click.Choice(ROLES))
@_home
@click.option("--policy", default="fifo", show_default=True, envvar="SCHEDBRIDGE_POLICY",
              help="client: the policy the bridge daemon serves ($SCHEDBRIDGE_POLICY).")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=TOKEN_FILE,
              show_default=True, help="The node agents' shared token (created on first start).")
def run_daemon(role: str, home: Path, policy: str, token_file: Path) -> None:
    """Render this container's configuration and run ROLE's processes in the foreground.

    For docker-compose services: a nodemanager also runs its node agent; the client runs the
    bridge daemon (`schedbridge serve`).
    """
    layout = compose_layout(home, node_name() if role == "nodemanager" else "nodemanager")
    render(role, layout)
    try:
        commands = role_commands(role, layout, policy, token_file, _progress)
    except (TestbedError, DelegationError) as exc:
        raise click.ClickException(str(exc)) from exc
    sys.exit(supervise(commands))
