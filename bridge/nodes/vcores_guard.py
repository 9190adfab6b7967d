"""A guard process that puts the NodeManagers' vcores back when the controller that raised them dies.

The ResourceManager keeps a raised capacity until it is changed again, and the node agents do not
talk to it; a controller killed by SIGKILL (``serve``, the policy host beside a driver) would leave
every NodeManager advertising N+Q vcores until an operator noticed. So ``RaisedVcores`` starts this
guard right after writing its record and before raising anything, in a session of its own (signals
to the controller's process group do not reach it). The guard reads a pipe whose write end only the
controller holds (not inherited by its children), so the end of file comes exactly when the
controller is gone, however it went, and a reused pid cannot fool it. On a clean exit the controller
restores the vcores itself, then writes ``release``: the guard exits and touches nothing. At an end of
file without it, the guard restores the capacities from the record, retrying while the RM does not
answer, removes the record and exits. It logs to ``<record>.guard.log``.
"""
from __future__ import annotations

import argparse
import logging
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bridge.nodes.node_capacity import NodeResources, restore
from yarnclient.resourcemanager import ResourceManagerClient

log = logging.getLogger(__name__)
READY, RELEASE = b"ready\n", b"release\n"
START_TIMEOUT_S = 60.0   # an interpreter importing the project on a loaded host
RETRY_S, GIVE_UP_S = 5.0, 600.0  # then the record stays for the next run (or `schedbridge testbed restore`)


@dataclass(frozen=True)
class GuardTarget:
    """How the guard reaches the ResourceManager: its URL(s) and the user its writes act as."""

    rm_urls: tuple[str, ...]
    user: str | None = None

    def start(self, record: Path) -> VcoresGuard:
        """A guard of ``record`` (``RaisedVcores``' ``guard``)."""
        return VcoresGuard.start(self, record)


class VcoresGuard:
    """The controller's handle on its guard: started ready, released on a clean exit."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    @classmethod
    def start(cls, target: GuardTarget, record: Path) -> VcoresGuard:
        """A running guard of ``record``; ValueError naming its log if it does not come up."""
        command = [sys.executable, "-m", __name__, "--record", str(record)]
        command += [arg for url in target.rm_urls for arg in ("--rm-url", url)]
        command += ["--user", target.user] if target.user else []
        root = str(Path(__file__).resolve().parents[2])  # this checkout, whatever the caller's cwd
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        logfile = guard_log(record)
        with logfile.open("ab") as err:
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
                                    start_new_session=True)
        guard = cls(proc)
        if not guard._ready():
            proc.kill()
            proc.wait()
            raise ValueError(f"the vcores guard did not start; see {logfile}")
        return guard

    def _ready(self) -> bool:
        """Whether the guard said it is ready within START_TIMEOUT_S (it writes the line at once)."""
        stdout = self.proc.stdout
        assert stdout is not None, "started with a pipe"
        with stdout:
            readable, _, _ = select.select([stdout], [], [], START_TIMEOUT_S)
            return bool(readable) and stdout.readline() == READY

    def release(self) -> None:
        """The controller has restored the vcores itself: the guard exits without touching them."""
        assert self.proc.stdin is not None, "started with a pipe"
        try:
            self.proc.stdin.write(RELEASE)
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it died; nothing left to tell
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def guard_log(record: Path) -> Path:
    return record.with_name(record.name + ".guard.log")


def watch(controller: BinaryIO, rm: NodeResources, record: Path, retry_s: float = RETRY_S,
          give_up_s: float = GIVE_UP_S) -> bool:
    """Wait for the controller's release or death; after a death, restore from ``record``.
    Whether nothing is left raised."""
    if controller.read() == RELEASE:
        log.info("the controller restored the vcores itself; exiting")
        return True
    log.warning("the controller died: restoring the NodeManagers' vcores from %s", record)
    deadline = time.monotonic() + give_up_s
    while failed := restore(rm, record):
        if time.monotonic() > deadline:
            log.error("giving up on %s after %.0f s; the record %s stays for the next run", failed, give_up_s, record)
            return False
        time.sleep(retry_s)
    log.info("every NodeManager advertises its own vcores again; %s removed", record)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}", description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--rm-url", action="append", required=True)
    parser.add_argument("--user")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s vcores-guard[{os.getpid()}] %(levelname)s %(message)s")
    rm = ResourceManagerClient(args.rm_url, user=args.user)
    sys.stdout.buffer.write(READY)
    sys.stdout.buffer.flush()
    try:
        return 0 if watch(sys.stdin.buffer, rm, args.record) else 1
    except ValueError as exc:  # a damaged record: never guess
        log.error("%s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
