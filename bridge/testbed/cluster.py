"""The local testbed as a whole: bring the daemons up in order, wait until usable, stop them.

Beside the Hadoop daemons runs Spark's History Server: Spark's own (pyspark's jars), on loopback
with a small heap, reading the folder the testbed's applications write their event logs to
(`ClusterLayout.spark_events_dir`, Spark's defaults of `bridge.testbed.spark`); where pyspark is
not installed there is none.
"""
from __future__ import annotations

import importlib.util
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge.common.paths import hadoop_lib_dir
from bridge.testbed import hadoopconf
from bridge.testbed.daemons import DaemonSpec, ProcessTable
from bridge.testbed.layout import ClusterLayout, all_ports
from yarnclient import ResourceManagerClient, YarnError
from yarnclient.hdfs import hdfs_writable
from yarnclient.http import RestSession

NAMENODE = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE = "org.apache.hadoop.hdfs.server.datanode.DataNode"
RESOURCEMANAGER = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NODEMANAGER = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
HISTORY_SERVER = "historyserver"  # its daemon's name
HISTORY_SERVER_CLASS = "org.apache.spark.deploy.history.HistoryServer"
HISTORY_SCAN_INTERVAL = "2s"  # how soon a finished application shows (Spark's default: 10 s)


class TestbedError(Exception):
    """The testbed could not start or is unhealthy; the message says which daemon and why."""


@dataclass(frozen=True)
class Heaps:
    """JVM heaps in MB, small enough for a 2-core, few-GB machine."""

    namenode: int = 256
    datanode: int = 192
    resourcemanager: int = 384
    nodemanager: int = 192
    historyserver: int = 256


class Testbed:
    """Real HDFS and YARN daemons on this host, described by a `ClusterLayout`, and Spark's History
    Server where pyspark is installed."""

    def __init__(self, layout: ClusterLayout, heaps: Heaps = Heaps()) -> None:
        self.layout = layout
        self.heaps = heaps
        self.processes = ProcessTable(layout.pid_dir, layout.log_dir)

    # --- the daemons ---------------------------------------------------------------------
    def daemons(self) -> list[DaemonSpec]:
        conf = self.layout.conf_dir
        specs = [
            DaemonSpec("namenode", NAMENODE, conf, self.heaps.namenode),
            DaemonSpec("datanode", DATANODE, conf, self.heaps.datanode),
            DaemonSpec("resourcemanager", RESOURCEMANAGER, conf, self.heaps.resourcemanager),
        ]
        specs += [DaemonSpec(nm.name, NODEMANAGER, self.layout.nm_conf_dir(nm), self.heaps.nodemanager)
                  for nm in self.layout.nodemanagers]
        history = history_server_spec(self.layout, self.heaps.historyserver)
        return specs + ([history] if history is not None else [])

    def running(self) -> dict[str, int | None]:
        return {spec.name: self.processes.pid(spec.name) for spec in self.daemons()}

    # --- up ------------------------------------------------------------------------------
    def up(self, timeout_s: float = 120.0, progress: Callable[[str], None] = lambda _: None) -> None:
        """Start whatever is not running and wait until HDFS is writable, every NM RUNNING and the
        History Server answering."""
        if not any(hadoop_lib_dir().glob("hadoop-yarn-server-resourcemanager-*.jar")):
            raise TestbedError(f"Hadoop server jars not found in {hadoop_lib_dir()}: run `make setup`")
        hadoopconf.write_all(self.layout)
        for nm in self.layout.nodemanagers:
            for sub in ("local", "logs", "recovery"):
                (self.layout.nm_dir(nm) / sub).mkdir(parents=True, exist_ok=True)
        self.layout.spark_events_dir.mkdir(parents=True, exist_ok=True)
        to_start = [spec for spec in self.daemons() if self.processes.pid(spec.name) is None]
        self._check_ports_free({spec.name for spec in to_start})
        if any(spec.name == "namenode" for spec in to_start):
            self.format_namenode_once(progress)
        if any(spec.name == "resourcemanager" for spec in to_start):  # a new RM knows only configured vcores
            self.layout.vcores_record.unlink(missing_ok=True)
        for spec in to_start:
            progress(f"starting {spec.name}")
            self.processes.start(spec)
        deadline = time.monotonic() + timeout_s
        try:
            self._wait("HDFS writable", self._hdfs_writable, deadline, progress)
            self._wait_nodes_running(deadline, progress)
            if self._has_history_server():
                self._wait("the History Server answering", lambda: history_server_answering(self.layout),
                           deadline, progress)
        except TestbedError:
            # A half-started testbed helps nobody: stop what this call started, keep the logs.
            self.processes.stop(*(spec.name for spec in to_start))
            raise

    def format_namenode_once(self, progress: Callable[[str], None]) -> None:
        """Format HDFS on first start only (shared with the docker-compose NameNode)."""
        if (self.layout.data_dir / "namenode" / "current" / "VERSION").is_file():
            return
        progress("formatting the NameNode (first start)")
        spec = DaemonSpec("namenode-format", NAMENODE, self.layout.conf_dir, self.heaps.namenode,
                          args=("-format", "-nonInteractive", "-force"))
        pid = self.processes.start(spec)
        deadline = time.monotonic() + 60
        while self.processes.pid(spec.name) == pid and time.monotonic() < deadline:
            time.sleep(0.2)
        self.processes.stop(spec.name, grace_s=1)
        if not (self.layout.data_dir / "namenode" / "current" / "VERSION").is_file():
            raise TestbedError("formatting the NameNode failed; its log ends with:\n"
                               + self.processes.tail(spec.name))

    def _check_ports_free(self, starting: set[str]) -> None:
        owners = {"namenode": "namenode_", "datanode": "datanode_", "resourcemanager": "rm_",
                  HISTORY_SERVER: "history_server_"}
        for port_name, port in all_ports(self.layout).items():
            owner = next((d for d, prefix in owners.items() if port_name.startswith(prefix)),
                         port_name.split(".")[0])
            if owner in starting and not _port_free(self.layout.bind_host, port):
                raise TestbedError(f"port {port} ({port_name}, needed by {owner}) on "
                                   f"{self.layout.bind_host} is already taken by another process")

    def _wait(self, what: str, ready: Callable[[], bool], deadline: float,
              progress: Callable[[str], None]) -> None:
        progress(f"waiting until {what}")
        while time.monotonic() < deadline:
            self._fail_on_dead_daemon()
            if ready():
                return
            time.sleep(0.5)
        raise TestbedError(f"timed out waiting until {what}\n" + self.status_text())

    def _fail_on_dead_daemon(self) -> None:
        for name, pid in self.running().items():
            if pid is None:
                raise TestbedError(f"{name} is not running; the end of its log "
                                   f"({self.processes.log_path(name)}):\n{self.processes.tail(name)}")

    def wait_nodes_running(self, timeout_s: float) -> None:
        """Wait until every NodeManager is RUNNING; TestbedError with each node's state and
        health report (an UNHEALTHY node gets no containers, so an application would wait)."""
        self._wait_nodes_running(time.monotonic() + timeout_s, lambda _: None)

    def _wait_nodes_running(self, deadline: float, progress: Callable[[str], None]) -> None:
        self._wait(f"{len(self.layout.nodemanagers)} NodeManagers RUNNING", self._nodes_running,
                   deadline, progress)

    def _has_history_server(self) -> bool:
        return any(spec.name == HISTORY_SERVER for spec in self.daemons())

    def _hdfs_writable(self) -> bool:
        return hdfs_writable(self.layout.webhdfs_url, user=self.layout.user)

    def _nodes_running(self) -> bool:
        try:
            nodes = self.rm().nodes(states=["RUNNING"])
        except YarnError:
            return False
        return len(nodes) >= len(self.layout.nodemanagers)

    def rm(self) -> ResourceManagerClient:
        return ResourceManagerClient(self.layout.rm_url, user=self.layout.user, timeout=(2, 10),
                                     retries=0)

    # --- down and status -------------------------------------------------------------------
    def down(self, progress: Callable[[str], None] = lambda _: None) -> list[str]:
        """Stop the daemons we started: the NodeManagers together first (so they clean up their
        containers while HDFS and the RM are still there), then the others together."""
        specs = self.daemons()
        tiers = ([s.name for s in specs if s.main_class == NODEMANAGER],
                 [s.name for s in reversed(specs) if s.main_class != NODEMANAGER])
        stopped = [name for tier in tiers for name in self.processes.stop(*tier)]
        for name in stopped:
            progress(f"stopped {name}")
        return stopped

    def status_text(self) -> str:
        lines = [f"testbed home: {self.layout.home}", f"HADOOP_CONF_DIR={self.layout.conf_dir}"]
        if self._has_history_server():
            lines.append(f"Spark History Server: {self.layout.history_server_url} (event logs in "
                         f"{self.layout.spark_events_dir})")
        for name, pid in self.running().items():
            lines.append(f"  {name:<18} {'running, pid ' + str(pid) if pid else 'not running'}")
        try:
            for node in self.rm().nodes():
                lines.append(f"  node {node.node_id:<18} {node.state:<10} "
                             f"{node.vcores_used}/{node.vcores_total} vcores, "
                             f"{node.memory_mb_used}/{node.memory_mb_total} MB")
                if node.state != "RUNNING" and node.raw.get("healthReport"):
                    lines.append(f"    health report: {node.raw['healthReport']}")
        except YarnError as exc:
            lines.append(f"  ResourceManager REST not answering: {exc}")
        return "\n".join(lines)


def spark_jars() -> Path | None:
    """pyspark's jars, found without importing pyspark (a second of imports `testbed status` skips)."""
    spec = importlib.util.find_spec("pyspark")
    jars = Path(spec.origin).parent / "jars" if spec is not None and spec.origin else None
    return jars if jars is not None and jars.is_dir() else None


def history_server_spec(layout: ClusterLayout, heap_mb: int) -> DaemonSpec | None:
    """The History Server's JVM, bound where the testbed's daemons are (Spark's web servers bind to
    SPARK_LOCAL_IP, else to every interface); None without pyspark."""
    jars = spark_jars()
    if jars is None:
        return None
    settings = {  # as system properties: its command line takes only a properties file
        "spark.history.fs.logDirectory": layout.spark_events_dir.as_uri(),
        "spark.history.ui.port": str(layout.history_server_port),
        "spark.history.fs.update.interval": HISTORY_SCAN_INTERVAL,
    }
    return DaemonSpec(HISTORY_SERVER, HISTORY_SERVER_CLASS, layout.conf_dir, heap_mb, classpath=f"{jars}/*",
                      properties=tuple(settings.items()), env=(("SPARK_LOCAL_IP", layout.bind_host),))


def history_server_answering(layout: ClusterLayout) -> bool:
    """Whether the History Server lists applications (it has read its folder once)."""
    session = RestSession(layout.history_server_url, timeout=(2, 10), retries=0)
    try:
        session.request("GET", "/api/v1/applications")
        return True
    except YarnError:
        return False
    finally:
        session.close()


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
