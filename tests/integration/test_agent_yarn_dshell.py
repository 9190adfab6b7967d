"""The node agent's logic on a REAL YARN container of the testbed: a distributed-shell app runs a CPU
spinner, launched by the NodeManager's DefaultContainerExecutor. The agent sees the real NM REST API
filtered to this app's containers, so other applications sharing the testbed are never touched.
"""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from bridge.agent.cgroups import CpuController, detect
from bridge.agent.errors import ContainerNotRunning
from bridge.agent.nodemanager import NmContainer, YarnNodeManager
from bridge.agent.procfs import TreeFinder
from bridge.agent.service import NodeAgent
from bridge.agent.state import StateFile
from bridge.agent.trial import CGROUP_ROOT, assert_full_share, cpu_rate, wait_for
from bridge.common.paths import hadoop_lib_dir
from bridge.testbed import dshell
from bridge.testbed.layout import ClusterLayout, NodeManagerSpec
from tests import needs
from yarnclient import ResourceManagerClient
from yarnclient.hdfs import hdfs_client

pytestmark = [pytest.mark.integration, pytest.mark.long]  # make test-long: a CPU share, measured alone
SPIN = ["python3", "-c", "import time\nend = time.time() + 300\nwhile time.time() < end: pass"]


class OneApp:
    """The NM's view restricted to one application's containers."""

    def __init__(self, nm: YarnNodeManager, app_id: str) -> None:
        self.nm, self.key = nm, app_id.split("_", 1)[1]

    def containers(self) -> list[NmContainer]:
        return [c for c in self.nm.containers() if self.key in c.id]

    def container(self, container_id: str) -> NmContainer | None:
        return self.nm.container(container_id)


def _worker_container(layout: ClusterLayout, app_id: str) -> tuple[NodeManagerSpec, str] | None:
    key = app_id.split("_", 1)[1]
    for nm in layout.nodemanagers:
        for c in YarnNodeManager(nm.webapp_url, 10).containers():
            if key in c.id and c.running and not c.id.endswith("_000001"):  # _000001 is the AM
                return nm, c.id
    return None


@pytest.fixture
def spinning(testbed) -> Iterator[tuple[NodeManagerSpec, str, ResourceManagerClient, str]]:
    needs.cgroup_v1_cpu("the agent resizes the container's cpu cgroup")
    rm = ResourceManagerClient(testbed.rm_url, user=testbed.layout.user)
    hdfs = hdfs_client(testbed.hdfs_url, user=testbed.layout.user)
    app = dshell.distributed_shell(hdfs, testbed.fs_default, testbed.conf_dir, hadoop_lib_dir(), SPIN)
    app_id = dshell.submit(rm, app)
    try:
        nm, cid = wait_for(lambda: _worker_container(testbed.layout, app_id), 240, "the spinner's container",
                           every_s=1.0)
        yield nm, cid, rm, app_id
    finally:
        rm.kill(app_id)


def test_real_container_suspends_resumes_and_is_released_when_killed(testbed, spinning, tmp_path: Path) -> None:
    nm, cid, rm, app_id = spinning
    cgroups: CpuController = detect(CGROUP_ROOT, "sbtest-yarn")
    agent = NodeAgent(OneApp(YarnNodeManager(nm.webapp_url, 10), app_id), cgroups,
                      TreeFinder((PurePosixPath(testbed.layout.nm_dir(nm) / "local"),)),
                      StateFile(tmp_path / "state.json"))
    control = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)

    def managed() -> bool:
        agent.reconcile()
        return cid in agent.managed

    try:
        wait_for(managed, 30, "adoption of the real container")
        assert len(cgroups.pids(cid)) >= 2  # the executor's wrapper bash, its session leader, the payload

        def usage_ns() -> int:
            return cgroups.usage_ns(cid)

        assert_full_share(usage_ns, control.pid)
        agent.suspend(cid)
        assert cpu_rate(usage_ns) <= 0.15
        agent.resume(cid)
        assert_full_share(usage_ns, control.pid)

        agent.suspend(cid)
        rm.kill(app_id)
        wait_for(lambda: not managed(), 60, "release after the kill", every_s=0.5)
        assert cgroups.groups() == []
        with pytest.raises(ContainerNotRunning):
            agent.resize(cid, 0.5)
    finally:
        control.kill()
        control.wait(timeout=10)
        agent.release_all()
        cgroups.close()
