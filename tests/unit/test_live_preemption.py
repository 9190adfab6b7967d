"""The live preemption mechanism against fake agents: commands, restores and node capacity.

Policies driving it live are tested in test_node_engine.py."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bridge.nodes.node_capacity import RaisedVcores, restore
from bridge.nodes.preemption import ContainerPreemptor, ContainerRef
from policies.framework.api import Code
from tests.unit.live_fakes import FakeAgent, FakeRM

NODE = "nm-1"


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def ref(name: str) -> ContainerRef:
    return ContainerRef(NODE, name)


# -- the mechanism --------------------------------------------------------------------------


def test_preemptor_tracks_throttles_and_restores_them() -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({NODE: agent})
    assert preemptor.suspend(ref("a")).ok and preemptor.suspend(ref("b")).ok
    assert preemptor.resume(ref("a")).ok
    assert preemptor.throttled == {ref("b")}
    assert preemptor.restore_all() == []
    assert agent.calls[-1] == ("resume", "b") and preemptor.throttled == set()


def test_finished_container_is_skipped_not_an_error() -> None:
    agent = FakeAgent()
    agent.gone.add("done")
    status = ContainerPreemptor({NODE: agent}).suspend(ref("done"))
    assert status.code is Code.SKIP and "done" in status.reason


def test_unreachable_agent_keeps_the_throttle_for_a_later_restore() -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({NODE: agent})
    preemptor.suspend(ref("a"))
    agent.down = True
    assert preemptor.resume(ref("a")).code is Code.ERROR
    assert preemptor.restore_all() == [ref("a")]
    assert preemptor.suspend(ContainerRef("elsewhere", "x")).code is Code.ERROR


def test_freeze_mode_freezes() -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({NODE: agent}, freeze=True)
    preemptor.suspend(ref("a"))
    assert agent.calls == [("freeze", "a")]
    assert preemptor.commands[-1].share == 0.0     # frozen: no progress at all


def test_each_command_records_the_share_the_agent_answered() -> None:
    """The simulator of a run plays tasks off their slots at this share (docs/sim-to-real.md)."""
    agent = FakeAgent(min_share=0.25)
    preemptor = ContainerPreemptor({NODE: agent})
    preemptor.suspend(ref("a"))
    preemptor.resume(ref("a"))
    agent.gone.add("b")
    preemptor.suspend(ref("b"))
    assert [c.share for c in preemptor.commands] == [0.25, None, None]


# -- node capacity (N+Q admission) ------------------------------------------------------------


def test_raised_vcores_are_restored_on_exit_and_on_error(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (4, 4096), "n2": (4, 4096)})
    record = tmp_path / "vcores.json"
    with RaisedVcores(rm, 4, record):
        assert rm.capacity == {"n1": (8, 4096), "n2": (8, 4096)}
    assert rm.capacity == {"n1": (4, 4096), "n2": (4, 4096)} and not record.exists()

    failing = FakeRM({"n1": (4, 4096), "n2": (4, 4096)}, fail_on="n2")
    with pytest.raises(RuntimeError, match="n2"):
        with RaisedVcores(failing, 4, record):
            pass
    assert failing.capacity == {"n1": (4, 4096), "n2": (4, 4096)}


def test_a_raise_and_a_restore_wait_until_the_rm_shows_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The RM applies an accepted update asynchronously (seen in a CI run: a listing right after
    the raise still showed 4 vcores): the context is entered, and left, only once it shows."""
    rm = FakeRM({"n1": (4, 4096), "n2": (4, 4096)}, lag=3)
    record = tmp_path / "vcores.json"
    with RaisedVcores(rm, 2, record):
        assert rm.capacity == {"n1": (6, 4096), "n2": (6, 4096)}
    assert rm.capacity == {"n1": (4, 4096), "n2": (4, 4096)} and not record.exists()

    monkeypatch.setattr("bridge.nodes.node_capacity.APPLY_TIMEOUT_S", 0.5)
    never = FakeRM({"n1": (4, 4096)}, lag=-1)
    with pytest.raises(RuntimeError, match=r"did not show them within 0.5 s: \{'n1': \(4, 4096\)\}"):
        with RaisedVcores(never, 2, record):
            pass
    assert never.capacity == {"n1": (4, 4096)} and not record.exists()   # it shows the original: restored
    record.write_text('{"n1": [2, 4096]}')                              # a restore it never shows
    assert restore(never, record) == ["n1"] and record.exists()          # kept for another try


class ReregisteringRM(FakeRM):
    """Accepts the first update of each node and loses it, as the RM does when the NodeManager
    re-registers (with its own capacity) just after it."""

    def __init__(self, nodes: dict[str, tuple[int, int]]) -> None:
        super().__init__(nodes)
        self.lost: set[str] = set()

    def update_node_resource(self, node_id: str, *, vcores: int, memory_mb: int,
                             overcommit_timeout_s: int = -1) -> dict:
        if node_id not in self.lost:
            self.lost.add(node_id)
            return {}
        return super().update_node_resource(node_id, vcores=vcores, memory_mb=memory_mb)


def test_an_update_the_rm_lost_is_sent_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr("bridge.nodes.node_capacity.RESEND_S", 0.05)
    rm = ReregisteringRM({"n1": (4, 4096), "n2": (4, 4096)})
    with RaisedVcores(rm, 2, tmp_path / "vcores.json"):
        assert rm.capacity == {"n1": (6, 4096), "n2": (6, 4096)}
    assert "sending it again" in caplog.text
    assert rm.capacity == {"n1": (4, 4096), "n2": (4, 4096)}


def test_restore_from_the_record_of_a_killed_driver(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (4, 4096)})
    record = tmp_path / "vcores.json"
    RaisedVcores(rm, 2, record).__enter__()           # the driver dies here, never exiting
    assert rm.capacity["n1"] == (6, 4096)
    assert restore(rm, record) == [] and rm.capacity["n1"] == (4, 4096)
    assert restore(rm, record) == []                  # nothing left to do


def test_the_run_after_a_killed_one_raises_from_the_recorded_originals(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (4, 4096)})
    record = tmp_path / "vcores.json"
    RaisedVcores(rm, 2, record).__enter__()           # killed with the nodes raised
    with RaisedVcores(rm, 2, record):
        assert rm.capacity["n1"] == (6, 4096)         # not 8: the raised 6 is not taken for the original
    assert rm.capacity["n1"] == (4, 4096) and not record.exists()


def test_a_damaged_record_is_refused_by_name_and_changes_nothing(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (6, 4096)})
    record = tmp_path / "vcores.json"
    record.write_text("{not json")
    with pytest.raises(ValueError, match="vcores record .*vcores.json is unreadable"):
        RaisedVcores(rm, 2, record).__enter__()
    assert rm.capacity["n1"] == (6, 4096) and record.read_text() == "{not json"


def test_failed_commands_are_one_summary_line_not_a_warning_each(caplog: pytest.LogCaptureFixture) -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({NODE: agent})
    preemptor.suspend(ref("a"))
    assert preemptor.failures() == ""
    agent.down = True
    with caplog.at_level(logging.WARNING):
        preemptor.resume(ref("a"))
        preemptor.resume(ref("a"))
    assert caplog.records == []
    assert preemptor.failures() == ("2 of 3 preemption command(s) failed, on nm-1 "
                                    "(last: resume a: AgentUnavailable: agent down)")
