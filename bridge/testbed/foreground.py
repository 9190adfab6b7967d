"""Run a container's processes in the foreground, as one unit.

A compose service is healthy only while all of its processes run: when the first one exits,
the rest are stopped and the service exits with the first one's status, so Docker reports
(and can restart) the failure. SIGTERM/SIGINT from `docker stop` are passed on to every process.
"""
from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def supervise(commands: Sequence[Sequence[str]], grace_s: float = 30.0) -> int:
    """Start every command, wait for the first to exit, stop the others; return its exit code."""
    procs: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: object) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    for signum in STOP_SIGNALS:  # before starting anything: no signal may find a child unforwarded
        signal.signal(signum, forward)
    procs.extend(subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL) for cmd in commands)
    first = _wait_any(procs)
    for proc in procs:
        if proc is not first:
            _stop(proc, grace_s)
    return _exit_code(first.returncode)


def _wait_any(procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """The first of `procs` to exit, reaped through its Popen so that its returncode is set."""
    by_pid = {proc.pid: proc for proc in procs}
    while True:
        exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)  # look, do not reap yet
        assert exited is not None, "waitid returns None only under WNOHANG"
        if exited.si_pid in by_pid:
            by_pid[exited.si_pid].wait()
            return by_pid[exited.si_pid]
        os.waitpid(exited.si_pid, 0)  # not ours to supervise: reap it and keep waiting


def _stop(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _exit_code(returncode: int) -> int:
    """A shell's convention: killed by signal N exits 128 + N."""
    return 128 - returncode if returncode < 0 else returncode
