"""The node agent for real on this host's cgroups, without YARN: a fake NodeManager REST server lists a
DefaultContainerExecutor-shaped container (bash launch_container.sh -> CPU-spinning python), and the agent
runs as a subprocess. CPU is measured from the group's cpuacct.usage over ~1 s windows.

Every test removes the processes (by pid / own process group) and cgroups it created.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bridge.agent.client import AgentClient
from bridge.agent.errors import ContainerNotRunning, UnknownContainer
from bridge.agent.trial import (CGROUP_ROOT, IDLE, SCHEDBRIDGE, TOKEN, AgentProcess, FakeContainer, FakeNodeManager,
                                assert_full_share, cpu_rate, proc_cpu_ns, remove_groups, usage_file, wait_for)
from tests import needs

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _cgroups_writable() -> None:
    needs.cgroup_v1_cpu("the agent writes the containers' cpu and freezer cgroups")


CID = "container_1763700000000_0001_01_000002"
SECOND = "container_1763700000000_0001_01_000003"
MIN_SHARE = 0.1
SUSPENDED_MAX = MIN_SHARE * 1.5  # cores: one CFS period of slack over a 1 s window
@dataclass
class Node:
    nm: FakeNodeManager
    container: FakeContainer
    agent: AgentProcess
    parent: str
    local: Path
    control: subprocess.Popen[bytes]

    def client(self) -> AgentClient:
        return AgentClient(self.agent.url, TOKEN, timeout_s=10)

    def rate(self) -> float:
        return cpu_rate(self.usage_ns)

    def usage_ns(self) -> int:
        return int(usage_file(self.parent, CID).read_text())

    def assert_full_share(self, read_ns: Callable[[], int] | None = None) -> None:
        assert_full_share(read_ns or self.usage_ns, self.control.pid)

    def group_pids(self) -> set[int]:
        procs = CGROUP_ROOT / "cpu" / self.parent / CID / "cgroup.procs"
        return {int(p) for p in procs.read_text().split()} if procs.exists() else set()

    def restart_agent(self) -> None:
        self.agent = AgentProcess(self.nm.url, self.agent_state, self.parent, (self.local,), MIN_SHARE)
        self.agent.start()

    @property
    def agent_state(self) -> Path:
        return self.local.parent / "agent-state.json"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    parent = f"sbtest-{os.getpid()}"
    local = tmp_path / "nm-local"
    nm = FakeNodeManager()
    nm.states[CID] = "RUNNING"
    container = FakeContainer(local, CID)
    control = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    agent = AgentProcess(nm.url, tmp_path / "agent-state.json", parent, (local,), MIN_SHARE)
    node = Node(nm, container, agent, parent, local, control)
    try:
        agent.start()
        wait_for(lambda: node.client().container(CID)["managed"], 10, "the agent to adopt the container")
        yield node
    finally:
        node.agent.stop()
        control.kill()
        control.wait(timeout=10)
        container.kill()
        nm.close()
        remove_groups(parent)


def test_suspend_drops_to_min_share_and_resume_restores(node: Node) -> None:
    client = node.client()
    spinner = node.container.spinner_pid()
    assert {node.container.proc.pid, spinner} <= node.group_pids()
    node.assert_full_share()

    assert client.suspend(CID)["share"] == MIN_SHARE
    assert node.rate() <= SUSPENDED_MAX

    client.suspend(CID, freeze=True)
    assert node.rate() <= 0.01

    assert client.resume(CID)["throttled"] is False
    assert (CGROUP_ROOT / "cpu" / node.parent / CID / "cpu.cfs_quota_us").read_text().strip() == "-1"
    node.assert_full_share()


def test_children_forked_while_suspended_stay_throttled(node: Node) -> None:
    client = node.client()
    spinner = node.container.spinner_pid()
    client.suspend(CID)
    os.kill(spinner, signal.SIGUSR1)  # our own spinner forks a second spinner
    wait_for(lambda: len(node.group_pids()) == 3, 5, "the forked child to appear in the group")
    assert node.rate() <= SUSPENDED_MAX  # two spinners share the 0.1-core cap


def test_sigkill_then_restart_restores_every_throttled_container(node: Node) -> None:
    second = FakeContainer(node.local, SECOND, program=IDLE)
    try:
        node.nm.states[SECOND] = "RUNNING"
        wait_for(lambda: node.client().container(SECOND)["managed"], 10, "adoption of the second container")
        node.client().suspend(CID)
        node.client().suspend(SECOND, freeze=True)
        node.agent.signal(signal.SIGKILL)
        assert node.rate() <= SUSPENDED_MAX  # the crash left the throttles in place...

        node.restart_agent()  # ...and the restart undoes them before serving
        assert f"restored 2 container(s) left by a previous run: {CID}, {SECOND}" in node.agent.log()
        assert not any(c["throttled"] for c in node.client().containers())
        wait_for(lambda: node.client().container(CID)["managed"], 10, "re-adoption at full size")
        node.assert_full_share()
    finally:
        second.kill()


def test_restore_only_undoes_a_dead_agents_throttles(node: Node) -> None:
    node.client().suspend(CID)
    node.agent.signal(signal.SIGKILL)
    assert node.agent.restore_only() == 0
    assert not (CGROUP_ROOT / "cpu" / node.parent).exists()
    pids = [node.container.proc.pid, node.container.spinner_pid()]
    node.assert_full_share(lambda: proc_cpu_ns(pids))


def test_sigterm_restores_and_removes_every_group(node: Node) -> None:
    node.client().suspend(CID, freeze=True)
    pids = [node.container.proc.pid, node.container.spinner_pid()]
    assert node.agent.signal(signal.SIGTERM) == 0
    assert not (CGROUP_ROOT / "cpu" / node.parent).exists()
    assert not (CGROUP_ROOT / "freezer" / node.parent).exists()
    node.assert_full_share(lambda: proc_cpu_ns(pids))


def test_unknown_and_finished_containers_are_refused_and_released(node: Node) -> None:
    client = node.client()
    with pytest.raises(UnknownContainer, match="container_1763700000000_0001_01_000099"):
        client.suspend("container_1763700000000_0001_01_000099")
    client.suspend(CID)
    node.nm.states[CID] = "EXITED_WITH_SUCCESS"
    wait_for(lambda: not (CGROUP_ROOT / "cpu" / node.parent / CID).exists(), 5,
             "the finished container's throttle to be removed")
    with pytest.raises(ContainerNotRunning, match="EXITED_WITH_SUCCESS"):
        client.resize(CID, 0.5)


def test_restore_only_from_the_state_file_alone(node: Node) -> None:
    node.client().suspend(CID)
    node.agent.signal(signal.SIGKILL)
    # no --nm-url, no token, no --cgroup-parent: the state file records where the groups are
    result = subprocess.run([str(SCHEDBRIDGE), "agent", "--restore-only", "--state-file", str(node.agent_state)],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, SCHEDBRIDGE_AGENT_TOKEN=""))
    assert result.returncode == 0, result.stderr
    assert f"restored 1 container(s) left by a previous run: {CID}" in result.stderr
    assert not (CGROUP_ROOT / "cpu" / node.parent).exists()
    pids = [node.container.proc.pid, node.container.spinner_pid()]
    node.assert_full_share(lambda: proc_cpu_ns(pids))
