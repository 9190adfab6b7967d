"""The local testbed as a cluster a command talks to: the default cluster of the command line.

``schedbridge`` registers it (``bridge.cli``; built only when a command asks), so that a command
given no Hadoop configuration directory talks to the testbed of `schedbridge testbed up` (its
rendered HADOOP_CONF_DIR and Spark defaults), and a preempting run on it gets node agents started
for the run. Its nodes are this host: its Spark defaults run this Python unless the user's
PYSPARK_PYTHON says otherwise.
"""
from __future__ import annotations

from pathlib import Path

from bridge.target.config import ClusterTarget
from bridge.testbed.cluster import Testbed
from bridge.testbed.layout import default_layout
from bridge.testbed.local_agents import LocalTestbedAgents
from yarnclient.hadoopconf import HadoopConfError

NAME = "the local testbed"


class LocalTestbed:
    """The testbed at ``default_layout()`` (its home and ports from the environment, read on each use)."""

    @property
    def conf_dir(self) -> Path:
        return default_layout().conf_dir

    def check_running(self) -> None:
        """The default target must be up: a stopped testbed means the user meant another cluster."""
        stopped = sorted(name for name, pid in Testbed(default_layout()).running().items() if pid is None)
        if stopped:
            raise HadoopConfError(
                f"no --hadoop-conf-dir, $HADOOP_CONF_DIR or $YARN_CONF_DIR, and the local testbed is not running "
                f"({', '.join(stopped)} stopped): point one of them at your cluster's Hadoop configuration, "
                "or start the testbed with `schedbridge testbed up`")

    def target(self) -> ClusterTarget:
        """Its addresses, its Spark defaults and agents started for a run on its NodeManagers."""
        from bridge.testbed.spark import spark_env  # imports pyspark: only when Spark will run

        layout = default_layout()
        return ClusterTarget(layout.conf_dir, layout.rm_url, layout.webhdfs_url, layout.fs_default,
                             spark_env(layout), origin=NAME,
                             own_agents=lambda label, min_share: LocalTestbedAgents(layout, label, min_share))

