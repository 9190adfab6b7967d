"""What a token holder can make ``schedbridge serve`` keep: applications per key and per connection,
snapshot size, buffered bytes across connections, and idle applications forgotten."""
from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest

from bridge.drivers.spark.fifo import FifoPlanner
from bridge.plugin.daemon import PolicyDaemon
from bridge.plugin.host import Client, PolicyHost
from bridge.plugin.lines import Buffers, LineSocket
from bridge.plugin.login import Limits
from bridge.protocol.auth import new_nonce
from tests.unit.test_serve_login import ATTACH, log_in
from tests.unit.test_spark_transport_submit import TOKEN, closed, exchange, round_msg, serve

LIMITS = Limits(apps_per_key=16, apps_per_connection=5_000, snapshot_bytes=4096, buffered_bytes=1 << 20,
                own_buffer_bytes=64 << 10)


@pytest.fixture
def daemon() -> Iterator[PolicyDaemon]:
    server = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), TOKEN, limits=LIMITS))
    yield server
    server.shutdown()
    server.server_close()


def dial(daemon: PolicyDaemon) -> socket.socket:
    return socket.create_connection(daemon.server_address, timeout=5)


def test_one_key_registering_5000_applications_is_refused_past_its_cap(daemon: PolicyDaemon) -> None:
    key = new_nonce()
    with dial(daemon) as s, log_in(s, key) as f:
        assert exchange(f, ATTACH)["attached"]
        replies = [exchange(f, round_msg(f"app-{i}")) for i in range(5_000)]
    assert all("assign" in r for r in replies[:LIMITS.apps_per_key])
    refused = replies[LIMITS.apps_per_key:]
    assert all(r["error"] == "a new application over the cap of 16 applications per application key "
                             "(schedbridge serve --max-apps-per-key raises it)" for r in refused)
    assert len(list(daemon.host.cluster)) == LIMITS.apps_per_key
    with dial(daemon) as s, log_in(s, key) as f:  # its known applications are still served
        assert "assign" in exchange(f, {**round_msg("app-3", snapshot=False), "round": 2})
    with dial(daemon) as s, log_in(s) as f:  # another key is not held to this one's count
        assert "assign" in exchange(f, round_msg("app-0"))


def test_applications_per_connection_are_capped_and_a_forgotten_one_frees_its_place() -> None:
    host = PolicyHost(FifoPlanner())
    client = Client("owner", apps_per_key=10, apps_per_connection=2, snapshot_bytes=1 << 20)
    assert all("assign" in json.loads(host.handle(json.dumps(round_msg(a)), client)) for a in ("a", "b"))
    third = json.loads(host.handle(json.dumps(round_msg("c")), client))
    assert third["error"] == ("a new application over the cap of 2 applications per connection "
                              "(schedbridge serve --max-apps-per-connection raises it)")
    time.sleep(0.01)
    assert sorted(host.forget_idle(0.0)) == ["a@owner", "b@owner"]  # no request named them since
    assert not list(host.cluster)
    assert "assign" in json.loads(host.handle(json.dumps(round_msg("c")), client))


def test_a_snapshot_over_its_cap_is_refused_and_a_small_one_served(daemon: PolicyDaemon) -> None:
    big = round_msg("big")
    big["snapshot"]["executors"] = [{"kind": "executor_added", "executor": str(i), "host": "h", "cores": 1}
                                    for i in range(200)]
    with dial(daemon) as s, log_in(s) as f:
        reply = exchange(f, big)
        assert reply["error"].startswith("a round with a snapshot of ") and reply["error"].endswith(
            "bytes, over the cap of 4096 (schedbridge serve --max-snapshot-bytes raises it)")
        assert "big" not in {state.app.split("@")[0] for state in daemon.host.cluster}
        assert "assign" in exchange(f, round_msg("small"))


def test_unfinished_messages_are_bounded_across_connections_and_others_still_served(daemon: PolicyDaemon) -> None:
    part = b'{"v": 2, "pad": "' + b"x" * (600 << 10)  # 600 KiB of a message, no end: two take the budget
    first, second = dial(daemon), dial(daemon)
    try:
        f1, f2 = log_in(first), log_in(second)
        f1.write(part)
        f1.flush()
        time.sleep(0.2)
        f2.write(part)
        f2.flush()
        line = f2.readline().decode()
        assert "past the 1048576 bytes all connections may buffer at once beyond 65536 each " \
               "(schedbridge serve --max-buffered-bytes raises it)" in line
        assert closed(f2)
        with dial(daemon) as s, log_in(s) as f:  # a small message needs no budget
            assert exchange(f, ATTACH)["attached"]
        f1.close()
        first.close()
        deadline = time.monotonic() + 2
        while daemon._buffers.used and time.monotonic() < deadline:
            time.sleep(0.02)
        assert daemon._buffers.used == 0  # given back when the connection closed
    finally:
        first.close()
        second.close()


def test_a_big_line_stays_charged_until_the_next_read_so_big_lines_decoded_at_once_are_bounded() -> None:
    a, b = socket.socketpair()
    buffers = Buffers(shared=1 << 20, own=1024, setting="--more")
    with a, b:
        conn = LineSocket(a, buffers=buffers)
        b.sendall(b"x" * 5000 + b"\nok\n")
        assert len(conn.read_line(1 << 20, time.monotonic() + 5) or b"") == 5000
        assert buffers.used == 5000 + 3 - 1024  # being answered: still charged
        assert conn.read_line(1 << 20, time.monotonic() + 5) == b"ok"
        assert buffers.used == 0
        conn.release()
    assert buffers.used == 0


def test_past_the_keys_kept_without_connections_the_first_closed_is_forgotten_at_once(caplog) -> None:
    server = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), TOKEN,
                                limits=Limits(closed_keys=2, log_every_s=60)))  # --app-timeout: 60 s
    try:
        for app in ("app-1", "app-2", "app-3"):
            with dial(server) as s, log_in(s) as f:
                assert "assign" in exchange(f, round_msg(app))
            deadline = time.monotonic() + 2  # "first closed" is when the daemon saw it: wait for that
            while server.reaper._open and time.monotonic() < deadline:
                time.sleep(0.01)
        deadline = time.monotonic() + 2
        while len(list(server.host.cluster)) > 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sorted(state.app.split("@")[0] for state in server.host.cluster) == ["app-2", "app-3"]
    finally:
        server.shutdown()
        server.server_close()
    assert "forgotten before --app-timeout: over 2 application keys without connections" in caplog.text
