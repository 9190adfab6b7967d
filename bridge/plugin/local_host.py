"""The policy host the Spark plugin starts beside one application's driver (endpoint ``local``).

``python -m bridge.plugin.local_host``, started by the plugin (``LocalPolicyHost.java``) with
the token in ``$SCHEDBRIDGE_HOST_TOKEN``: it listens on 127.0.0.1 on a free port, authenticates
every client with the token both ways (``spark_auth``), prints ``READY tcp://127.0.0.1:PORT`` as its
first line, and serves the policy the application attaches with (``PolicyHost`` without a planner). It exits when its
standard input closes: the driver closes it when the application stops, and the operating system
does when the driver dies, so no host outlives its application. With ``$SCHEDBRIDGE_AGENTS`` (or the
Spark conf ``spark.schedbridge.agents``, which the plugin hands over as that variable), a preempting
policy runs on the cluster's node agents (``bridge.plugin.preempting_host``), restored at exit.
It runs in a session of its own (``own_session``), for its CPU share under autogroup scheduling.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from contextlib import ExitStack
from pathlib import Path

from bridge.plugin.daemon import PolicyDaemon, configure_logging
from bridge.plugin.host import PolicyHost, placements
from bridge.plugin.preempting_host import host_planners

TOKEN_ENV = "SCHEDBRIDGE_HOST_TOKEN"
LOG_LEVEL_ENV = "SCHEDBRIDGE_HOST_LOG_LEVEL"
READY = "READY"
log = logging.getLogger(__name__)


def main() -> int:
    token = os.environ.pop(TOKEN_ENV, "")
    if not token:
        print(f"error: {TOKEN_ENV} is not set (this host is started by the Spark plugin)", flush=True)
        return 2
    level = os.environ.get(LOG_LEVEL_ENV, "WARNING").upper()
    configure_logging(level)
    own_session()
    if level == "INFO":  # spark.schedbridge.host.log: one application's log, every placement in it
        placements.setLevel(logging.DEBUG)
    signal.signal(signal.SIGTERM, _exit)  # the plugin's stop after 5 s: still restore what a policy changed
    with ExitStack() as stack:  # a preempting policy's agents, vcores and throttles: restored at exit
        try:
            make = host_planners(stack)
            daemon = PolicyDaemon(("127.0.0.1", 0), PolicyHost(make=make), token)
        except (ValueError, OSError) as e:
            print(f"error: {e}", flush=True)
            return 2
        with daemon:
            threading.Thread(target=daemon.serve_forever, name="policy-host", daemon=True).start()
            print(f"{READY} tcp://127.0.0.1:{daemon.server_address[1]}", flush=True)
            sys.stdin.buffer.read()  # returns at EOF: the driver stopped or died
            daemon.shutdown()
    return 0


def own_session(autogroups: Path = Path("/proc")) -> None:
    """Leave the driver's session for one of its own, keeping its autogroup nice where the kernel
    lets it. With autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``), Linux shares
    the CPU between sessions first, so in the driver's session every answer waited behind the
    driver's own threads (in local mode, its task threads too): bench spark's round trip at
    local[64], p99 10.9-12.2 ms in it, 7.1-7.9 ms in its own (docs/benchmarks-spark.md). The host
    still ends with the driver: its standard input closes then, whatever its session."""
    try:
        nice = (autogroups / str(os.getppid()) / "autogroup").read_text().split()[-1]
    except (OSError, IndexError):
        nice = None     # no autogroups here: a session of its own changes nothing, and costs nothing
    try:
        os.setsid()
    except OSError as e:    # already a session leader (started by hand): it has its own
        log.debug("policy host: no session of its own: %s", e)
        return
    if nice is not None and nice != "0":
        try:
            (autogroups / "self" / "autogroup").write_text(f"{nice}\n")
        except OSError as e:    # a raised weight (negative nice) needs root
            log.warning("policy host: its session keeps nice 0, not the driver's %s: %s", nice, e)


def _exit(signum: int, frame: object) -> None:
    sys.exit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
