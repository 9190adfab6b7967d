"""Leases on throttles: a controller that stops renewing gets its containers back at full size, on a
fake clock, fake /proc and in-memory cgroups."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path, PurePosixPath

import pytest

from bridge.agent.cli import work
from bridge.agent.errors import BadRequest
from bridge.agent.leases import DEFAULT_LEASE_S, MAX_LEASE_S
from bridge.agent.nodemanager import NmContainer, NodeManagerSource, YarnNodeManager
from bridge.agent.procfs import TreeFinder
from bridge.agent.service import NodeAgent
from bridge.agent.state import StateFile
from tests.trickle import trickling
from tests.unit.agent_fakes import CID, LOCAL, OTHER, FakeCgroups, FakeNodeManager, container_tree


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def rig(tmp_path: Path) -> tuple[NodeAgent, FakeCgroups, Clock]:
    container_tree(tmp_path / "proc")
    container_tree(tmp_path / "proc", OTHER, first_pid=200)
    nm, cgroups, clock = FakeNodeManager(), FakeCgroups(), Clock()
    nm.run(CID)
    nm.run(OTHER)
    agent = NodeAgent(nm, cgroups, TreeFinder((PurePosixPath(LOCAL),)), StateFile(tmp_path / "state.json"),
                      proc_root=tmp_path / "proc", clock=clock)
    return agent, cgroups, clock


def test_the_default_lease_is_well_under_a_minute() -> None:
    assert 0 < DEFAULT_LEASE_S <= 60


def test_an_unrenewed_suspend_is_lifted_when_its_lease_runs_out(rig, caplog) -> None:
    agent, cgroups, clock = rig
    agent.suspend(CID, lease_s=5)
    agent.suspend(OTHER, freeze=True, lease_s=20)
    clock.now += 4.9
    agent.reconcile()
    assert cgroups.groups_[CID].share == 0.1 and agent.container(CID)["lease_s_left"] == pytest.approx(0.1)
    clock.now += 0.1
    with caplog.at_level(logging.WARNING, logger="bridge.agent.service"):
        agent.reconcile()
    assert cgroups.groups_[CID].share is None and not cgroups.groups_[CID].frozen
    assert cgroups.groups_[OTHER].frozen  # its own lease still runs
    assert f"container {CID}: lease expired" in caplog.text
    status = agent.container(CID)
    assert not status["throttled"] and status["lease_s_left"] is None and status["lease_expired_at"] is not None
    assert agent.node()["leases_expired"] == 1 and agent.node()["leases_held"] == 1
    assert StateFile(agent.state.path).load()[CID].share is None  # a restart finds nothing to undo


def test_renewal_extends_held_leases_and_names_the_others(rig) -> None:
    agent, cgroups, clock = rig
    agent.suspend(CID, lease_s=5)
    agent.reconcile()  # OTHER adopted at full size: no lease
    for _ in range(4):
        clock.now += 3
        assert agent.renew([CID, OTHER], lease_s=5) == {"renewed": [CID], "not_held": [OTHER], "lease_s": 5.0}
        agent.reconcile()
    assert cgroups.groups_[CID].share == 0.1  # 12 s after a 5 s lease: renewal kept it
    clock.now += 5
    agent.reconcile()
    assert cgroups.groups_[CID].share is None
    assert agent.renew([CID])["not_held"] == [CID]  # the controller learns it lapsed


def test_resume_and_release_end_the_lease(rig) -> None:
    agent, cgroups, clock = rig
    agent.suspend(CID, lease_s=5)
    agent.resume(CID)
    agent.resize(OTHER, 0.5, lease_s=5)
    agent.nm.listed.pop(OTHER)  # type: ignore[attr-defined]
    agent.reconcile()  # OTHER finished: released
    clock.now += 10
    agent.reconcile()
    assert agent.node()["leases_expired"] == 0 and agent.node()["leases_held"] == 0
    assert agent.renew([CID, OTHER])["not_held"] == [CID, OTHER]


def test_a_resize_is_leased_like_a_suspend(rig) -> None:
    agent, cgroups, clock = rig
    agent.resize(CID, 0.5)
    clock.now += DEFAULT_LEASE_S
    agent.reconcile()
    assert cgroups.groups_[CID].share is None


@pytest.mark.parametrize("bad", [0, -1, MAX_LEASE_S + 1, float("inf"), "5", True])
def test_a_bad_lease_is_refused_and_changes_nothing(rig, bad) -> None:
    agent, cgroups, _ = rig
    with pytest.raises(BadRequest, match="lease_s"):
        agent.suspend(CID, lease_s=bad)
    with pytest.raises(BadRequest, match="lease_s"):
        agent.renew([CID], lease_s=bad)
    assert CID not in cgroups.groups_


def test_renewal_takes_a_list_of_ids(rig) -> None:
    agent, _, _ = rig
    for bad in (None, CID, [1]):
        with pytest.raises(BadRequest, match="containers"):
            agent.renew(bad)


class Switch:
    """A NodeManagerSource whose NodeManager the test swaps: fast for the suspend, then a slow one."""

    def __init__(self, inner: NodeManagerSource) -> None:
        self.inner = inner

    def containers(self) -> list[NmContainer]:
        return self.inner.containers()

    def container(self, container_id: str) -> NmContainer | None:
        return self.inner.container(container_id)


def test_a_lease_is_lifted_in_time_while_the_nodemanager_answers_one_byte_a_second(tmp_path: Path) -> None:
    container_tree(tmp_path / "proc")
    fake, cgroups = FakeNodeManager(), FakeCgroups()
    fake.run(CID)
    nm = Switch(fake)
    agent = NodeAgent(nm, cgroups, TreeFinder((PurePosixPath(LOCAL),)), StateFile(tmp_path / "state.json"),
                      proc_root=tmp_path / "proc")
    stop = threading.Event()
    with trickling(1.0) as url:
        agent.suspend(CID, lease_s=3)
        suspended = time.monotonic()
        nm.inner = YarnNodeManager(url, timeout_s=5.0)  # a call to it takes its whole deadline, 10 s
        worker = threading.Thread(target=work, args=(agent, 0.2, stop), daemon=True)
        worker.start()
        try:
            while cgroups.groups_[CID].share is not None and time.monotonic() - suspended < 6:
                time.sleep(0.05)
            lifted = time.monotonic() - suspended
        finally:
            stop.set()
        assert cgroups.groups_[CID].share is None and 3 <= lifted < 5, lifted
    worker.join(timeout=12)  # the NodeManager call in progress ends at its deadline
    assert not worker.is_alive()
