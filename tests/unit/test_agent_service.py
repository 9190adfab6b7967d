"""NodeAgent logic with a fake NodeManager, fake /proc and in-memory cgroups."""
from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from bridge.agent.errors import BadRequest, ContainerNotRunning, NoContainerProcesses, UnknownContainer
from bridge.agent.procfs import TreeFinder
from bridge.agent.service import NodeAgent
from bridge.agent.state import StateFile
from tests.unit.agent_fakes import (CID, LOCAL, OTHER, FakeCgroups, FakeNodeManager, add_proc, container_tree,
                                    work_dir)


def make_agent(tmp_path: Path, nm: FakeNodeManager, cgroups: FakeCgroups) -> NodeAgent:
    return NodeAgent(nm, cgroups, TreeFinder((PurePosixPath(LOCAL),)), StateFile(tmp_path / "state.json"),
                     min_share=0.1, proc_root=tmp_path / "proc")


@pytest.fixture
def nm() -> FakeNodeManager:
    fake = FakeNodeManager()
    fake.run(CID)
    return fake


def test_reconcile_adopts_running_containers_at_full_size(tmp_path: Path, nm: FakeNodeManager) -> None:
    pids = container_tree(tmp_path / "proc")
    cgroups = FakeCgroups()
    make_agent(tmp_path, nm, cgroups).reconcile()
    group = cgroups.groups_[CID]
    assert group.pids == set(pids) and group.share is None and not group.frozen


def test_suspend_shrinks_to_min_share_and_resume_restores(tmp_path: Path, nm: FakeNodeManager) -> None:
    container_tree(tmp_path / "proc")
    cgroups = FakeCgroups()
    agent = make_agent(tmp_path, nm, cgroups)
    status = agent.suspend(CID)
    assert cgroups.groups_[CID].share == 0.1 and status["throttled"] and status["pids"] == 3
    assert StateFile(tmp_path / "state.json").load()[CID].share == 0.1
    agent.suspend(CID, freeze=True)
    assert cgroups.groups_[CID].frozen
    status = agent.resume(CID)
    assert cgroups.groups_[CID].share is None and not cgroups.groups_[CID].frozen and not status["throttled"]


def test_resize_validates_the_share(tmp_path: Path, nm: FakeNodeManager) -> None:
    container_tree(tmp_path / "proc")
    cgroups = FakeCgroups()
    agent = make_agent(tmp_path, nm, cgroups)
    agent.resize(CID, 0.5)
    assert cgroups.groups_[CID].share == 0.5
    for bad in (0.05, 10_000, "1", True, float("nan"), None):
        with pytest.raises(BadRequest, match=CID):
            agent.resize(CID, bad)


def test_unknown_finished_and_processless_containers_are_refused(tmp_path: Path, nm: FakeNodeManager) -> None:
    (tmp_path / "proc").mkdir()
    agent = make_agent(tmp_path, nm, FakeCgroups())
    with pytest.raises(UnknownContainer, match=OTHER):
        agent.suspend(OTHER)
    with pytest.raises(NoContainerProcesses, match=CID):
        agent.suspend(CID)
    nm.run(CID, state="EXITED_WITH_SUCCESS")
    with pytest.raises(ContainerNotRunning, match="EXITED_WITH_SUCCESS"):
        agent.suspend(CID)
    with pytest.raises(BadRequest):
        agent.suspend("../../etc")


def test_impostor_process_is_not_touched(tmp_path: Path, nm: FakeNodeManager) -> None:
    add_proc(tmp_path / "proc", 500, 1, CID, Path("/home/mallory"))
    with pytest.raises(NoContainerProcesses, match="refused unverified pids \\[500\\]"):
        make_agent(tmp_path, nm, FakeCgroups()).suspend(CID)


def test_reconcile_sweeps_new_children_and_releases_finished(tmp_path: Path, nm: FakeNodeManager) -> None:
    container_tree(tmp_path / "proc")
    cgroups = FakeCgroups()
    agent = make_agent(tmp_path, nm, cgroups)
    agent.suspend(CID)
    add_proc(tmp_path / "proc", 103, 101, CID, work_dir(CID))  # forked after the suspend
    agent.reconcile()
    assert 103 in cgroups.groups_[CID].pids
    nm.run(CID, state="DONE")
    agent.reconcile()
    assert CID not in cgroups.groups_ and cgroups.released == [(CID, {"cpu": "/origin-of-100"})]
    assert StateFile(tmp_path / "state.json").load() == {}
    with pytest.raises(ContainerNotRunning):
        agent.resume(CID)
    del nm.listed[CID]  # the NM soon forgets it; the agent still says "finished", not "unknown"
    with pytest.raises(ContainerNotRunning, match="finished"):
        agent.resume(CID)


def test_nm_outage_keeps_throttles_of_live_containers(tmp_path: Path, nm: FakeNodeManager) -> None:
    container_tree(tmp_path / "proc")
    cgroups = FakeCgroups()
    agent = make_agent(tmp_path, nm, cgroups)
    agent.suspend(CID)
    nm.down = True
    agent.reconcile()
    assert cgroups.groups_[CID].share == 0.1 and not agent.nm_reachable


def test_restart_after_crash_restores_every_touched_container(tmp_path: Path, nm: FakeNodeManager) -> None:
    container_tree(tmp_path / "proc")
    cgroups = FakeCgroups()
    make_agent(tmp_path, nm, cgroups).suspend(CID)  # then the agent "dies" without cleanup
    cgroups.create("container_1700000000000_0001_01_000009")  # a group created just before the crash
    restarted = make_agent(tmp_path, nm, cgroups)
    assert restarted.release_all() == [CID, "container_1700000000000_0001_01_000009"]
    assert cgroups.groups_ == {}
    assert (CID, {"cpu": "/origin-of-100"}) in cgroups.released
    assert StateFile(tmp_path / "state.json").load() == {}


def test_reports_usage_and_node_counts(tmp_path: Path, nm: FakeNodeManager) -> None:
    container_tree(tmp_path / "proc")
    cgroups = FakeCgroups()
    agent = make_agent(tmp_path, nm, cgroups)
    agent.reconcile()
    agent.suspend(CID)
    cgroups.groups_[CID].usage_ns = 5_000
    [status] = agent.containers()
    assert status["cpu_usage_ns"] == 5_000 and status["vcores"] == 1 and status["state"] == "RUNNING"
    node = agent.node()
    assert node["running_containers"] == 1 and node["throttled_containers"] == 1 and node["min_share"] == 0.1
