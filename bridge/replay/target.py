"""Which cluster a replay talks to: the local testbed by default, any cluster by its conf dir."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bridge.testbed.layout import default_layout
from bridge.testbed.spark import spark_env
from yarnclient.hadoopconf import HadoopConfError, read_site, rm_webapp_url, webhdfs_url


@dataclass(frozen=True)
class ClusterTarget:
    """Addresses of one cluster and the environment its Spark drivers run in."""

    conf_dir: Path
    rm_url: str
    webhdfs_url: str
    fs_default: str
    env: dict[str, str] = field(repr=False, compare=False)


def local_testbed() -> ClusterTarget:
    """The testbed of `schedbridge testbed up` (its rendered HADOOP_CONF_DIR and Spark defaults)."""
    layout = default_layout()
    return ClusterTarget(layout.conf_dir, layout.rm_url, layout.webhdfs_url, layout.fs_default,
                         spark_env(layout))


def from_conf_dir(conf_dir: Path) -> ClusterTarget:
    """Any cluster described by a Hadoop configuration directory."""
    fs_default = read_site(conf_dir / "core-site.xml").get("fs.defaultFS", "")
    if not fs_default.startswith("hdfs://"):
        raise HadoopConfError(f"{conf_dir / 'core-site.xml'}: fs.defaultFS is not an hdfs:// URI")
    env = dict(os.environ, HADOOP_CONF_DIR=str(conf_dir), YARN_CONF_DIR=str(conf_dir),
               PYSPARK_PYTHON=sys.executable)
    return ClusterTarget(conf_dir, rm_webapp_url(conf_dir), webhdfs_url(conf_dir), fs_default, env)


def resolve(conf_dir: Path | None) -> ClusterTarget:
    return local_testbed() if conf_dir is None else from_conf_dir(conf_dir)
