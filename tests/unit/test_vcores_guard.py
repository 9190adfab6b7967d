"""The vcores guard against a fake ResourceManager: a controller SIGKILLed while it holds the raise
gets the NodeManagers' vcores put back by its guard; a clean exit leaves the guard nothing to do."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bridge.nodes.node_capacity import RaisedVcores
from bridge.nodes.vcores_guard import GuardTarget, guard_log
from yarnclient.resourcemanager import ResourceManagerClient

ROOT = Path(__file__).resolve().parents[2]


class FakeRM(ThreadingHTTPServer):
    """GET /ws/v1/cluster/nodes and POST .../nodes/{id}/resource over ``capacity``."""

    def __init__(self) -> None:
        self.capacity = {"n1:45454": [4, 8192], "n2:45454": [2, 4096]}
        self.updates: list[tuple[str, int]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeRM

    def do_GET(self) -> None:
        nodes = [{"id": n, "state": "RUNNING", "nodeHostName": n.split(":")[0], "nodeHTTPAddress": f"{n}:8042",
                  "totalResource": {"vCores": v, "memory": m}} for n, (v, m) in self.server.capacity.items()]
        self._reply({"nodes": {"node": nodes}})

    def do_POST(self) -> None:
        node = re.fullmatch(r"/ws/v1/cluster/nodes/([^/]+)/resource", self.path.split("?")[0])
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert node is not None, self.path
        self.server.capacity[node[1]] = [body["resource"]["vCores"], body["resource"]["memory"]]
        self.server.updates.append((node[1], body["resource"]["vCores"]))
        self._reply({})

    def _reply(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def rm() -> Iterator[FakeRM]:
    server = FakeRM()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


CONTROLLER = """
import sys, time
from pathlib import Path
from bridge.nodes.node_capacity import RaisedVcores
from bridge.nodes.vcores_guard import GuardTarget
from yarnclient.resourcemanager import ResourceManagerClient
raised = RaisedVcores(ResourceManagerClient(sys.argv[1]), 2, Path(sys.argv[2]), GuardTarget((sys.argv[1],)).start)
raised.__enter__()
print(raised._guard.proc.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def _eventually(probe, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_sigkilled_controllers_raise_is_restored_by_its_guard(rm: FakeRM, tmp_path: Path) -> None:
    record = tmp_path / "vcores.json"
    controller = subprocess.Popen([sys.executable, "-c", CONTROLLER, rm.url, str(record)], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        guard_pid = int(controller.stdout.readline())  # type: ignore[union-attr]
        assert rm.capacity == {"n1:45454": [6, 8192], "n2:45454": [4, 4096]} and record.exists()
        os.killpg(controller.pid, signal.SIGKILL)  # the controller's whole group: the guard has its own session
        controller.wait(timeout=10)
        assert _eventually(lambda: not record.exists()), guard_log(record).read_text()
        assert rm.capacity == {"n1:45454": [4, 8192], "n2:45454": [2, 4096]}
        assert _eventually(lambda: _gone(guard_pid))
        assert "the controller died: restoring" in guard_log(record).read_text()
    finally:
        if controller.poll() is None:
            os.killpg(controller.pid, signal.SIGKILL)
            controller.wait(timeout=10)


def test_a_clean_exit_restores_itself_and_releases_the_guard(rm: FakeRM, tmp_path: Path) -> None:
    record = tmp_path / "vcores.json"
    with RaisedVcores(ResourceManagerClient(rm.url), 1, record, GuardTarget((rm.url,)).start) as raised:
        guard = raised._guard
        assert guard is not None and guard.proc.poll() is None
        assert rm.capacity["n2:45454"] == [3, 4096]
    assert guard.proc.returncode == 0  # released and waited for
    assert rm.capacity == {"n1:45454": [4, 8192], "n2:45454": [2, 4096]} and not record.exists()
    assert sorted(rm.updates) == [("n1:45454", 4), ("n1:45454", 5), ("n2:45454", 2), ("n2:45454", 3)]
    assert "restored the vcores itself" in guard_log(record).read_text()


def test_a_guard_that_cannot_start_stops_the_raise_before_it_happens(rm: FakeRM, tmp_path: Path) -> None:
    record = tmp_path / "vcores.json"
    with pytest.raises(ValueError, match="vcores guard did not start; see .*guard.log"):
        with RaisedVcores(ResourceManagerClient(rm.url), 1, record, GuardTarget(("not a url",), "-x").start):
            pass
    assert rm.updates == []
