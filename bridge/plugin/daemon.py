"""``schedbridge serve``: one policy host shared by several Spark applications, over TCP or TLS.

Transport: one JSON object per line (the messages of ``bridge.protocol.messages``), at most
``Limits.message_bytes`` each. Every connection authenticates both ways with the daemon's token
(``bridge.protocol.auth``: HMAC proofs over nonces, the token never sent), loopback included;
``serve`` creates an owner-only token file when given none. Until a client has logged in it is
held to the small bounds of ``bridge.plugin.login`` (no thread, a few KiB, a few seconds); once
in, it gets a thread and each message must arrive whole within ``Limits.idle_timeout_s``. Each
application's state belongs to its connection's application key (``PolicyHost``). An application
asking for another policy or other parameters than the daemon serves is refused at its attach.
An application's state is dropped when it detaches (its SparkContext stops), when no connection
with its key has been open for ``--app-timeout`` seconds, or when no request named it for
``Limits.idle_timeout_s`` (a silent connection's bound) plus ``--app-timeout``. A token holder's
cost is capped too: applications per key and per connection, snapshot size, and the bytes of
unfinished messages buffered across connections (``Limits``; a refusal names the option raising it).
The daemon listens on 127.0.0.1 unless told otherwise; another address needs TLS
(``--tls-cert``/``--tls-key``) or ``--insecure``.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import signal
import socket
import ssl
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

import click

from bridge.common.options import MAX_SECONDS, FiniteFloat, param_option
from bridge.common.tls import check_listen, server_options, server_tls
from bridge.drivers.node_engine import NodePlanner, preempting_policies
from bridge.nodes.cluster_agents import agents_option
from bridge.plugin.host import Client, PolicyHost
from bridge.plugin.lines import Buffers, LineSocket, LineTooLong
from bridge.plugin.login import Limits, LoginGate, Throttled
from bridge.plugin.metrics import start_exporter
from bridge.plugin.peer_text import peer_logger
from bridge.plugin.preempting_host import host_planners
from bridge.protocol.auth import DEFAULT_TOKEN_FILE, ensure_token_file
from bridge.protocol.messages import encode_error
from bridge.target.config import hadoop_conf_dir_option

log = peer_logger(__name__)

DEFAULT_PORT = 7787
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
APP_TIMEOUT_S = 60.0
DEFAULT_LIMITS = Limits()


class Reaper:
    """Forgets the applications of an owner (application key) once none of its connections has been
    open for ``timeout_s``, and any application no request named for ``Limits.idle_timeout_s`` plus
    ``timeout_s``; run from the daemon's loop, no thread or timer per connection. At most
    ``Limits.closed_keys`` owners wait so: past that, the one whose connections closed first is
    forgotten at once (a token holder cycling keys would otherwise keep every key's applications)."""

    def __init__(self, host: PolicyHost, timeout_s: float, limits: Limits = DEFAULT_LIMITS) -> None:
        self.host, self.timeout_s = host, timeout_s
        self.idle_s, self.closed_keys = limits.idle_timeout_s + timeout_s, limits.closed_keys
        self._crowded = Throttled(limits.log_every_s)
        self._open: dict[str, int] = {}
        self._since: dict[str, float] = {}  # owner without connections -> since when
        self._lock = threading.Lock()

    def opened(self, owner: str) -> None:
        with self._lock:
            self._open[owner] = self._open.get(owner, 0) + 1
            self._since.pop(owner, None)

    def closed(self, owner: str) -> None:
        with self._lock:
            self._open[owner] -= 1
            if not self._open[owner]:
                del self._open[owner]
                self._since[owner] = time.monotonic()
            first = next(iter(self._since)) if len(self._since) > self.closed_keys else None
            if first is not None:
                del self._since[first]
        if first is not None and (apps := self.host.forget_owner(first)):
            self.host.metrics.forgotten.labels("crowded").inc(len(apps))
            self._crowded.warning("schedbridge serve: %s forgotten before --app-timeout: over %d application "
                                  "keys without connections", ", ".join(apps), self.closed_keys)

    def reap(self) -> None:
        cutoff = time.monotonic() - self.timeout_s
        with self._lock:
            gone = [owner for owner, since in self._since.items() if since <= cutoff]
            for owner in gone:
                del self._since[owner]
        forgotten = self.host.metrics.forgotten
        for owner in gone:
            for app in self.host.forget_owner(owner):
                forgotten.labels("no_connection").inc()
                log.info("schedbridge serve: %s forgotten (no connection for %.0f s)", app, self.timeout_s)
        for app in self.host.forget_idle(self.idle_s):
            forgotten.labels("idle").inc()
            log.info("schedbridge serve: %s forgotten (not named for %.0f s)", app, self.idle_s)


class PolicyDaemon:
    """One shared :class:`PolicyHost` behind a :class:`LoginGate`: every client needs the token, and
    each logged-in connection gets a thread (``serve_forever``, ``shutdown``, ``server_close`` as
    in ``socketserver``)."""

    def __init__(self, address: tuple[str, int], host: PolicyHost, token: str,
                 app_timeout_s: float = APP_TIMEOUT_S, tls: ssl.SSLContext | None = None,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        if len(token) < 16:
            raise ValueError("a policy daemon needs a token of at least 16 characters")
        self.host, self.limits = host, limits
        self.reaper = Reaper(host, app_timeout_s, limits)
        self._buffers = Buffers(limits.buffered_bytes, limits.own_buffer_bytes,
                                "schedbridge serve --max-buffered-bytes")
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        listener = socket.create_server(address, family=family, backlog=limits.backlog)
        self.server_address: tuple[str, int] = listener.getsockname()[:2]
        self._gate = LoginGate(listener, token, tls, limits, self._admit)
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._gate.run(poll_interval, self.reaper.reap)

    def shutdown(self) -> None:
        """Stops ``serve_forever`` and waits for it."""
        self._gate.stop()

    def server_close(self) -> None:
        """Closes the listener and every connection."""
        self._gate.close()
        with self._lock:
            for sock in self._connections:
                sock.close()

    def __enter__(self) -> PolicyDaemon:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.server_close()

    def _admit(self, sock: socket.socket, peer: str, owner: str, app: str, buffered: bytes) -> None:
        log.info("schedbridge serve: %s connected from %s", app, peer)
        with self._lock:
            self._connections.add(sock)
        self.host.metrics.connections.inc()
        self.reaper.opened(owner)
        threading.Thread(target=self._serve, args=(LineSocket(sock, buffered, self._buffers), peer, owner),
                         name=f"serve-{peer}", daemon=True).start()

    def _serve(self, conn: LineSocket, peer: str, owner: str) -> None:
        """Request/reply lines until the client closes, stays silent too long or oversteps."""
        limits = self.limits
        client = Client(owner, limits.apps_per_key, limits.apps_per_connection, limits.snapshot_bytes)
        try:
            while (raw := conn.read_line(limits.message_bytes, time.monotonic() + limits.idle_timeout_s)) is not None:
                conn.send_line(self.host.handle(raw.decode("utf-8", "replace"), client), limits.send_timeout_s)
        except LineTooLong as e:
            log.warning("schedbridge serve: %s sent %s; connection closed", peer, e)
            conn.send_line(encode_error(f"{e}; connection closed"), limits.send_timeout_s)
        except OSError as e:  # TimeoutError included
            log.info("schedbridge serve: connection from %s closed: %s", peer, e or type(e).__name__)
        finally:
            with self._lock:
                self._connections.discard(conn.sock)
            self.host.metrics.connections.dec()
            conn.sock.close()
            conn.release()
            self.reaper.closed(owner)
            self._gate.release(peer)


def configure_logging(level: str) -> None:
    """Timestamped lines on stderr at ``level`` (one of LOG_LEVELS); every placement only at DEBUG."""
    logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger().setLevel(level)


def _read_token(token_file: Path | None) -> tuple[str, str]:
    """The token and where it came from: --token-file, $SCHEDBRIDGE_TOKEN, or the default file
    (created, owner-only, if missing)."""
    if token_file is not None:
        return ensure_token_file(token_file), str(token_file)
    if os.environ.get("SCHEDBRIDGE_TOKEN"):
        return os.environ["SCHEDBRIDGE_TOKEN"], "$SCHEDBRIDGE_TOKEN"
    return ensure_token_file(DEFAULT_TOKEN_FILE), str(DEFAULT_TOKEN_FILE)


@click.command("serve")
@click.option("--policy", required=True, help="Policy name (fifo, or any registered policy).")
@param_option()
@click.option("--host", "bind", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path),
              help=f"Owner-only file holding the token, created if missing (default: $SCHEDBRIDGE_TOKEN, "
                   f"else {DEFAULT_TOKEN_FILE}).")
@click.option("--app-timeout", default=APP_TIMEOUT_S, show_default=True, type=FiniteFloat(min=1.0, max=MAX_SECONDS),
              help="Seconds after an application's last connection closes before its state is dropped.")
@click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default="INFO",
              show_default=True, help="INFO: attaches, detaches, refusals and warnings; DEBUG adds a line "
                                      "per answered round (every placement).")
@click.option("--max-apps-per-key", default=DEFAULT_LIMITS.apps_per_key, show_default=True,
              type=click.IntRange(1), help="Applications one application key (a Spark driver) may have served.")
@click.option("--max-apps-per-connection", default=DEFAULT_LIMITS.apps_per_connection, show_default=True,
              type=click.IntRange(1), help="Applications one connection may name.")
@click.option("--max-snapshot-bytes", default=DEFAULT_LIMITS.snapshot_bytes, show_default=True,
              type=click.IntRange(1024, DEFAULT_LIMITS.message_bytes),
              help="Bytes of a round carrying an application's snapshot (its state, after a reconnect).")
@click.option("--max-buffered-bytes", default=DEFAULT_LIMITS.buffered_bytes, show_default=True,
              type=click.IntRange(0), help=f"Bytes of unfinished messages all connections may buffer at once, "
                                           f"beyond {DEFAULT_LIMITS.own_buffer_bytes} each.")
@click.option("--metrics-port", type=click.IntRange(0, 65535),
              help="Serve Prometheus metrics at http://METRICS_HOST:PORT/metrics (0: a free port). Off by "
                   "default: the page has no token.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="Address of the metrics page (with --metrics-port).")
@server_options
@agents_option
@hadoop_conf_dir_option
def serve(policy: str, params: dict[str, str], bind: str, port: int, token_file: Path | None,
          app_timeout: float, log_level: str, max_apps_per_key: int, max_apps_per_connection: int,
          max_snapshot_bytes: int, max_buffered_bytes: int, metrics_port: int | None, metrics_host: str,
          tls_cert: Path | None, tls_key: Path | None,
          insecure: bool, agents: Path | None, hadoop_conf_dir: Path | None) -> None:
    """Serve one policy to every Spark application using spark.schedbridge.endpoint=tcp://HOST:PORT
    (tls://HOST:PORT with --tls-cert and --tls-key; needed on an address other than loopback).

    A preempting policy (kairos, bigc, falcon, ...) with an agents file (--agents, $SCHEDBRIDGE_AGENTS)
    suspends and resumes the applications' executor containers through the cluster's node agents;
    the NodeManagers' vcores and every container are restored when the daemon stops."""
    configure_logging(log_level.upper())
    signal.signal(signal.SIGTERM, _stop)  # restore the cluster on a service manager's stop too
    with ExitStack() as stack:
        try:
            tls = server_tls(tls_cert, tls_key)
            check_listen("schedbridge serve", bind, tls, insecure)
            context = tls.context() if tls is not None else None
            planner = host_planners(stack, agents, hadoop_conf_dir)(policy, params)
            token, source = _read_token(token_file)
            limits = dataclasses.replace(DEFAULT_LIMITS, apps_per_key=max_apps_per_key,
                                         apps_per_connection=max_apps_per_connection,
                                         snapshot_bytes=max_snapshot_bytes, buffered_bytes=max_buffered_bytes)
            daemon = PolicyDaemon((bind, port), PolicyHost(planner), token, app_timeout, context, limits)
            if metrics_port is not None:
                exporter, _ = start_exporter(daemon.host.metrics, metrics_host, metrics_port)
                stack.callback(exporter.server_close)
                stack.callback(exporter.shutdown)
                click.echo(f"schedbridge serve: metrics at http://{metrics_host}:{exporter.server_port}/metrics",
                           err=True)
        except (ValueError, OSError) as e:
            raise click.ClickException(str(e)) from None
        how = (f"preempting on {len(planner.nodes)} NodeManager(s) through their agents, N = {planner.cores}"
               if isinstance(planner, NodePlanner) else "placement only" if policy in preempting_policies() else "")
        scheme = "tcp" if context is None else "tls"
        click.echo(f"schedbridge serve: policy {planner.name} on {scheme}://{bind}:{daemon.server_address[1]} "
                   f"(token from {source}){'; ' + how if how else ''}", err=True)
        with daemon:
            try:
                daemon.serve_forever()
            except KeyboardInterrupt:
                pass


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # serve_forever returns; the ExitStack restores what the policy changed
