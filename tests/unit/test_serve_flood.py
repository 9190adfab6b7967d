"""``schedbridge serve`` under a flood of clients that never log in: what it costs the daemon
(measured in /proc), how soon they are dropped, and that an application logging in meanwhile is
served."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.plugin.login import Limits
from bridge.protocol.auth import client_handshake, new_nonce
from tests.integration.sparkplugin_support import DaemonProcess
from tests.unit.test_spark_transport_submit import exchange, round_msg

FLOODERS, FLOOD_BYTES, IDLE = 40, 4 << 20, 150
MAX_GROWTH_KB, MAX_NEW_THREADS, MAX_IDLE_S = 64 << 10, 40, 15.0


def status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (kB) and Threads of a process."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM", "Threads")}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    proc = DaemonProcess(tmp_path / "serve.log")
    yield proc
    proc.kill()


def log_in_and_play(daemon: DaemonProcess, app: str) -> dict:
    """A well-behaved application: handshake, attach, one round; its reply."""
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s, s.makefile("rwb") as f:
        client_handshake(f, daemon.token_file.read_text().strip(), app, new_nonce())
        assert exchange(f, {"v": 2, "kind": "attach", "app": app, "policy": "spark-fifo", "params": {}})["attached"]
        return exchange(f, round_msg(app))


def flood(port: int, opened: list[socket.socket]) -> None:
    """Connects and sends FLOOD_BYTES without a newline; keeps the socket (the daemon may reset it)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    opened.append(s)
    try:
        s.sendall(b"x" * FLOOD_BYTES)
    except OSError:
        pass  # dropped once over the login line limit


def seconds_until_closed(s: socket.socket, drip: bool = False) -> float:
    """How long until the daemon closes ``s``; with ``drip``, one byte of a hello every 0.2 s meanwhile."""
    start = time.monotonic()
    s.settimeout(0.2)
    while time.monotonic() - start < 30:
        try:
            if drip:
                s.send(b"{")
            if s.recv(100) == b"":
                break
        except TimeoutError:
            continue
        except OSError:
            break
    return time.monotonic() - start


def test_clients_that_never_log_in_cost_little_and_are_dropped_while_an_application_is_served(
        daemon: DaemonProcess) -> None:
    assert Limits().login_timeout_s <= MAX_IDLE_S
    assert "assign" in log_in_and_play(daemon, "warm-up")  # the code of a served round is loaded
    before = status(daemon.proc.pid)
    opened: list[socket.socket] = []
    try:
        idle = [socket.create_connection(("127.0.0.1", daemon.port), timeout=10) for _ in range(IDLE)]
        opened += idle
        watched: dict[str, float] = {}
        watchers = [threading.Thread(target=lambda: watched.update(idle=seconds_until_closed(idle[0]))),
                    threading.Thread(target=lambda: watched.update(drip=seconds_until_closed(idle[1], drip=True)))]
        flooders = [threading.Thread(target=flood, args=(daemon.port, opened)) for _ in range(FLOODERS)]
        for t in watchers + flooders:
            t.start()
        reply = log_in_and_play(daemon, "app-1")
        for t in flooders:
            t.join(timeout=30)
        during = status(daemon.proc.pid)
        for t in watchers:
            t.join(timeout=30)
    finally:
        for s in opened:
            s.close()
    assert reply["assign"] == [{"stage": 0, "attempt": 0, "executor": "1", "slots": 2}]
    growth_kb, threads = during["VmHWM"] - before["VmRSS"], during["Threads"] - before["Threads"]
    print(f"serve under the flood: +{growth_kb / 1024:.1f} MB peak RSS, +{threads} threads; idle client dropped "
          f"after {watched['idle']:.1f} s, a dripping one after {watched['drip']:.1f} s")
    assert growth_kb <= MAX_GROWTH_KB and threads <= MAX_NEW_THREADS
    assert watched["idle"] < MAX_IDLE_S and watched["drip"] < MAX_IDLE_S
    assert "app-1 connected" in daemon.log.read_text()
