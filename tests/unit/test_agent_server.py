"""The agent's HTTP API through the real client: token auth, listen-address policy, typed errors, and
clients that are slow, unauthenticated or oversized."""
from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
import requests

from bridge.agent.client import AgentClient
from bridge.agent.errors import (AgentUnavailable, BadRequest, ContainerNotRunning, NoSuchEndpoint, Unauthorized,
                                 UnknownContainer)
from bridge.agent.procfs import TreeFinder
from bridge.agent.server import WORKERS, AgentServer, listen_address
from bridge.agent.service import NodeAgent
from bridge.agent.state import StateFile
from tests.trickle import trickling
from tests.unit.agent_fakes import CID, OTHER, FakeCgroups, FakeNodeManager, container_tree

TOKEN = "s3cret-token-0123456789"
TIMEOUT_S = 1.0  # the server's per-request timeout in these tests


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[AgentServer, FakeNodeManager, FakeCgroups]]:
    container_tree(tmp_path / "proc")
    nm, cgroups = FakeNodeManager(), FakeCgroups()
    nm.run(CID)
    agent = NodeAgent(nm, cgroups, TreeFinder((PurePosixPath("/data/nm-local"),)),
                      StateFile(tmp_path / "state.json"), proc_root=tmp_path / "proc")
    server = AgentServer(listen_address("127.0.0.1", 0), agent, TOKEN, timeout_s=TIMEOUT_S)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, nm, cgroups
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def url(server: AgentServer) -> str:
    return server.url


def raw_request(server: AgentServer, data: bytes) -> socket.socket:
    """A connection that has sent `data` and nothing more."""
    conn = socket.create_connection(server.server_address[:2], timeout=5)
    conn.sendall(data)
    return conn


def head(path: str, token: str, length: int) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode()


def status_line(conn: socket.socket) -> str:
    return conn.recv(65536).split(b"\r\n", 1)[0].decode()


def test_commands_round_trip_through_the_client(served) -> None:
    server, _, cgroups = served
    client = AgentClient(url(server), TOKEN)
    assert client.suspend(CID)["share"] == 0.1 and cgroups.groups_[CID].share == 0.1
    assert client.resize(CID, 0.5)["share"] == 0.5
    assert client.resume(CID)["throttled"] is False
    assert client.container(CID)["managed"] is True
    assert client.node()["cgroup_version"] == 1


def test_suspend_carries_a_lease_that_the_batch_endpoint_renews(served) -> None:
    server, _, _ = served
    client = AgentClient(url(server), TOKEN)
    assert 0 < client.suspend(CID, lease_s=5)["lease_s_left"] <= 5
    assert client.renew([CID, OTHER], lease_s=20) == {"renewed": [CID], "not_held": [OTHER], "lease_s": 20.0}
    assert 5 < client.container(CID)["lease_s_left"] <= 20
    with pytest.raises(BadRequest, match="lease_s"):
        client.renew([CID], lease_s=-1)


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


def test_token_is_checked_before_the_body_is_read(served) -> None:
    server, _, cgroups = served
    with raw_request(server, head(f"/v1/containers/{CID}/suspend", "wrong-token-0123456789", 100)) as conn:
        conn.settimeout(TIMEOUT_S / 2)  # the declared body never comes; the refusal must not wait for it
        assert status_line(conn) == "HTTP/1.1 401 Unauthorized"
    assert CID not in cgroups.groups_


def test_oversized_body_is_refused_with_413(served) -> None:
    server, _, cgroups = served
    with raw_request(server, head(f"/v1/containers/{CID}/suspend", TOKEN, 10**6)) as conn:
        reply = conn.recv(65536).decode()
    assert reply.startswith("HTTP/1.1 413 ") and '"payload_too_large"' in reply and "at most 65536 bytes" in reply
    assert CID not in cgroups.groups_


def test_slow_unauthenticated_clients_hold_no_thread_and_delay_no_command(served) -> None:
    server, _, cgroups = served
    threads_before = threading.active_count()
    path = f"/v1/containers/{CID}/suspend"
    slow = [raw_request(server, head(path, "wrong-token-0123456789", 100)[:-2] if i % 2 else head(path, TOKEN, 100))
            for i in range(50)]  # half stop inside the headers, half (with the token) inside the body
    try:
        time.sleep(0.2)
        started = time.monotonic()
        AgentClient(url(server), TOKEN).suspend(CID)
        assert time.monotonic() - started < 1.0
        assert cgroups.groups_[CID].share == 0.1
        assert threading.active_count() - threads_before <= WORKERS  # a bounded pool, not a thread each
        for conn in slow:  # each is dropped once the request timeout has passed
            conn.settimeout(TIMEOUT_S + 3)
            assert conn.recv(1) == b""
    finally:
        for conn in slow:
            conn.close()


def test_listen_addresses_are_compared_as_addresses() -> None:
    for wildcard in ("0", "0x0", "0.0.0.0", "::", "0:0::0", "::ffff:0.0.0.0", ""):
        with pytest.raises(BadRequest, match="wildcard"):
            listen_address(wildcard, 0)
    assert listen_address("127.0.0.1", 0).sockaddr[0] == "127.0.0.1"
    assert listen_address("::1", 0).url_host == "[::1]"
    with pytest.raises(BadRequest, match="cannot resolve listen address 'no such host'"):
        listen_address("no such host", 0)


def test_short_token_is_refused(tmp_path: Path) -> None:
    agent = NodeAgent(FakeNodeManager(), FakeCgroups(), TreeFinder(), StateFile(tmp_path / "s.json"))
    with pytest.raises(BadRequest, match="at least"):
        AgentServer(listen_address("127.0.0.1", 0), agent, "short")


def test_unreachable_agent_raises_agent_unavailable() -> None:
    with pytest.raises(AgentUnavailable):
        AgentClient("http://127.0.0.1:9", TOKEN, timeout_s=1.0).node()


def test_an_agent_trickling_its_reply_is_given_up_at_the_clients_timeout_in_all() -> None:
    """Each byte comes well within the timeout, so only a deadline for the whole call ends it."""
    with trickling(0.05) as url:
        started = time.monotonic()
        with pytest.raises(AgentUnavailable, match=r"no whole reply within 1 s"):
            AgentClient(url, TOKEN, timeout_s=1.0).node()
        assert time.monotonic() - started < 2.0


METRIC_LINE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})? '
                         r'(-?[0-9.eE+-]+|NaN|[+-]Inf)')


def parse_exposition(text: str) -> dict[tuple[str, frozenset], float]:
    """Prometheus text format 0.0.4, strictly: every line a HELP, a TYPE of a declared kind, or a
    sample of a family whose TYPE came first; (name, labels) -> value."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "summary", "histogram", "untyped") and name not in typed, line
            typed.add(name)
            continue
        match = METRIC_LINE.fullmatch(line)
        assert match, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        assert name in typed or name.rsplit("_", 1)[0] in typed, f"{name} has no TYPE"
        pairs = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels or ""))
        assert (name, pairs) not in samples, f"duplicate sample {line!r}"
        samples[(name, pairs)] = float(value)
    return samples


def scrape(server: AgentServer, token: str = TOKEN) -> requests.Response:
    return requests.get(f"{url(server)}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=5)


def test_metrics_need_the_token(served) -> None:
    server, _, _ = served
    assert scrape(server, "wrong-token-0123456789").status_code == 401
    assert requests.get(f"{url(server)}/metrics", timeout=5).status_code == 401


def test_metrics_parse_as_prometheus_text_and_counters_move_with_commands(served) -> None:
    server, _, _ = served
    client = AgentClient(url(server), TOKEN)
    reply = scrape(server)
    assert reply.status_code == 200 and reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    before = parse_exposition(reply.text)
    assert before[("schedbridge_agent_suspends_total", frozenset())] == 0
    client.suspend(CID, lease_s=5)
    client.renew([CID], lease_s=5)
    during = parse_exposition(scrape(server).text)
    client.resize(CID, 0.5)
    client.resume(CID)
    with pytest.raises(Unauthorized):
        AgentClient(url(server), "wrong-token-0123456789").node()
    server.agent.reconcile()
    after = parse_exposition(scrape(server).text)
    assert during[("schedbridge_agent_containers", frozenset({("state", "suspended")}))] == 1
    assert during[("schedbridge_agent_leases_held", frozenset())] == 1
    assert after[("schedbridge_agent_containers", frozenset({("state", "suspended")}))] == 0
    assert after[("schedbridge_agent_containers", frozenset({("state", "running")}))] == 1
    for name in ("suspends", "resumes", "resizes", "lease_renewals"):
        assert after[(f"schedbridge_agent_{name}_total", frozenset())] == 1, name
    suspend = frozenset({("method", "POST"), ("endpoint", "/v1/containers/{id}/suspend"), ("status", "200")})
    assert after[("schedbridge_agent_requests_total", suspend)] == 1
    assert after[("schedbridge_agent_connections_refused_total", frozenset({("reason", "unauthorized")}))] == 1
    assert after[("schedbridge_agent_reconcile_duration_seconds_count", frozenset())] == 1
    assert after[("schedbridge_agent_reconcile_duration_seconds_sum", frozenset())] > 0


def test_metrics_fold_container_ids_and_unknown_paths_into_few_series(served) -> None:
    server, _, _ = served
    for path in ("/v1/containers/container_1_0001_01_000009", "/v1/containers/container_1_0001_01_000010",
                 "/x/1", "/x/2"):
        requests.get(f"{url(server)}{path}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
    requests_total = {labels: v for (name, labels), v in parse_exposition(scrape(server).text).items()
                      if name == "schedbridge_agent_requests_total"}
    assert requests_total[frozenset({("method", "GET"), ("endpoint", "/v1/containers/{id}"), ("status", "404")})] == 2
    assert requests_total[frozenset({("method", "other"), ("endpoint", "other"), ("status", "404")})] == 2


def test_a_lapsed_lease_is_counted_as_an_expiry(tmp_path: Path) -> None:
    container_tree(tmp_path / "proc")
    nm, now = FakeNodeManager(), [0.0]
    nm.run(CID)
    agent = NodeAgent(nm, FakeCgroups(), TreeFinder((PurePosixPath("/data/nm-local"),)),
                      StateFile(tmp_path / "state.json"), proc_root=tmp_path / "proc", clock=lambda: now[0])
    agent.resize(CID, 0.5, lease_s=5)
    assert parse_exposition(agent.prometheus())[("schedbridge_agent_containers",
                                                 frozenset({("state", "resized")}))] == 1
    now[0] = 6.0
    agent.reconcile()
    samples = parse_exposition(agent.prometheus())
    assert samples[("schedbridge_agent_lease_expiries_total", frozenset())] == 1
    assert samples[("schedbridge_agent_leases_held", frozenset())] == 0
