"""A trial rig for the node agent on a host without YARN (integration tests, `schedbridge bench agent`):
a fake NodeManager REST server, a DefaultContainerExecutor-shaped CPU-spinning container, the agent as
a subprocess, and CPU measurement from cgroup accounting.

Tests against a real YARN cluster reuse `AgentProcess` with the real NodeManager's URL and local dirs,
and `cpu_rate`/`assert_full_share`/`usage_file` on a real container's group.
"""
from __future__ import annotations

import errno
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

CGROUP_ROOT = Path("/sys/fs/cgroup")
TOKEN = "integration-token-0123456789abcdef"
SCHEDBRIDGE = Path(sys.executable).parent / "schedbridge"
SPIN = ("import os, signal\n"
        "signal.signal(signal.SIGUSR1, lambda *_: os.fork())  # a child forked on demand, spinning too\n"
        "while True:\n    pass\n")
IDLE = "import time\ntime.sleep(10**6)\n"


class FakeNodeManager:
    """`/ws/v1/node/containers[/{id}]` on 127.0.0.1, from a dict the caller edits (id -> state)."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def reply(self, path: str) -> tuple[int, dict[str, Any]]:
        """The NodeManager's answer to GET `path`: 404 with a RemoteException for unknown ids."""
        match = re.fullmatch(r"/ws/v1/node/containers(?:/([^/?]+))?", path.split("?")[0])
        if match is None or (match.group(1) and match.group(1) not in self.states):
            return 404, {"RemoteException": {"exception": "NotFoundException", "message": f"{path} not found"}}
        if match.group(1):
            return 200, {"container": self._entry(match.group(1))}
        return 200, {"containers": {"container": [self._entry(c) for c in sorted(self.states)]}}

    def _entry(self, container_id: str) -> dict[str, Any]:
        return {"id": container_id, "state": self.states[container_id], "user": "alice",
                "totalMemoryNeededMB": 1024, "totalVCoresNeeded": 1}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                send_json(self, *fake.reply(self.path))

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    """Reply with a JSON body and an explicit length (keep-alive needs it)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class FakeContainer:
    """`bash <local>/usercache/alice/appcache/<app>/<cid>/launch_container.sh` running a Python program
    (a CPU spinner by default), started like DefaultContainerExecutor does: own session, the
    container's environment, cwd = the container work dir."""

    def __init__(self, local_dir: Path, container_id: str, program: str = SPIN) -> None:
        app = "application_" + "_".join(container_id.split("_")[-5:-3])
        self.work_dir = local_dir / "usercache" / "alice" / "appcache" / app / container_id
        self.work_dir.mkdir(parents=True)
        (self.work_dir / "task.py").write_text(program)
        script = self.work_dir / "launch_container.sh"
        script.write_text('#!/bin/bash\n"$SB_PYTHON" task.py\n')
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CONTAINER_ID": container_id,
               "SB_PYTHON": sys.executable}
        self.proc = subprocess.Popen(["/bin/bash", str(script)], cwd=self.work_dir, env=env,
                                     start_new_session=True)

    def spinner_pid(self, timeout_s: float = 5.0) -> int:
        return wait_for(lambda: _children(self.proc.pid)[0] if _children(self.proc.pid) else None,
                        timeout_s, "the container's spinner to start")

    def kill(self) -> None:
        """SIGKILL the process group this object started (its session leader's pid is the group id)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)


class AgentProcess:
    """`schedbridge agent` as a subprocess with its own cgroup parent and state file."""

    def __init__(self, nm_url: str, state_file: Path, cgroup_parent: str, local_dirs: tuple[Path, ...] = (),
                 min_share: float = 0.1, reconcile_interval: float = 0.2, apps: tuple[str, ...] = (),
                 token: str = TOKEN) -> None:
        self.nm_url = nm_url
        self.args = [str(SCHEDBRIDGE), "agent", "--port", "0", "--state-file", str(state_file),
                     "--cgroup-parent", cgroup_parent, "--min-share", str(min_share),
                     "--reconcile-interval", str(reconcile_interval)]
        for local in local_dirs:
            self.args += ["--nm-local-dir", str(local)]
        for app in apps:
            self.args += ["--app", app]
        self.token = token
        self.log_path = state_file.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def restore_only(self, timeout_s: float = 60.0) -> int:
        """Run `schedbridge agent --restore-only` with this agent's state file and cgroup parent (no
        NodeManager, no token); its exit code."""
        with self.log_path.open("ab") as log:
            return subprocess.run(self.args + ["--restore-only"], stdout=log, stderr=log, timeout=timeout_s,
                                  env=dict(os.environ, SCHEDBRIDGE_AGENT_TOKEN="")).returncode

    def start(self, timeout_s: float = 30.0) -> str:
        env = dict(os.environ, SCHEDBRIDGE_AGENT_TOKEN=self.token)
        with self.log_path.open("ab") as log:  # a file, not a pipe: a full pipe would stall the agent
            self.proc = subprocess.Popen(self.args + ["--nm-url", self.nm_url], stdout=subprocess.PIPE, stderr=log,
                                         env=env)
        line = _read_line(self.proc, timeout_s)
        match = re.search(r"listening on (https?://\S+)", line)
        if match is None:
            self.stop()
            raise AssertionError(f"agent did not start: {line!r} {self.log()[-2000:]}")
        self.url = match.group(1)
        return self.url

    def restart(self, timeout_s: float = 30.0) -> str:
        """Start it again on the port it had, so that clients keep their URL; the new agent first
        lifts every throttle its predecessor left (its state file says which)."""
        port = urllib.parse.urlsplit(self.url).port
        assert port is not None, "started before: its URL names its port"
        self.args[self.args.index("--port") + 1] = str(port)
        return self.start(timeout_s)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def signal(self, signum: int) -> int:
        assert self.proc is not None
        self.proc.send_signal(signum)
        return self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _read_line(proc: subprocess.Popen[bytes], timeout_s: float) -> str:
    stdout = proc.stdout
    assert stdout is not None, "the process was started with stdout=PIPE"
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            return ""
    return stdout.readline().decode()


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], timeout_s: float, what: str, every_s: float = 0.05) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def usage_file(parent: str, container_id: str) -> Path:
    return CGROUP_ROOT / "cpuacct" / parent / container_id / "cpuacct.usage"


def cpu_rates(readers: list[Callable[[], int]], window_s: float = 1.0) -> list[float]:
    """Cores used over one common window by each reader's CPU-time counter (ns)."""
    starts, t0 = [read() for read in readers], time.monotonic()
    time.sleep(window_s)
    ends, elapsed = [read() for read in readers], time.monotonic() - t0
    return [(end - start) / 1e9 / elapsed for start, end in zip(starts, ends)]


def cpu_rate(read_ns: Callable[[], int], window_s: float = 1.0) -> float:
    """Cores used over a window, from two cgroup CPU-time readings."""
    return cpu_rates([read_ns], window_s)[0]


FULL_RATIO = 0.5  # "full share": at least half of what an identical uncapped control spinner gets


def share_of_control(read_ns: Callable[[], int], control_pid: int) -> float:
    """A container's CPU over the control spinner's, in one common ~1 s window."""
    mine, control = cpu_rates([read_ns, lambda: proc_cpu_ns([control_pid])])
    return mine / max(control, 1e-3)


def assert_full_share(read_ns: Callable[[], int], control_pid: int, windows: int = 5) -> None:
    """A container runs at full share: in one of a few ~1 s windows it gets at least FULL_RATIO of the
    control's CPU. Judged against a control because an absolute rate does not hold on a busy shared
    host, and over several windows because one window alone can lose to a burst of other work on a
    loaded 2-core host (a container still capped at a minimum share stays far below in every one)."""
    ratios = []
    for _ in range(windows):
        ratios.append(round(share_of_control(read_ns, control_pid), 3))
        if ratios[-1] >= FULL_RATIO:
            return
    raise AssertionError(f"the container never reached {FULL_RATIO} of the control's CPU: {ratios}")


def proc_cpu_ns(pids: list[int]) -> int:
    """CPU time of live processes from /proc/<pid>/stat (for processes outside the agent's groups)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) * 1_000_000_000 // tick
    return total


def remove_groups(parent: str) -> None:
    """Test cleanup: hand back any process left in `parent`'s groups and remove them (v1 layout)."""
    for controller in ("cpu", "cpuacct", "freezer"):
        base = CGROUP_ROOT / controller / parent
        if not base.is_dir():
            continue
        for group in [p for p in base.iterdir() if p.is_dir()]:
            if controller == "freezer":
                (group / "freezer.state").write_text("THAWED")
            _empty_and_remove(group, CGROUP_ROOT / controller)
        base.rmdir()


def _empty_and_remove(group: Path, root: Path, timeout_s: float = 5.0) -> None:
    """Move ``group``'s processes to ``root`` and remove it; a process that was just killed may
    keep the group busy (EBUSY) until the kernel has finished its exit, so retry for a while."""
    deadline = time.monotonic() + timeout_s
    while True:
        for pid in (group / "cgroup.procs").read_text().split():
            try:
                (root / "cgroup.procs").write_text(pid)
            except OSError:
                pass
        try:
            group.rmdir()
            return
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
