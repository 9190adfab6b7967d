"""The agent's HTTP API through the real client: token auth, listen-address policy, typed errors."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
import requests

from bridge.agent.client import AgentClient
from bridge.agent.errors import (AgentUnavailable, BadRequest, ContainerNotRunning, NoSuchEndpoint, Unauthorized,
                                 UnknownContainer)
from bridge.agent.procfs import TreeFinder
from bridge.agent.server import AgentServer
from bridge.agent.service import NodeAgent
from bridge.agent.state import StateFile
from tests.unit.agent_fakes import CID, OTHER, FakeCgroups, FakeNodeManager, container_tree

TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[AgentServer, FakeNodeManager, FakeCgroups]]:
    container_tree(tmp_path / "proc")
    nm, cgroups = FakeNodeManager(), FakeCgroups()
    nm.run(CID)
    agent = NodeAgent(nm, cgroups, TreeFinder((PurePosixPath("/data/nm-local"),)),
                      StateFile(tmp_path / "state.json"), proc_root=tmp_path / "proc")
    server = AgentServer("127.0.0.1", 0, agent, TOKEN)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server, nm, cgroups
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def url(server: AgentServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_commands_round_trip_through_the_client(served) -> None:
    server, _, cgroups = served
    client = AgentClient(url(server), TOKEN)
    assert client.suspend(CID)["share"] == 0.1 and cgroups.groups_[CID].share == 0.1
    assert client.resize(CID, 0.5)["share"] == 0.5
    assert client.resume(CID)["throttled"] is False
    assert client.container(CID)["managed"] is True
    assert client.node()["cgroup_version"] == 1


def test_missing_or_wrong_token_is_rejected(served) -> None:
    server, _, cgroups = served
    with pytest.raises(Unauthorized):
        AgentClient(url(server), "wrong-token-0123456789").suspend(CID)
    bare = requests.post(f"{url(server)}/v1/containers/{CID}/suspend", timeout=5)
    assert bare.status_code == 401 and bare.json()["error"] == "unauthorized"
    assert CID not in cgroups.groups_


def test_refusals_are_typed_and_name_the_container(served) -> None:
    server, nm, _ = served
    client = AgentClient(url(server), TOKEN)
    with pytest.raises(UnknownContainer, match=OTHER):
        client.suspend(OTHER)
    nm.run(CID, state="EXITED_WITH_SUCCESS")
    with pytest.raises(ContainerNotRunning, match=CID):
        client.resize(CID, 0.5)
    with pytest.raises(BadRequest, match="not a YARN container id"):
        client.resume("container_x")
    with pytest.raises(NoSuchEndpoint):
        client._call("POST", f"/v1/containers/{CID}/explode")


def test_bad_bodies_get_400_not_a_traceback(served) -> None:
    server, _, _ = served
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    for body in (b"{not json", b"[1]", b'{"freeze": "yes"}'):
        reply = requests.post(f"{url(server)}/v1/containers/{CID}/suspend", data=body, headers=headers, timeout=5)
        assert reply.status_code == 400 and reply.json()["error"] == "bad_request"


def test_wildcard_address_and_short_token_are_refused(tmp_path: Path) -> None:
    agent = NodeAgent(FakeNodeManager(), FakeCgroups(), TreeFinder(), StateFile(tmp_path / "s.json"))
    with pytest.raises(BadRequest, match="wildcard"):
        AgentServer("0.0.0.0", 0, agent, TOKEN)
    with pytest.raises(BadRequest, match="at least"):
        AgentServer("127.0.0.1", 0, agent, "short")


def test_unreachable_agent_raises_agent_unavailable() -> None:
    with pytest.raises(AgentUnavailable):
        AgentClient("http://127.0.0.1:9", TOKEN, timeout_s=1.0).node()
