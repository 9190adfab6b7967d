"""Start and stop one daemon process, tracked by a pid file the testbed writes itself.

A pid file records the pid and the process start time, so a later `down` never signals a
process that merely reused the pid.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from bridge.common import atomic
from bridge.common.paths import hadoop_lib_dir
from bridge.testbed.jvm import ADD_OPENS, java_executable


@dataclass(frozen=True)
class DaemonSpec:
    """A daemon's JVM: its name, main class, configuration directory and heap; Hadoop's classpath
    unless ``classpath`` says otherwise (Spark's History Server), with ``properties`` as Java system
    properties and ``env`` added to ours."""

    name: str
    main_class: str
    conf_dir: Path
    heap_mb: int
    args: tuple[str, ...] = ()
    classpath: str = ""
    properties: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def command(self, log_dir: Path) -> list[str]:
        classpath = self.classpath or f"{self.conf_dir}:{hadoop_lib_dir()}/*"
        return [
            str(java_executable()), f"-Xmx{self.heap_mb}m", f"-Xms{min(64, self.heap_mb)}m",
            "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *ADD_OPENS,
            f"-Dproc_{self.name}", f"-Dhadoop.log.dir={log_dir}", f"-Dyarn.log.dir={log_dir}",
            "-Dhadoop.security.logger=WARN,console", *(f"-D{key}={value}" for key, value in self.properties),
            "-cp", classpath, self.main_class, *self.args,
        ]


class ProcessTable:
    """The daemons this testbed started: pid files in one directory, logs in another."""

    def __init__(self, pid_dir: Path, log_dir: Path) -> None:
        self.pid_dir, self.log_dir = pid_dir, log_dir

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def start(self, spec: DaemonSpec) -> int:
        """Launch the daemon in its own session, output appended to its log; returns its pid."""
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path(spec.name), "ab") as log:
            proc = subprocess.Popen(spec.command(self.log_dir), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env={**os.environ, **dict(spec.env)})
        atomic.write_text(self.pid_dir / f"{spec.name}.pid", f"{proc.pid} {_start_time(proc.pid)}\n")
        return proc.pid

    def pid(self, name: str) -> int | None:
        """The live pid we recorded for `name`, or None if it is not running (or not ours)."""
        path = self.pid_dir / f"{name}.pid"
        try:
            pid_text, started = path.read_text().split()
        except (FileNotFoundError, ValueError):
            return None
        pid = int(pid_text)
        return pid if _start_time(pid) == started else None

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.pid_dir.glob("*.pid"))

    def stop(self, *names: str, grace_s: float = 20.0) -> list[str]:
        """SIGTERM every one of ``names`` at once, SIGKILL those still alive after ``grace_s``:
        daemons shut down side by side, not one grace period after another. Returns the names of
        the processes of ours that were stopped."""
        pids = {}
        for name in names:
            pid = self.pid(name)
            (self.pid_dir / f"{name}.pid").unlink(missing_ok=True)
            if pid is not None:
                pids[name] = pid
                _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids.values()):
            time.sleep(0.1)
        for pid in pids.values():
            if _alive(pid):
                _signal(pid, signal.SIGKILL)
            _reap(pid)
        return list(pids)

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            with open(self.log_path(name), errors="replace") as log:
                return "".join(deque(log, maxlen=lines))
        except FileNotFoundError:
            return f"(no log at {self.log_path(name)})\n"


def _start_time(pid: int) -> str:
    """Field 22 of /proc/<pid>/stat: the start time in clock ticks since boot."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[1].split()
    return "" if fields[0] == "Z" else fields[19]


def _alive(pid: int) -> bool:
    return _start_time(pid) != ""


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    """Collect the exit status if the daemon is our own child (same `up` process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
