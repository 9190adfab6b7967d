"""Which cluster a replay talks to: the local testbed by default, any cluster by its conf dir."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bridge.testbed.layout import default_layout
from bridge.testbed.spark import spark_env
from yarnclient.resourcemanager import ResourceManagerClient
from yarnclient.hadoopconf import fs_default, rm_webapp_urls, webhdfs_url


@dataclass(frozen=True)
class ClusterTarget:
    """Addresses of one cluster and the environment its Spark drivers run in."""

    conf_dir: Path
    rm_url: str
    webhdfs_url: str
    fs_default: str
    env: dict[str, str] = field(repr=False, compare=False)
    rm_urls: tuple[str, ...] = ()  # with ResourceManager HA: every RM, in yarn.resourcemanager.ha.rm-ids order

    def rm_client(self, user: str | None = None) -> ResourceManagerClient:
        """A client of this cluster's RM; with HA, of whichever RM is active."""
        return ResourceManagerClient(self.rm_urls or self.rm_url, user=user)


def local_testbed() -> ClusterTarget:
    """The testbed of `schedbridge testbed up` (its rendered HADOOP_CONF_DIR and Spark defaults)."""
    layout = default_layout()
    return ClusterTarget(layout.conf_dir, layout.rm_url, layout.webhdfs_url, layout.fs_default,
                         spark_env(layout))


def from_conf_dir(conf_dir: Path) -> ClusterTarget:
    """Any cluster described by a Hadoop configuration directory."""
    env = dict(os.environ, HADOOP_CONF_DIR=str(conf_dir), YARN_CONF_DIR=str(conf_dir),
               PYSPARK_PYTHON=sys.executable)
    rm_urls = tuple(rm_webapp_urls(conf_dir))
    return ClusterTarget(conf_dir, rm_urls[0], webhdfs_url(conf_dir), fs_default(conf_dir), env, rm_urls)


def resolve(conf_dir: Path | None) -> ClusterTarget:
    return local_testbed() if conf_dir is None else from_conf_dir(conf_dir)
