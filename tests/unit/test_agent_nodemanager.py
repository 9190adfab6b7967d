"""The NodeManager adapter against a fake NM REST server on loopback: mapping, 404, outage."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from bridge.agent.errors import BadRequest, NodeManagerUnavailable
from bridge.agent.nodemanager import YarnNodeManager
from bridge.agent.trial import FakeNodeManager
from tests.unit.agent_fakes import CID, OTHER


@pytest.fixture
def fake_nm() -> Iterator[FakeNodeManager]:
    fake = FakeNodeManager()
    yield fake
    fake.close()


def test_lists_and_reads_containers(fake_nm: FakeNodeManager) -> None:
    fake_nm.states.update({CID: "RUNNING", OTHER: "EXITED_WITH_SUCCESS"})
    nm = YarnNodeManager(fake_nm.url)
    listed = {c.id: c for c in nm.containers()}
    assert listed[CID].running and not listed[OTHER].running
    assert nm.container(CID).vcores == 1 and nm.container(CID).memory_mb == 1024


def test_unknown_container_is_none_and_bad_id_is_refused(fake_nm: FakeNodeManager) -> None:
    nm = YarnNodeManager(fake_nm.url)
    assert nm.container(CID) is None
    assert nm.containers() == []
    with pytest.raises(BadRequest, match="not a YARN container id"):
        nm.container("container_1/../../x")


def test_unreachable_nodemanager_is_a_typed_error() -> None:
    nm = YarnNodeManager("http://127.0.0.1:9", timeout_s=1.0)
    with pytest.raises(NodeManagerUnavailable, match="127.0.0.1:9"):
        nm.containers()
