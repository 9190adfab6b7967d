"""``schedbridge serve``: one policy host shared by several Spark applications, over TCP.

Transport: one JSON object per line (the messages of ``bridge.protocol.messages``), at most
``MAX_MESSAGE_BYTES`` each. Every connection authenticates both ways with the daemon's token
(``spark_auth``: HMAC proofs over nonces, the token never sent), loopback included; ``serve``
creates an owner-only token file when given none. Each application is bound to the first
connection's application key: other connections cannot touch its state. An application asking
for another policy or other parameters than the daemon serves is refused at its attach
(``PolicyHost.attach``). An application's state is dropped when it detaches (its SparkContext
stops) or when no connection with its key has been open for ``--app-timeout`` seconds. The daemon
listens on 127.0.0.1 unless told otherwise; idle connections are closed after ``IDLE_TIMEOUT_S``.
"""
from __future__ import annotations

import hmac
import logging
import os
import signal
import socketserver
import threading
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import click

from bridge.common.options import MAX_SECONDS, FiniteFloat, param_option
from bridge.drivers.node_engine import NodePlanner, preempting_policies
from bridge.nodes.cluster_agents import agents_option
from bridge.plugin.host import PolicyHost
from bridge.plugin.preempting_host import host_planners
from bridge.protocol.auth import DEFAULT_TOKEN_FILE, ensure_token_file, key_digest, new_nonce, proof
from bridge.protocol.messages import (
    MAX_MESSAGE_BYTES,
    ProtocolError,
    decode,
    encode_challenge,
    encode_error,
    encode_hello_reply,
)
from bridge.testbed.target import hadoop_conf_dir_option

log = logging.getLogger(__name__)

DEFAULT_PORT = 7787
IDLE_TIMEOUT_S = 600.0
APP_TIMEOUT_S = 60.0


class _Connection(socketserver.StreamRequestHandler):
    """One plugin connection: a hello, then request/reply lines until it closes."""

    server: PolicyDaemon

    def handle(self) -> None:
        self.connection.settimeout(IDLE_TIMEOUT_S)
        peer = self.client_address[0]
        owner = None
        try:
            owner = self._hello(peer)
            if owner is None:
                return
            self.server.opened(owner)
            while (line := self._read_line(peer)) is not None:
                self._send(self.server.host.handle(line, owner))
        except OSError as e:
            log.info("schedbridge serve: connection from %s closed: %s", peer, e)
        finally:
            if owner is not None:
                self.server.closed(owner)

    def _read_line(self, peer: str) -> str | None:
        """The next message, or None at the end; one over the size limit closes the connection
        with an error (answering its pieces would put every later reply off by one)."""
        raw = self.rfile.readline(MAX_MESSAGE_BYTES + 1)
        if not raw:
            return None
        if len(raw) > MAX_MESSAGE_BYTES and not raw.endswith(b"\n"):
            log.warning("schedbridge serve: %s sent a message over %d bytes; connection closed", peer,
                        MAX_MESSAGE_BYTES)
            self._send(encode_error(f"message over {MAX_MESSAGE_BYTES} bytes; connection closed"))
            return None
        return raw.decode("utf-8", "replace")

    def _hello(self, peer: str) -> str | None:
        """The handshake of ``spark_auth``; the connection's owner (its application key's digest),
        or None if the client does not prove it knows the token."""
        try:
            hello = self._message(peer, "hello")
            mine, theirs = new_nonce(), str(hello.get("nonce", ""))
            if not theirs:
                raise ProtocolError("hello without a nonce (a plugin older than protocol v2?)")
            self._send(encode_challenge(mine, proof(self.server.token, "host", theirs, mine)))
            auth = self._message(peer, "auth")
        except ProtocolError as e:
            self._send(encode_error(str(e)))
            return None
        app_key = str(auth.get("app_key", ""))
        if not hmac.compare_digest(str(auth.get("proof", "")), proof(self.server.token, "plugin", mine, theirs)) \
                or len(app_key) < 16:
            log.warning("schedbridge serve: refused %s (bad token or application key)", peer)
            self._send(encode_hello_reply(False, "bad token"))
            return None
        log.info("schedbridge serve: %s connected from %s", hello.get("app", "?"), peer)
        self._send(encode_hello_reply(True))
        return key_digest(app_key)

    def _message(self, peer: str, kind: str) -> dict:
        line = self._read_line(peer)
        if line is None:
            raise ProtocolError(f"connection closed before the {kind}")
        msg = decode(line)
        if msg.get("kind") != kind:
            raise ProtocolError(f"expected a {kind}, got kind {msg.get('kind')!r}")
        return msg

    def _send(self, text: str) -> None:
        self.wfile.write(text.encode() + b"\n")
        self.wfile.flush()


class PolicyDaemon(socketserver.ThreadingTCPServer):
    """A threaded TCP server around one shared :class:`PolicyHost`; every client needs the token."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], host: PolicyHost, token: str,
                 app_timeout_s: float = APP_TIMEOUT_S) -> None:
        if len(token) < 16:
            raise ValueError("a policy daemon needs a token of at least 16 characters")
        self.host = host
        self.token = token
        self._app_timeout_s = app_timeout_s
        self._open: Counter[str] = Counter()
        self._lock = threading.Lock()
        super().__init__(address, _Connection)

    def opened(self, owner: str) -> None:
        with self._lock:
            self._open[owner] += 1

    def closed(self, owner: str) -> None:
        """The last connection of an owner gone: forget its applications unless it reconnects in time."""
        with self._lock:
            self._open[owner] -= 1
        timer = threading.Timer(self._app_timeout_s, self._expire, (owner,))
        timer.daemon = True
        timer.start()

    def _expire(self, owner: str) -> None:
        with self._lock:
            if self._open[owner] > 0:
                return
            del self._open[owner]
        for app in self.host.forget_owner(owner):
            log.info("schedbridge serve: %s forgotten (no connection for %.0f s)", app, self._app_timeout_s)


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
@agents_option
@hadoop_conf_dir_option
def serve(policy: str, params: dict[str, str], bind: str, port: int, token_file: Path | None,
          app_timeout: float, agents: Path | None, hadoop_conf_dir: Path | None) -> None:
    """Serve one policy to every Spark application using spark.schedbridge.endpoint=tcp://HOST:PORT.

    A preempting policy (kairos, bigc, falcon, ...) with an agents file (--agents, $SCHEDBRIDGE_AGENTS)
    suspends and resumes the applications' executor containers through the cluster's node agents;
    the NodeManagers' vcores and every container are restored when the daemon stops."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    signal.signal(signal.SIGTERM, _stop)  # restore the cluster on a service manager's stop too
    with ExitStack() as stack:
        try:
            planner = host_planners(stack, agents, hadoop_conf_dir)(policy, params)
            token, source = _read_token(token_file)
            daemon = PolicyDaemon((bind, port), PolicyHost(planner), token, app_timeout)
        except (ValueError, OSError) as e:
            raise click.ClickException(str(e)) from None
        how = (f"preempting on {len(planner.nodes)} NodeManager(s) through their agents, N = {planner.cores}"
               if isinstance(planner, NodePlanner) else "placement only" if policy in preempting_policies() else "")
        click.echo(f"schedbridge serve: policy {planner.name} on tcp://{bind}:{daemon.server_address[1]} "
                   f"(token from {source}){'; ' + how if how else ''}", err=True)
        with daemon:
            try:
                daemon.serve_forever()
            except KeyboardInterrupt:
                pass


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # serve_forever returns; the ExitStack restores what the policy changed
