"""The platform against the real testbed: YARN REST, WebHDFS, distributed shell. (Stock Spark on YARN
reading HDFS: test_venv_spark_submit.py.)"""
from __future__ import annotations

import socket
import time

import pytest
import requests

from bridge.common.paths import hadoop_lib_dir
from bridge.testbed import dshell
from yarnclient import ResourceManagerClient, YarnConnectionError, YarnNotFound
from yarnclient.hdfs import hdfs_client

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def rm(testbed) -> ResourceManagerClient:
    return ResourceManagerClient(testbed.rm_url, user=testbed.layout.user)


@pytest.fixture(scope="module")
def hdfs(testbed):
    return hdfs_client(testbed.hdfs_url, user=testbed.layout.user)


def _dshell(testbed, hdfs, command: list[str]):
    return dshell.distributed_shell(hdfs, testbed.fs_default, testbed.conf_dir, hadoop_lib_dir(),
                                    command)


def test_every_nodemanager_is_running_with_its_virtual_resources(testbed, rm) -> None:
    nodes = rm.nodes(states=["RUNNING"])
    assert len(nodes) == len(testbed.layout.nodemanagers)
    expected = {(nm.vcores, nm.memory_mb) for nm in testbed.layout.nodemanagers}
    assert {(n.vcores_total, n.memory_mb_total) for n in nodes} == expected


def test_every_nodemanager_judges_its_disk_by_free_space_not_percent_used(testbed) -> None:
    """The testbed shares its host's disk: percent used of the whole disk says nothing of the room
    its containers have (bridge/testbed/templates/yarn-site.xml). Read from each running daemon."""
    for nm in testbed.layout.nodemanagers:
        conf = requests.get(f"http://{nm.host}:{nm.webapp_port}/conf", headers={"Accept": "application/json"},
                            timeout=10)
        conf.raise_for_status()
        props = {p["key"]: p["value"] for p in conf.json()["properties"]}
        prefix = "yarn.nodemanager.disk-health-checker."
        assert props[prefix + "disk-utilization-threshold.enabled"] == "false", nm
        assert props[prefix + "disk-free-space-threshold.enabled"] == "true", nm
        assert props[prefix + "min-free-space-per-disk-mb"] == "1024", nm


@pytest.mark.parametrize("exit_code, final_status", [(0, "SUCCEEDED"), (3, "FAILED")])
def test_distributed_shell_app_submitted_over_rest_finishes_with_its_exit_status(
        testbed, rm, hdfs, exit_code: int, final_status: str) -> None:
    app_id = dshell.submit(rm, _dshell(testbed, hdfs, ["sh", "-c", f"exit {exit_code}"]))
    app = dshell.wait_until_done(rm, app_id, timeout_s=180)
    assert (app.state, app.final_status) == ("FINISHED", final_status), app.diagnostics


def test_killing_an_app_through_rest(testbed, rm, hdfs) -> None:
    app_id = dshell.submit(rm, _dshell(testbed, hdfs, ["sleep", "600"]))
    deadline = time.monotonic() + 60
    while rm.app(app_id).state not in ("RUNNING", "FINISHED", "FAILED"):
        assert time.monotonic() < deadline, "the sleeper never started"
        time.sleep(0.5)
    rm.kill(app_id)
    assert dshell.wait_until_done(rm, app_id, timeout_s=60).state == "KILLED"


def test_node_resource_update_shows_up_in_nodes(rm) -> None:
    node = rm.nodes(states=["RUNNING"])[0]
    try:
        rm.update_node_resource(node.node_id, vcores=node.vcores_total + 3,
                                memory_mb=node.memory_mb_total)
        deadline = time.monotonic() + 20
        while rm.node(node.node_id).vcores_total != node.vcores_total + 3:
            assert time.monotonic() < deadline, "the new capacity never showed in /nodes"
            time.sleep(0.3)
    finally:
        rm.update_node_resource(node.node_id, vcores=node.vcores_total,
                                memory_mb=node.memory_mb_total)


def test_unknown_app_is_a_not_found_error(rm) -> None:
    with pytest.raises(YarnNotFound, match="application_1_0001"):
        rm.app("application_1_0001")


def test_stopped_resourcemanager_fails_fast_with_typed_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on: a stopped RM
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ResourceManagerClient(f"http://127.0.0.1:{port}", timeout=(1.0, 2.0), retries=2)
    started = time.monotonic()
    with pytest.raises(YarnConnectionError, match="cannot reach"):
        client.metrics()
    assert time.monotonic() - started < 10
