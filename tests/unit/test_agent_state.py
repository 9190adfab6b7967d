"""The agent's state file: round trip, atomic replacement, and tolerance of a damaged file."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bridge.agent.errors import AgentLocked
from bridge.agent.state import Managed, NodeLock, StateFile
from tests.unit.agent_fakes import CID, OTHER


def test_round_trip_keeps_origin_share_and_freeze(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "sub" / "agent.json")
    state.save({CID: Managed({"cpu": "/nm"}, share=0.1), OTHER: Managed({}, frozen=True)})
    loaded = state.load()
    assert loaded[CID] == Managed({"cpu": "/nm"}, share=0.1)
    assert loaded[OTHER].frozen and loaded[OTHER].throttled
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["agent.json"]  # no temp file left behind


def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert StateFile(tmp_path / "none.json").load() == {}


def test_torn_or_foreign_file_is_treated_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text('{"version": 1, "containers": {"c": ')
    assert StateFile(path).load() == {}
    path.write_text(json.dumps({"version": 99, "containers": {}}))
    assert StateFile(path).load() == {}
    path.write_text(json.dumps([1, 2]))
    assert StateFile(path).load() == {}


def test_the_cgroup_parent_is_recorded_for_a_restore(tmp_path: Path) -> None:
    StateFile(tmp_path / "agent.json", "schedbridge-9000").save({})
    assert StateFile(tmp_path / "agent.json").recorded_parent() == "schedbridge-9000"
    assert StateFile(tmp_path / "none.json").recorded_parent() is None
    (tmp_path / "agent.json").write_text('{"version": 1, "cgroup_parent": 7, "containers": {}}')
    assert StateFile(tmp_path / "agent.json").recorded_parent() is None


def test_a_second_holder_of_the_node_lock_is_refused_naming_the_first(tmp_path: Path) -> None:
    with NodeLock(tmp_path / "agent.json"):
        with pytest.raises(AgentLocked, match=rf"another agent \(pid {os.getpid()}\) holds .*agent.json.lock"):
            NodeLock(tmp_path / "agent.json").__enter__()
    with NodeLock(tmp_path / "agent.json"):  # released on exit: the next holder gets it
        pass
