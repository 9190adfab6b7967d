"""Which cluster a command talks to: one rule for every command that has a cluster option.

`--hadoop-conf-dir DIR`, else `$HADOOP_CONF_DIR`, else `$YARN_CONF_DIR` (which Spark reads too),
else the default cluster; the command prints which on stderr (`announce`), so that a user who
exported a variable, or forgot to, sees where the work is going before it goes there. A conf
dir that is the default cluster's own client configuration is that cluster, with its Spark
defaults, whichever way it was given. The default cluster is whatever the command line registered
(`bridge.target.default`: the local testbed, `bridge.testbed.target`), and it must be running: a user
who forgot to export HADOOP_CONF_DIR gets an error naming both ways out, never a job sent to a
cluster they did not mean. A ``PYSPARK_PYTHON`` the user exported reaches Spark unchanged, and on
a cluster other than the default none is made up: executors on real NodeManagers run the user's
path or Spark's default (``python3`` there), never the gateway's interpreter, which the nodes
need not have.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bridge.target.default import default_cluster
from yarnclient.hadoopconf import HadoopConfError, fs_default, rm_webapp_urls, webhdfs_url
from yarnclient.resourcemanager import ResourceManagerClient

if TYPE_CHECKING:
    from bridge.nodes.cluster_agents import NodeAgents

ENV_VARS = ("HADOOP_CONF_DIR", "YARN_CONF_DIR")
OPTION = "--hadoop-conf-dir"
CONF_DIR_ORIGINS = (OPTION, *(f"${name}" for name in ENV_VARS))
DEFAULT = "the default cluster"  # `choose_conf_dir`'s origin when nothing names a conf dir
OPTION_HELP = ("Hadoop configuration directory of the cluster (default: $HADOOP_CONF_DIR, else "
               "$YARN_CONF_DIR, else the local testbed).")


@dataclass(frozen=True)
class ClusterTarget:
    """Addresses of one cluster, the environment its Spark drivers run in and, for a cluster that
    starts node agents for a run itself (the local testbed), how (``own_agents``, given the run's label
    and the agents' minimum share in cores, None for the agent's default)."""

    conf_dir: Path
    rm_url: str
    webhdfs_url: str
    fs_default: str
    env: dict[str, str] = field(repr=False, compare=False)
    rm_urls: tuple[str, ...] = ()  # with ResourceManager HA: every RM, in yarn.resourcemanager.ha.rm-ids order
    origin: str = DEFAULT  # how it was chosen, for the line `announce` prints
    own_agents: Callable[[str, float | None], NodeAgents] | None = field(default=None, repr=False, compare=False)

    def rm_client(self, user: str | None = None) -> ResourceManagerClient:
        """A client of this cluster's RM; with HA, of whichever RM is active."""
        return ResourceManagerClient(self.rm_urls or self.rm_url, user=user)

    def describe(self) -> str:
        """One line: where the cluster came from and its addresses."""
        source = f"{self.origin} {self.conf_dir}" if self.origin in CONF_DIR_ORIGINS else self.origin
        rms = ", ".join(self.rm_urls or (self.rm_url,))
        hdfs = f", WebHDFS {self.webhdfs_url}" if self.webhdfs_url else ""
        return f"cluster from {source}: ResourceManager {rms}{hdfs}"


def choose_conf_dir(given: Path | None, environ: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """The rule itself: (the conf dir, how it was chosen); None means the default cluster."""
    environ = os.environ if environ is None else environ
    if given is not None:
        return _existing(given, OPTION), OPTION
    for name in ENV_VARS:
        if environ.get(name):
            return _existing(Path(environ[name]), f"${name}"), f"${name}"
    return None, DEFAULT


def _existing(conf_dir: Path, origin: str) -> Path:
    if not conf_dir.is_dir():
        raise HadoopConfError(f"{origin} {conf_dir}: no such directory")
    return conf_dir


def is_default(conf_dir: Path | None) -> bool:
    """``conf_dir`` (as `choose_conf_dir` chose it) is the registered default cluster's."""
    default = default_cluster()
    return default is not None and (conf_dir is None or conf_dir.resolve() == default.conf_dir.resolve())


def from_conf_dir(conf_dir: Path, hdfs: bool = True) -> ClusterTarget:
    """Any cluster described by a Hadoop configuration directory; its HDFS only if `hdfs`
    (a replay keeps its inputs there; a plain submission may not use HDFS at all)."""
    env = dict(os.environ, HADOOP_CONF_DIR=str(conf_dir), YARN_CONF_DIR=str(conf_dir))
    rm_urls = tuple(rm_webapp_urls(conf_dir))
    nn, fs = (webhdfs_url(conf_dir), fs_default(conf_dir)) if hdfs else ("", "")
    return ClusterTarget(conf_dir, rm_urls[0], nn, fs, env, rm_urls)


def resolve(given: Path | None, environ: Mapping[str, str] | None = None, hdfs: bool = True) -> ClusterTarget:
    """The cluster by `choose_conf_dir`'s rule, with its addresses read from its configuration."""
    conf_dir, origin = choose_conf_dir(given, environ)
    default = default_cluster()
    if conf_dir is None:
        if default is None:
            raise HadoopConfError(f"no {OPTION}, $HADOOP_CONF_DIR or $YARN_CONF_DIR: point one of them at "
                                  "your cluster's Hadoop configuration")
        default.check_running()
        return default.target()
    if default is not None and is_default(conf_dir):
        return replace(default.target(), origin=origin)
    return replace(from_conf_dir(conf_dir, hdfs), origin=origin)


def announce(command: str, target: ClusterTarget) -> None:
    """Say on stderr which cluster `command` talks to."""
    click.echo(f"{command}: {target.describe()}", err=True)


def hadoop_conf_dir_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--hadoop-conf-dir`, spelt and explained the same in every command that has it."""
    return click.option(OPTION, type=click.Path(file_okay=False, path_type=Path),
                        help=OPTION_HELP)(function)
