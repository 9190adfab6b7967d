"""The testbed's rendered Hadoop configuration and its bookkeeping, without starting daemons."""
from __future__ import annotations

import os
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from bridge.testbed import hadoopconf
from bridge.testbed.daemons import ProcessTable
from bridge.testbed.layout import all_ports, local_layout
from yarnclient.hadoopconf import read_site, rm_webapp_urls, webhdfs_url


def test_every_placeholder_is_filled_and_files_are_valid_xml(tmp_path: Path) -> None:
    layout = local_layout(tmp_path)
    hadoopconf.write_all(layout)
    for nm in layout.nodemanagers:
        for name in hadoopconf.CLUSTER_FILES:
            text = (layout.nm_conf_dir(nm) / name).read_text()
            assert "@{" not in text, name
            if name.endswith(".xml"):
                ET.fromstring(text)


def test_nodemanagers_get_their_own_ports_dirs_and_resources(tmp_path: Path) -> None:
    layout = local_layout(tmp_path, nodemanagers=3, vcores=6, memory_mb=2048)
    hadoopconf.write_all(layout)
    sites = [read_site(layout.nm_conf_dir(nm) / "yarn-site.xml") for nm in layout.nodemanagers]
    for key in ("yarn.nodemanager.address", "yarn.nodemanager.webapp.address",
                "yarn.nodemanager.local-dirs", "yarn.nodemanager.log-dirs"):
        assert len({site[key] for site in sites}) == 3, key
    assert {site["yarn.nodemanager.resource.cpu-vcores"] for site in sites} == {"6"}
    assert {site["yarn.nodemanager.resource.memory-mb"] for site in sites} == {"2048"}
    client = read_site(layout.conf_dir / "yarn-site.xml")
    assert "yarn.nodemanager.address" not in client


def test_client_conf_dir_points_at_loopback_services(tmp_path: Path) -> None:
    layout = local_layout(tmp_path)
    hadoopconf.write_all(layout)
    assert rm_webapp_urls(layout.conf_dir) == ["http://127.0.0.1:8088"]
    assert webhdfs_url(layout.conf_dir) == "http://127.0.0.1:9870"
    assert read_site(layout.conf_dir / "core-site.xml")["fs.defaultFS"] == "hdfs://127.0.0.1:9000"


def test_base_port_shifts_every_port_and_ports_are_distinct(tmp_path: Path) -> None:
    plain, shifted = all_ports(local_layout(tmp_path)), all_ports(local_layout(tmp_path, base_port=100))
    assert len(set(plain.values())) == len(plain)
    assert all(shifted[name] == port + 100 for name, port in plain.items())


def test_process_table_never_trusts_a_pid_file_of_another_process(tmp_path: Path) -> None:
    table = ProcessTable(tmp_path / "pids", tmp_path / "logs")
    (tmp_path / "pids").mkdir()
    # Our own pid with a wrong start time: a recycled pid must not be taken for our daemon.
    (tmp_path / "pids" / "ghost.pid").write_text(f"{os.getpid()} 1\n")
    assert table.pid("ghost") is None
    assert table.stop("ghost") == []


def test_process_table_starts_and_stops_its_own_processes_together(tmp_path: Path) -> None:
    """Two daemons that take 3 s each to honour SIGTERM stop in one grace period, not two."""
    from bridge.testbed import daemons

    class Sleeper(daemons.DaemonSpec):
        def command(self, log_dir: Path) -> list[str]:
            return [sys.executable, "-c", "import signal, sys, time\n"
                    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(3), sys.exit(0)))\n"
                    "print('up', flush=True)\ntime.sleep(60)"]

    table = ProcessTable(tmp_path / "pids", tmp_path / "logs")
    pids = [table.start(Sleeper(name, "x", tmp_path, 1)) for name in ("a", "b")]
    assert [table.pid("a"), table.pid("b")] == pids
    time.sleep(0.5)  # both have set their handler
    started = time.monotonic()
    assert table.stop("a", "b", "ghost", grace_s=10) == ["a", "b"]
    assert 2.9 <= time.monotonic() - started < 5.9  # one 3 s shutdown, side by side (one by one: 6 s)
    assert table.pid("a") is None and table.pid("b") is None
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_status_names_each_unhealthy_node_with_its_health_report(tmp_path: Path, monkeypatch) -> None:
    from bridge.testbed.cluster import Testbed
    from yarnclient.models import Node

    def node(node_id: str, state: str, report: str) -> Node:
        return Node.from_json({"id": node_id, "state": state, "healthReport": report,
                               "totalResource": {"vCores": 4, "memory": 4096}})

    class FakeRM:
        def nodes(self, states=None) -> list[Node]:
            return [node("127.0.0.1:45455", "RUNNING", ""),
                    node("127.0.0.1:45456", "UNHEALTHY", "1/1 local-dirs have errors: used space above threshold")]

    bed = Testbed(local_layout(tmp_path))
    monkeypatch.setattr(bed, "rm", FakeRM)
    lines = bed.status_text().splitlines()
    at = [i for i, line in enumerate(lines) if "health report" in line]
    assert [lines[i].strip() for i in at] == ["health report: 1/1 local-dirs have errors: used space above threshold"]
    assert "127.0.0.1:45456" in lines[at[0] - 1] and "UNHEALTHY" in lines[at[0] - 1]
