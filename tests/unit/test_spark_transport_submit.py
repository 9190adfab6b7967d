"""The daemon's TCP transport (mutual authentication, attach, rounds, application ownership, size
limit) and `schedbridge submit`'s rewriting."""
from __future__ import annotations

import json
import socket
import socketserver
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from bridge.drivers.spark.fifo import FifoPlanner
from bridge.launch.submit import rewrite
from bridge.plugin.daemon import PolicyDaemon
from bridge.plugin.host import PolicyHost, scoped
from bridge.plugin.login import Limits
from bridge.protocol.auth import AuthError, client_handshake, ensure_token_file, key_digest, new_nonce, proof

TOKEN = "s3cret-token-0123456789"
KEY_A, KEY_B = new_nonce(), new_nonce()
A, B = scoped("app-A", key_digest(KEY_A)), scoped("app-A", key_digest(KEY_B))  # app-A's state by client


def serve(daemon: PolicyDaemon) -> PolicyDaemon:
    threading.Thread(target=daemon.serve_forever, daemon=True).start()
    return daemon


@pytest.fixture
def daemon() -> Iterator[PolicyDaemon]:
    server = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), token=TOKEN, app_timeout_s=0.3))
    yield server
    server.shutdown()
    server.server_close()


def exchange(sock_file, msg: dict) -> dict:
    sock_file.write(json.dumps(msg).encode() + b"\n")
    sock_file.flush()
    return json.loads(sock_file.readline())


def closed(sock_file) -> bool:
    """True if the daemon closed the connection (a reset when it left bytes of ours unread)."""
    try:
        return sock_file.readline() == b""
    except ConnectionResetError:
        return True


def round_msg(app: str, snapshot: bool = True) -> dict:
    msg = {"v": 2, "kind": "round", "app": app, "round": 1, "now_ms": 1, "cpus_per_task": 1,
           "slots": [{"executor": "1", "host": "h", "free": 2}],
           "stages": [{"stage": 0, "attempt": 0, "job": 0, "tasks": 3, "pending": 3, "running": 0}], "events": []}
    if snapshot:
        msg["snapshot"] = {"executors": [], "running": [], "jobs": []}
    return msg


def connect(daemon: PolicyDaemon, key: str, token: str = TOKEN):
    s = socket.create_connection(daemon.server_address, timeout=5)
    f = s.makefile("rwb")
    client_handshake(f, token, "app", key)
    return s, f


def test_daemon_handshake_attach_and_round(daemon: PolicyDaemon) -> None:
    s, f = connect(daemon, KEY_A)
    with s, f:
        assert exchange(f, {"v": 2, "kind": "attach", "app": "a", "policy": "spark-fifo", "params": {}}) == {
            "v": 2, "attached": True, "policy": "spark-fifo", "launch_reports": False}
        reply = exchange(f, round_msg("a"))
        assert reply["assign"] == [{"stage": 0, "attempt": 0, "executor": "1", "slots": 2}] and reply["round"] == 1
        assert "error" in exchange(f, {"v": 1, "kind": "round"})


@pytest.mark.parametrize("token", ["", "wrong-token-0123456789"])
def test_a_client_without_the_token_is_refused_on_loopback_too(daemon: PolicyDaemon, token: str) -> None:
    with socket.create_connection(daemon.server_address, timeout=5) as s, s.makefile("rwb") as f:
        mine = new_nonce()
        challenge = exchange(f, {"v": 2, "kind": "hello", "app": "a", "nonce": mine})
        bad = proof(token, "plugin", challenge["nonce"], mine)
        assert exchange(f, {"v": 2, "kind": "auth", "proof": bad, "app_key": KEY_A}) == {
            "v": 2, "ok": False, "error": "bad token"}
        assert f.readline() == b""  # closed: nothing more is read from this client
    with pytest.raises(AuthError, match="could not prove it knows the token"):  # the client's own check
        connect(daemon, KEY_A, "wrong-token-0123456789")


def test_the_token_is_never_sent_and_a_fake_daemon_is_detected(tmp_path: Path) -> None:
    """A fake daemon on the endpoint sees only a nonce; the plugin stops before it proves anything."""
    seen: list[bytes] = []

    class Fake(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            seen.append(self.rfile.readline())
            self.wfile.write(json.dumps({"v": 2, "nonce": new_nonce(), "proof": "0" * 64}).encode() + b"\n")
            seen.append(self.rfile.readline())  # the plugin must send nothing more

    with socketserver.TCPServer(("127.0.0.1", 0), Fake) as fake:
        threading.Thread(target=fake.handle_request, daemon=True).start()
        with socket.create_connection(fake.server_address, timeout=5) as s, s.makefile("rwb") as f:
            with pytest.raises(AuthError, match="could not prove it knows the token"):
                client_handshake(f, TOKEN, "app", KEY_A)
    time.sleep(0.2)
    assert all(TOKEN.encode() not in line and KEY_A.encode() not in line for line in seen)


def test_an_application_id_played_first_by_another_client_stays_the_real_application_s(
        daemon: PolicyDaemon) -> None:
    """Spark ids are predictable: a squatter with the token that plays app-A first gets a state of its
    own, and app-A's rounds, snapshot and detach are its owner's alone."""
    squatter_s, squatter = connect(daemon, KEY_B)
    s, f = connect(daemon, KEY_A)
    with s, f, squatter_s, squatter:
        squatted = round_msg("app-A")
        squatted["slots"] = [{"executor": "9", "host": "h", "free": 1}]
        assert exchange(squatter, squatted)["assign"][0]["executor"] == "9"
        assert exchange(f, round_msg("app-A"))["assign"] == [{"stage": 0, "attempt": 0, "executor": "1", "slots": 2}]
        assert exchange(squatter, {"v": 2, "kind": "detach", "app": "app-A"}) == {"v": 2, "detached": True}
        assert A in daemon.host.cluster and B not in daemon.host.cluster
        assert "assign" in exchange(f, round_msg("app-A", snapshot=False))  # A's state is intact
        assert exchange(f, {"v": 2, "kind": "detach", "app": "app-A"}) == {"v": 2, "detached": True}
        assert A not in daemon.host.cluster
    assert [d.app for d in daemon.host.decisions] == [B, A, A]


def test_an_application_whose_connections_are_gone_is_forgotten(daemon: PolicyDaemon) -> None:
    s, f = connect(daemon, KEY_A)
    with s, f:
        assert "assign" in exchange(f, round_msg("app-A"))
    deadline = time.monotonic() + 5
    while A in daemon.host.cluster and time.monotonic() < deadline:
        time.sleep(0.05)
    assert A not in daemon.host.cluster  # app_timeout_s=0.3 after its last connection closed


def test_an_application_reconnecting_in_time_keeps_its_state(daemon: PolicyDaemon) -> None:
    s, f = connect(daemon, KEY_A)
    with s, f:
        assert "assign" in exchange(f, round_msg("app-A"))
        s2, f2 = connect(daemon, KEY_A)  # the plugin's reconnection, same key
    with s2, f2:
        time.sleep(0.6)
        assert A in daemon.host.cluster
        assert "assign" in exchange(f2, round_msg("app-A", snapshot=False))


def test_a_daemon_needs_a_token_and_serve_creates_an_owner_only_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a token"):
        PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), token="")
    path = tmp_path / "dir" / "token"
    token = ensure_token_file(path)
    assert len(token) >= 32 and ensure_token_file(path) == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)
    with pytest.raises(ValueError, match="readable by others"):
        ensure_token_file(path)


def test_a_message_over_the_limit_closes_the_connection_instead_of_being_split() -> None:
    daemon = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), token=TOKEN,
                                limits=Limits(message_bytes=1000)))
    s, f = connect(daemon, KEY_A)
    with s, f:
        f.write(b'{"v": 2, "kind": "round", "pad": "' + b"x" * 3000 + b'"}\n')
        f.flush()
        assert "over 1000 bytes" in json.loads(f.readline())["error"]
        assert closed(f)  # no answers to the pieces of the long line
    s, f = connect(daemon, KEY_A)  # others unaffected
    with s, f:
        assert "attached" in exchange(f, {"v": 2, "kind": "attach", "app": "a", "policy": "spark-fifo", "params": {}})
    daemon.shutdown()
    daemon.server_close()


def test_submit_keeps_yarn_only_options_and_adds_the_jar(monkeypatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop")
    args = rewrite(["--master", "spark-schedbridge://yarn", "--num-executors", "2", "--queue=q",
                    "--jars", "a.jar", "--executor-memory", "512m", "--files", "d.txt#alias", "app.py", "--x", "1"],
                   "/p.jar")
    assert args[-3:] == ["app.py", "--x", "1"]
    text = " ".join(args)
    assert "--conf spark.executor.instances=2" in text and "--conf spark.yarn.queue=q" in text
    assert "--conf spark.yarn.dist.files=d.txt#alias" in text and "--files" not in text
    assert "--conf spark.yarn.isPython=true" in text and "--executor-memory 512m" in text
    assert "--jars /p.jar,a.jar" in text and "--driver-class-path /p.jar" in text
    assert "--num-executors" not in text


def test_submit_refuses_other_masters(monkeypatch) -> None:
    # (without HADOOP_CONF_DIR the cluster is the local testbed: tests/unit/test_cluster_target.py)
    with pytest.raises(click.UsageError, match="--master must be"):
        rewrite(["--master", "yarn", "app.py"], "/p.jar")
    local = rewrite(["--master", "spark-schedbridge://local[2]", "--num-executors", "2", "app.py"], "/p.jar")
    assert "--num-executors" in local  # not YARN: left to spark-submit as given
