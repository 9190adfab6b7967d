"""Run a container's processes in the foreground, as one unit.

A compose service is healthy only while all of its processes run: when the first one exits,
the rest are stopped and the service exits with the first one's status, so Docker reports
(and restarts) the failure. SIGTERM/SIGINT from `docker stop` are passed on to every process.
A process may wait for a URL of an earlier one to answer before it starts (the node agent
for its NodeManager), so it never starts against a daemon that is not up yet. A process marked
`restart` (the node agent) is started again when it exits, without taking the others down: a
SIGKILLed agent's successor lifts the throttles it left, while the NodeManager and its containers
keep running. A crash loop (more than MAX_RESTARTS in RESTART_WINDOW_S) ends the unit instead.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import NamedTuple

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
RESTART_PAUSE_S = 1.0
MAX_RESTARTS = 5
RESTART_WINDOW_S = 60.0


class Command(NamedTuple):
    """One process of a container; `after_url`: start it only once that URL answers HTTP 200;
    `restart`: start it again whenever it exits while the others run."""

    argv: list[str]
    after_url: str | None = None
    restart: bool = False


def supervise(commands: Sequence[Command], grace_s: float = 30.0, ready_timeout_s: float = 300.0) -> int:
    """Start every command (each after its URL answers), wait for the first to exit that is not
    restarted, stop the others; return its exit code. A URL that does not answer within
    `ready_timeout_s` stops the first process, as a failure would."""
    assert commands and commands[0].after_url is None, "the first command waits for nothing"
    procs: list[subprocess.Popen[bytes]] = []
    stopping: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        stopping.append(signum)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    for signum in STOP_SIGNALS:  # before starting anything: no signal may find a child unforwarded
        signal.signal(signum, forward)
    for command in commands:
        if command.after_url and not _await_url(command.after_url, procs, stopping, ready_timeout_s):
            break
        procs.append(subprocess.Popen(command.argv, stdin=subprocess.DEVNULL))
    restarts: list[float] = []
    while True:
        first = _wait_any(procs)
        index = procs.index(first)
        if stopping or not commands[index].restart or not _may_restart(commands[index], first, restarts):
            break
        time.sleep(RESTART_PAUSE_S)
        if stopping:
            break
        procs[index] = subprocess.Popen(commands[index].argv, stdin=subprocess.DEVNULL)
        if stopping:  # the signal came while it started: forward() missed it
            procs[index].send_signal(stopping[0])
    for proc in procs:
        if proc is not first:
            _stop(proc, grace_s)
    return _exit_code(first.returncode)


def _await_url(url: str, procs: list[subprocess.Popen[bytes]], stopping: list[int], timeout_s: float) -> bool:
    """Poll `url` until it answers; False if a started process exits, a stop signal comes, or time runs out."""
    deadline = time.monotonic() + timeout_s
    while not stopping and all(proc.poll() is None for proc in procs):
        if _answers(url):
            return True
        if time.monotonic() > deadline:
            print(f"schedbridge: {url} did not answer within {timeout_s:.0f} s; stopping", file=sys.stderr)
            procs[0].terminate()
            return False
        time.sleep(1.0)
    return False


def _may_restart(command: Command, exited: subprocess.Popen[bytes], restarts: list[float]) -> bool:
    """Record one restart of `command` and say so; False (a crash loop) past MAX_RESTARTS in the window."""
    now = time.monotonic()
    restarts[:] = [t for t in restarts if now - t < RESTART_WINDOW_S] + [now]
    name = " ".join(command.argv[:2])
    if len(restarts) > MAX_RESTARTS:
        print(f"schedbridge: {name} exited {MAX_RESTARTS + 1} times within {RESTART_WINDOW_S:.0f} s; "
              "stopping the container", file=sys.stderr)
        return False
    print(f"schedbridge: {name} exited with {_exit_code(exited.returncode)}; restarting it in "
          f"{RESTART_PAUSE_S:.0f} s (restart {len(restarts)} within {RESTART_WINDOW_S:.0f} s)", file=sys.stderr)
    return True


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _wait_any(procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """The first of `procs` to exit, reaped through its Popen so that its returncode is set."""
    for proc in procs:
        if proc.poll() is not None:  # exited while a later command waited for its URL
            return proc
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
