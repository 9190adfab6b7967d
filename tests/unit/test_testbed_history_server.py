"""The testbed's Spark History Server: Spark's own JVM on loopback with a small heap, reading the
folder every local testbed application writes its event log to, started and stopped with the
other daemons and named by `testbed status`. (The server itself runs in the integration test
tests/integration/test_history_server_testbed.py.)"""
from __future__ import annotations

import os
import socket
import sys
from dataclasses import replace
from pathlib import Path

from bridge.testbed import cluster
from bridge.testbed.cluster import HISTORY_SERVER, history_server_answering
from bridge.testbed.compose import compose_layout
from bridge.testbed.daemons import DaemonSpec, ProcessTable
from bridge.testbed.layout import all_ports, local_layout
from bridge.testbed.spark import SPARK_HOME, spark_defaults, write_spark_conf
from yarnclient import YarnError


def test_its_jvm_is_sparks_on_loopback_with_a_small_heap_reading_the_testbeds_event_logs(tmp_path: Path) -> None:
    layout = local_layout(tmp_path, base_port=100)
    [spec] = [s for s in cluster.Testbed(layout).daemons() if s.name == HISTORY_SERVER]
    command = spec.command(layout.log_dir)
    assert "-Xmx256m" in command and command[command.index("-cp") + 1] == f"{SPARK_HOME / 'jars'}/*"
    assert command[-1] == "org.apache.spark.deploy.history.HistoryServer"
    assert f"-Dspark.history.fs.logDirectory={(tmp_path / 'spark-events').as_uri()}" in command
    assert "-Dspark.history.ui.port=18180" in command  # shifted with every other port
    assert dict(spec.env) == {"SPARK_LOCAL_IP": "127.0.0.1"}  # Spark's web servers bind there, else everywhere
    assert layout.history_server_url == "http://127.0.0.1:18180"
    assert all_ports(layout)["history_server_port"] == 18180


def test_the_local_testbeds_applications_log_where_it_reads_the_compose_clusters_do_not(tmp_path: Path) -> None:
    local = local_layout(tmp_path / "local")
    defaults = spark_defaults(local)
    assert defaults["spark.eventLog.enabled"] == "true"
    assert defaults["spark.eventLog.dir"] == local.spark_events_dir.as_uri()
    write_spark_conf(local)
    assert local.spark_events_dir.is_dir()  # Spark refuses to start an application without it
    assert not any(key.startswith("spark.eventLog") for key in spark_defaults(compose_layout(tmp_path / "c")))


def test_status_names_its_url(tmp_path: Path, monkeypatch) -> None:
    class DownRM:
        def nodes(self, states=None) -> list:
            raise YarnError("down")

    bed = cluster.Testbed(local_layout(tmp_path))
    monkeypatch.setattr(bed, "rm", DownRM)
    status = bed.status_text()
    assert f"Spark History Server: http://127.0.0.1:18080 (event logs in {tmp_path / 'spark-events'})" in status
    assert f"  {HISTORY_SERVER:<18} not running" in status


def test_a_daemon_gets_its_system_properties_and_environment(tmp_path: Path) -> None:
    class Printer(DaemonSpec):
        def command(self, log_dir: Path) -> list[str]:
            java = super().command(log_dir)
            flags = [arg for arg in java if arg.startswith("-Dschedbridge")]
            return [sys.executable, "-c", "import os, sys; print(sys.argv[1:], os.environ['SPARK_LOCAL_IP'])", *flags]

    table = ProcessTable(tmp_path / "pids", tmp_path / "logs")
    pid = table.start(Printer("p", "x", tmp_path, 1, properties=(("schedbridge.a", "1"),),
                              env=(("SPARK_LOCAL_IP", "127.0.0.9"),)))
    os.waitpid(pid, 0)
    assert table.log_path("p").read_text() == "['-Dschedbridge.a=1'] 127.0.0.9\n"


def test_answering_is_false_when_nothing_listens(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert not history_server_answering(replace(local_layout(tmp_path), history_server_port=port))
