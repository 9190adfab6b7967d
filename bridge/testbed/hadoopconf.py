"""Render the Hadoop configuration files from the templates shared with docker-compose."""
from __future__ import annotations

import string
from importlib import resources
from pathlib import Path

from bridge.common import atomic
from bridge.common.paths import hadoop_lib_dir
from bridge.testbed.jvm import ADD_OPENS
from bridge.testbed.layout import ClusterLayout, NodeManagerSpec

CLUSTER_FILES = ("core-site.xml", "hdfs-site.xml", "yarn-site.xml", "capacity-scheduler.xml",
                 "log4j.properties")


class _Template(string.Template):
    """`@{name}` placeholders: Hadoop keeps its own `${var}` and log4j its `%d`."""

    delimiter = "@"


def _template(name: str) -> _Template:
    return _Template(resources.files("bridge.testbed").joinpath("templates", name).read_text())


def template_values(layout: ClusterLayout, nm: NodeManagerSpec | None = None,
                    hadoop_lib: Path | None = None) -> dict[str, str]:
    """The placeholder values for one configuration directory (`nm` adds that NodeManager's block)."""
    values = {
        "namenode_host": layout.namenode_host, "datanode_host": layout.datanode_host,
        "resourcemanager_host": layout.resourcemanager_host, "bind_host": layout.bind_host,
        "namenode_rpc_port": layout.namenode_rpc_port, "namenode_http_port": layout.namenode_http_port,
        "datanode_port": layout.datanode_port, "datanode_http_port": layout.datanode_http_port,
        "datanode_ipc_port": layout.datanode_ipc_port, "rm_port": layout.rm_port,
        "rm_scheduler_port": layout.rm_scheduler_port, "rm_tracker_port": layout.rm_tracker_port,
        "rm_admin_port": layout.rm_admin_port, "rm_webapp_port": layout.rm_webapp_port,
        "data_dir": layout.data_dir, "user": layout.user,
        "conf_dir": layout.conf_dir, "hadoop_lib": hadoop_lib or hadoop_lib_dir(),
        "container_java_opts": " ".join(ADD_OPENS),
        "nm_memory_mb": max(n.memory_mb for n in layout.nodemanagers),
        "nm_vcores": max(n.vcores for n in layout.nodemanagers),
        "nodemanager_block": "",
    }
    if nm is not None:
        values["nodemanager_block"] = _template("nodemanager.xml").substitute(
            values, nm_host=nm.host, nm_port=nm.port, nm_localizer_port=nm.localizer_port,
            nm_webapp_port=nm.webapp_port, nm_collector_port=nm.collector_port,
            nm_dir=layout.nm_dir(nm), nm_memory_mb=nm.memory_mb, nm_vcores=nm.vcores).rstrip("\n")
    return {key: str(value) for key, value in values.items()}


def render_files(values: dict[str, str]) -> dict[str, str]:
    """File name → rendered text for one configuration directory."""
    return {name: _template(name).substitute(values) for name in CLUSTER_FILES}


def write_conf_dir(target: Path, files: dict[str, str]) -> None:
    """Write a configuration directory; each file is replaced atomically."""
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        atomic.write_text(target / name, text)


# The HDFS web UI's static pages ship in Hadoop's tarball, not in the Maven jars; the daemons
# only need these resource directories to exist on the classpath (WebHDFS is a servlet).
HDFS_WEBAPPS = ("hdfs", "datanode", "secondary")


def write_all(layout: ClusterLayout) -> None:
    """The client directory (HADOOP_CONF_DIR) and one directory per NodeManager."""
    write_conf_dir(layout.conf_dir, render_files(template_values(layout)))
    for webapp in HDFS_WEBAPPS:
        (layout.conf_dir / "webapps" / webapp).mkdir(parents=True, exist_ok=True)
    for nm in layout.nodemanagers:
        write_conf_dir(layout.nm_conf_dir(nm), render_files(template_values(layout, nm)))
