"""The daemon's login phase and connection limits (``bridge.plugin.login``), and TLS, on an
in-process ``PolicyDaemon`` with small limits."""
from __future__ import annotations

import json
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from bridge.common.tls import ServerTls, client_context
from bridge.drivers.spark.fifo import FifoPlanner
from bridge.launch import preflight
from bridge.plugin.daemon import PolicyDaemon
from bridge.plugin.daemon import serve as serve_command
from bridge.plugin.host import PolicyHost
from bridge.plugin.login import Limits
from bridge.protocol.auth import client_handshake, new_nonce
from tests.certs import make_cert
from tests.unit.test_spark_transport_submit import TOKEN, closed, exchange, round_msg, serve

FAST = Limits(login_timeout_s=0.5, idle_timeout_s=0.5, max_per_peer=3, log_every_s=60)
ATTACH = {"v": 2, "kind": "attach", "app": "a", "policy": "spark-fifo", "params": {}}


@pytest.fixture
def daemon() -> Iterator[PolicyDaemon]:
    server = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), TOKEN, limits=FAST))
    yield server
    server.shutdown()
    server.server_close()


def dial(daemon: PolicyDaemon) -> socket.socket:
    return socket.create_connection(daemon.server_address, timeout=5)


def log_in(sock: socket.socket, app_key: str = ""):
    f = sock.makefile("rwb")
    client_handshake(f, TOKEN, "app", app_key or new_nonce())
    return f


def test_a_client_sending_a_byte_at_a_time_is_dropped_at_the_login_deadline(daemon: PolicyDaemon) -> None:
    with dial(daemon) as s:
        start = time.monotonic()
        s.settimeout(0.1)
        with pytest.raises((ConnectionError, BrokenPipeError)):
            while time.monotonic() - start < 5:
                s.send(b"{")
                try:
                    if s.recv(10) == b"":
                        raise ConnectionError("closed")
                except TimeoutError:
                    pass
        assert time.monotonic() - start < 1.5  # login_timeout_s=0.5, the bytes notwithstanding


def test_a_logged_in_client_must_send_each_message_whole_within_the_idle_deadline(daemon: PolicyDaemon) -> None:
    with dial(daemon) as s, log_in(s) as f:
        assert exchange(f, ATTACH)["attached"]
        time.sleep(0.3)
        assert exchange(f, round_msg("a"))["assign"]  # the deadline is per message, not per connection
        f.write(b'{"v": 2,')
        f.flush()
        time.sleep(0.3)
        f.write(b' "kind"')  # bytes keep coming, the message does not
        f.flush()
        time.sleep(0.4)
        assert closed(f)


def test_login_lines_are_small_and_deeply_nested_json_is_one_log_line(daemon: PolicyDaemon, caplog) -> None:
    caplog.set_level(logging.INFO)
    with dial(daemon) as s, s.makefile("rwb") as f:
        f.write(b"x" * 5000)
        f.flush()
        assert "login message over 4096 bytes" in f.readline().decode()
    with dial(daemon) as s, s.makefile("rwb") as f:
        f.write(b"[" * 3000 + b"\n")
        f.flush()
        assert "nested too deeply" in f.readline().decode()
        assert closed(f)
    assert not [r for r in caplog.records if r.exc_info]


def test_a_newline_a_peer_sends_is_escaped_in_the_log_never_a_line_of_its_own(daemon: PolicyDaemon,
                                                                             caplog) -> None:
    caplog.set_level(logging.INFO)
    forged = "x\n2026-01-01 00:00:00 WARNING schedbridge serve: forged"
    with dial(daemon) as s, s.makefile("rwb") as f:  # unauthenticated: a hello, then a wrong proof
        f.write(json.dumps({"v": 2, "kind": "hello", "app": forged, "nonce": new_nonce()}).encode() + b"\n")
        f.flush()
        assert "nonce" in json.loads(f.readline())
        f.write(json.dumps({"v": 2, "kind": "auth", "proof": "0" * 64, "app_key": "k" * 16}).encode() + b"\n")
        f.flush()
        assert json.loads(f.readline())["ok"] is False
        assert closed(f)
    with dial(daemon) as s, log_in(s) as f:  # logged in: an application name in the host's log
        assert exchange(f, {**ATTACH, "app": forged})["attached"]
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and "closed before login" not in caplog.text:
        time.sleep(0.02)
    lines = [r.getMessage() for r in caplog.records if "x\\n2026" in r.getMessage()]
    assert any("closed before login" in line for line in lines), caplog.text
    assert any("attached" in line for line in lines), caplog.text
    assert not [r for r in caplog.records if "\n" in r.getMessage()]


def test_past_the_per_peer_cap_the_oldest_idle_login_of_that_address_is_shed_with_one_log_line(
        daemon: PolicyDaemon, caplog) -> None:
    caplog.set_level(logging.WARNING)
    held = [dial(daemon) for _ in range(FAST.max_per_peer)]
    try:
        time.sleep(0.1)
        with dial(daemon) as s, log_in(s) as f:  # the newcomer gets in: it costs the oldest idle one its place
            assert exchange(f, ATTACH)["attached"]
            with held[0].makefile("rb") as oldest:
                assert closed(oldest)
    finally:
        for s in held:
            s.close()
    assert len([r for r in caplog.records if "shedding connections not logged in" in r.getMessage()]) == 1


def test_past_the_per_peer_cap_of_logged_in_connections_a_newcomer_is_refused_with_one_log_line(
        daemon: PolicyDaemon, caplog) -> None:
    caplog.set_level(logging.WARNING)
    held = [dial(daemon) for _ in range(FAST.max_per_peer)]
    files = [log_in(s) for s in held]  # logged in: never shed
    try:
        extra = [dial(daemon) for _ in range(3)]
        for s in extra:
            with s, s.makefile("rb") as f:
                assert closed(f)
        for f in files:
            assert exchange(f, ATTACH)["attached"]
    finally:
        for f in files:
            f.close()
        for s in held:
            s.close()
    assert len([r for r in caplog.records if "refused a connection" in r.getMessage()]) == 1
    time.sleep(0.2)  # the closed ones are counted out: an application gets in again
    with dial(daemon) as s, log_in(s) as f:
        assert exchange(f, ATTACH)["attached"]


def dial_from(daemon: PolicyDaemon, source: str) -> socket.socket:
    return socket.create_connection(daemon.server_address, timeout=5, source_address=(source, 0))


def test_idle_connections_filling_every_slot_from_four_addresses_cannot_lock_an_application_out(caplog) -> None:
    """The defaults' caps (1,024 in all, 256 per address), filled by 127.0.0.2-5 and refilled as they are
    shed; the login deadline is long so that nothing but shedding makes room."""
    caplog.set_level(logging.WARNING)
    limits = Limits(login_timeout_s=60.0)
    sources = [f"127.0.0.{i}" for i in range(2, 6)]
    daemon = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), TOKEN, limits=limits))
    idle = [dial_from(daemon, src) for src in sources for _ in range(limits.max_per_peer)]
    try:
        assert len(idle) == limits.max_connections
        for attempt in range(3):
            idle += [dial_from(daemon, src) for src in sources for _ in range(16)]  # the flood goes on
            with dial(daemon) as s, log_in(s) as f:
                assert exchange(f, ATTACH)["attached"]
                assert exchange(f, round_msg(f"app-{attempt}"))["assign"]
    finally:
        daemon.shutdown()
        daemon.server_close()
        for s in idle:
            s.close()
    shed = [r for r in caplog.records if "shedding connections not logged in" in r.getMessage()]
    assert len(shed) == 1 and not [r for r in caplog.records if "refused a connection" in r.getMessage()]


def test_an_application_is_forgotten_by_the_reaper_without_a_thread_per_connection() -> None:
    daemon = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), TOKEN, app_timeout_s=0.3))
    try:
        key = new_nonce()
        for _ in range(20):
            with dial(daemon) as s, log_in(s, key) as f:
                assert "assign" in exchange(f, round_msg("app-A"))
        assert not [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
        deadline = time.monotonic() + 5
        while daemon.host.cluster and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not list(daemon.host.cluster)
    finally:
        daemon.shutdown()
        daemon.server_close()


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> tuple[ServerTls, ServerTls]:
    """A server certificate for localhost and another, unrelated one (a wrong CA)."""
    folder = tmp_path_factory.mktemp("certs")
    return make_cert(folder), make_cert(folder, "other")


def test_tls_serves_a_client_that_verifies_it_and_refuses_one_in_clear(certs) -> None:
    server_cert, other = certs
    daemon = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), TOKEN,
                                tls=server_cert.context(), limits=FAST))
    try:
        with dial(daemon) as raw, client_context(server_cert.cert).wrap_socket(raw, server_hostname="localhost") as s, \
                log_in(s) as f:
            assert exchange(f, ATTACH)["attached"]
            assert "assign" in exchange(f, round_msg("a"))
        with dial(daemon) as raw, pytest.raises(ssl.SSLCertVerificationError):
            client_context(other.cert).wrap_socket(raw, server_hostname="localhost")
        with dial(daemon) as plain, plain.makefile("rwb") as f:  # a plugin without TLS: dropped, nothing answered
            f.write(b'{"v": 2, "kind": "hello", "app": "a", "nonce": "00"}\n')
            f.flush()
            assert closed(f)
    finally:
        daemon.shutdown()
        daemon.server_close()


def test_preflight_attaches_over_tls_and_names_a_certificate_it_cannot_verify(certs) -> None:
    server_cert, other = certs
    daemon = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), TOKEN, tls=server_cert.context()))
    conf = {"spark.schedbridge.endpoint": f"tls://localhost:{daemon.server_address[1]}",
            "spark.schedbridge.token": TOKEN}
    try:
        preflight.check("spark-fifo", {**conf, "spark.schedbridge.tls.ca": str(server_cert.cert)})
        with pytest.raises(ValueError, match="does not answer .*certificate verify failed"):
            preflight.check("spark-fifo", {**conf, "spark.schedbridge.tls.ca": str(other.cert)})
        with pytest.raises(ValueError, match="tls.ca is set but spark.schedbridge.endpoint is 'tcp://"):
            preflight.check("spark-fifo", {**conf, "spark.schedbridge.endpoint": "tcp://localhost:1",
                                           "spark.schedbridge.tls.ca": str(server_cert.cert)})
    finally:
        daemon.shutdown()
        daemon.server_close()


def test_serve_refuses_a_non_loopback_address_without_tls_or_insecure(tmp_path) -> None:
    result = CliRunner().invoke(serve_command, ["--policy", "spark-fifo", "--host", "0.0.0.0",
                                                "--token-file", str(tmp_path / "token")])
    assert result.exit_code == 1 and "refuses to listen on '0.0.0.0' without TLS" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # one message, no traceback


@pytest.mark.parametrize(("given", "level"), [([], logging.INFO), (["--log-level", "debug"], logging.DEBUG),
                                              (["--log-level", "ERROR"], logging.ERROR)])
def test_serve_log_level_sets_the_root_level(tmp_path, given: list[str], level: int) -> None:
    root = logging.getLogger()
    before = root.level
    try:  # a refused address stops serve right after it configured its log
        result = CliRunner().invoke(serve_command, ["--policy", "spark-fifo", "--host", "0.0.0.0", *given,
                                                    "--token-file", str(tmp_path / "token")])
        assert result.exit_code == 1 and root.level == level
    finally:
        root.setLevel(before)


def test_serve_refuses_an_unknown_log_level(tmp_path) -> None:
    result = CliRunner().invoke(serve_command, ["--policy", "spark-fifo", "--log-level", "LOUD"])
    assert result.exit_code == 2 and "'--log-level'" in result.output and "LOUD" in result.output


def test_a_round_is_logged_at_debug_only_and_an_attach_at_info(caplog) -> None:
    host = PolicyHost(FifoPlanner())
    with caplog.at_level(logging.INFO, logger="bridge.plugin.host"):
        host.handle(json.dumps(ATTACH))
        host.handle(json.dumps(round_msg("a")))
    assert "attached" in caplog.text and "round 1" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="bridge.plugin.host"):
        host.handle(json.dumps({**round_msg("a", snapshot=False), "round": 2}))
    assert re.search(r"a round 2: s0\.0->1x2", caplog.text), caplog.text
