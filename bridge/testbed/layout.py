"""The shape of a testbed: addresses, ports, virtual resources and directories.

One `ClusterLayout` describes a cluster for both the local testbed and the docker-compose
cluster; they differ only in host names, bind address and directories.
"""
from __future__ import annotations

import getpass
from dataclasses import dataclass, field, replace
from pathlib import Path

from bridge.common.paths import testbed_base_port, testbed_home


@dataclass(frozen=True)
class NodeManagerSpec:
    """One NodeManager: its own ports, directories and advertised (virtual) resources."""

    index: int
    host: str
    port: int
    localizer_port: int
    webapp_port: int
    collector_port: int
    vcores: int
    memory_mb: int

    @property
    def name(self) -> str:
        return f"nodemanager-{self.index}"

    @property
    def webapp_url(self) -> str:
        return f"http://{self.host}:{self.webapp_port}"


@dataclass(frozen=True)
class ClusterLayout:
    """Everything the configuration templates need, and nothing else."""

    home: Path
    namenode_host: str = "127.0.0.1"
    datanode_host: str = "127.0.0.1"
    resourcemanager_host: str = "127.0.0.1"
    bind_host: str = "127.0.0.1"
    namenode_rpc_port: int = 9000
    namenode_http_port: int = 9870
    datanode_port: int = 9866
    datanode_http_port: int = 9864
    datanode_ipc_port: int = 9867
    rm_port: int = 8032
    rm_scheduler_port: int = 8030
    rm_tracker_port: int = 8031
    rm_admin_port: int = 8033
    rm_webapp_port: int = 8088
    history_server_port: int = 18080
    nodemanagers: tuple[NodeManagerSpec, ...] = field(default_factory=tuple)
    user: str = field(default_factory=getpass.getuser)

    @property
    def conf_dir(self) -> Path:
        """The client configuration: point HADOOP_CONF_DIR here."""
        return self.home / "conf"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def pid_dir(self) -> Path:
        return self.home / "pids"

    @property
    def vcores_record(self) -> Path:
        """The NodeManagers' vcores before `replay --preempt` raised them, kept until they are put
        back; beside the testbed, not in a run's results, so the next run and `testbed restore` find it."""
        return self.home / "vcores-original.json"

    def nm_dir(self, nm: NodeManagerSpec) -> Path:
        return self.home / nm.name

    def nm_conf_dir(self, nm: NodeManagerSpec) -> Path:
        return self.home / "conf-nm" / nm.name

    @property
    def rm_url(self) -> str:
        return f"http://{self.resourcemanager_host}:{self.rm_webapp_port}"

    @property
    def webhdfs_url(self) -> str:
        return f"http://{self.namenode_host}:{self.namenode_http_port}"

    @property
    def fs_default(self) -> str:
        return f"hdfs://{self.namenode_host}:{self.namenode_rpc_port}"

    @property
    def spark_events_dir(self) -> Path:
        """Where the testbed's Spark applications write their event logs, and its History Server reads them."""
        return self.home / "spark-events"

    @property
    def history_server_url(self) -> str:
        return f"http://{self.bind_host}:{self.history_server_port}"


def local_layout(home: Path, nodemanagers: int = 2, vcores: int = 4, memory_mb: int = 4096,
                 base_port: int = 0) -> ClusterLayout:
    """The loopback testbed: every daemon on 127.0.0.1, NodeManagers told apart by port.

    `base_port` shifts every port, so two testbeds can run side by side.
    """
    if nodemanagers < 1:
        raise ValueError("a testbed needs at least one NodeManager")
    nms = tuple(
        NodeManagerSpec(index=i, host="127.0.0.1", port=base_port + 45454 + i,
                        localizer_port=base_port + 8140 + i, webapp_port=base_port + 8042 + i * 10,
                        collector_port=base_port + 8150 + i, vcores=vcores, memory_mb=memory_mb)
        for i in range(1, nodemanagers + 1)
    )
    layout = ClusterLayout(home=home, nodemanagers=nms)
    if base_port:
        layout = replace(layout, **{name: getattr(layout, name) + base_port for name in _PORT_FIELDS})
    return layout


def default_layout(**shape: int) -> ClusterLayout:
    """The testbed the CLI, the demo and the tests share: its home and port shift come from
    the environment (`bridge.common.paths`), its shape from `shape` (see `local_layout`)."""
    return local_layout(testbed_home(), base_port=testbed_base_port(), **shape)


_PORT_FIELDS = (
    "namenode_rpc_port", "namenode_http_port", "datanode_port", "datanode_http_port",
    "datanode_ipc_port", "rm_port", "rm_scheduler_port", "rm_tracker_port", "rm_admin_port",
    "rm_webapp_port", "history_server_port",
)


def all_ports(layout: ClusterLayout) -> dict[str, int]:
    """Every port the testbed binds, named for error messages."""
    ports = {name: getattr(layout, name) for name in _PORT_FIELDS}
    for nm in layout.nodemanagers:
        for attr in ("port", "localizer_port", "webapp_port", "collector_port"):
            ports[f"{nm.name}.{attr}"] = getattr(nm, attr)
    return ports
