"""The policy host the Spark plugin starts beside one application's driver (endpoint ``local``).

``python -m bridge.live.spark_local_host``, started by the plugin (``LocalPolicyHost.java``) with
the token in ``$SCHEDBRIDGE_HOST_TOKEN``: it listens on 127.0.0.1 on a free port, authenticates
every client with the token both ways (``spark_auth``), prints ``READY tcp://127.0.0.1:PORT`` as its
first line, and serves the policy the application attaches with (``PolicyHost`` without a planner). It exits when its
standard input closes: the driver closes it when the application stops, and the operating system
does when the driver dies, so no host outlives its application.
"""
from __future__ import annotations

import logging
import os
import sys
import threading

from bridge.live.spark_daemon import PolicyDaemon
from bridge.live.spark_host import PolicyHost

TOKEN_ENV = "SCHEDBRIDGE_HOST_TOKEN"
LOG_LEVEL_ENV = "SCHEDBRIDGE_HOST_LOG_LEVEL"
READY = "READY"


def main() -> int:
    token = os.environ.pop(TOKEN_ENV, "")
    if not token:
        print(f"error: {TOKEN_ENV} is not set (this host is started by the Spark plugin)", flush=True)
        return 2
    logging.basicConfig(level=os.environ.get(LOG_LEVEL_ENV, "WARNING").upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    try:
        daemon = PolicyDaemon(("127.0.0.1", 0), PolicyHost(), token)
    except (ValueError, OSError) as e:
        print(f"error: {e}", flush=True)
        return 2
    with daemon:
        threading.Thread(target=daemon.serve_forever, name="policy-host", daemon=True).start()
        print(f"{READY} tcp://127.0.0.1:{daemon.server_address[1]}", flush=True)
        sys.stdin.buffer.read()  # returns at EOF: the driver stopped or died
        daemon.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
