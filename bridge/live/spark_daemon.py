"""``schedbridge serve``: one policy host shared by several Spark applications, over TCP.

Transport: one JSON object per line (the messages of ``spark_protocol``). A connection opens with
``{"v":2,"kind":"hello","app":...,"token":...}``; a daemon with a token requires it from every
client, loopback included (one without a token accepts loopback clients only). The daemon
listens on 127.0.0.1 unless told otherwise, and refuses a non-loopback address without a token.
Idle connections are closed after ``IDLE_TIMEOUT_S``. An application asking for another policy
or other parameters than the daemon serves is refused at its attach (``PolicyHost.attach``).
"""
from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import socketserver
from pathlib import Path

import click

from bridge.live.spark_host import PolicyHost
from bridge.live.spark_planners import make_planner, parse_params
from bridge.live.spark_protocol import (MAX_MESSAGE_BYTES, ProtocolError, decode, encode_error,
                                        encode_hello_reply)

log = logging.getLogger(__name__)

DEFAULT_PORT = 7787
IDLE_TIMEOUT_S = 600.0


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class _Connection(socketserver.StreamRequestHandler):
    """One plugin connection: a hello, then request/reply lines until it closes."""

    server: PolicyDaemon

    def handle(self) -> None:
        self.connection.settimeout(IDLE_TIMEOUT_S)
        peer = self.client_address[0]
        try:
            if not self._hello(peer):
                return
            while (line := self._read_line(peer)) is not None:
                self._send(self.server.host.handle(line))
        except OSError as e:
            log.info("schedbridge serve: connection from %s closed: %s", peer, e)

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

    def _hello(self, peer: str) -> bool:
        try:
            line = self._read_line(peer)
            if line is None:
                return False
            msg = decode(line)
        except ProtocolError as e:
            self._send(encode_error(str(e)))
            return False
        token = str(msg.get("token", ""))
        if (self.server.token or not is_loopback(peer)) and not hmac.compare_digest(token, self.server.token):
            log.warning("schedbridge serve: refused %s (bad token)", peer)
            self._send(encode_hello_reply(False, "bad token"))
            return False
        log.info("schedbridge serve: %s connected from %s", msg.get("app", "?"), peer)
        self._send(encode_hello_reply(True))
        return True

    def _send(self, text: str) -> None:
        self.wfile.write(text.encode() + b"\n")
        self.wfile.flush()


class PolicyDaemon(socketserver.ThreadingTCPServer):
    """A threaded TCP server around one shared :class:`PolicyHost`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], host: PolicyHost, token: str = "") -> None:
        if not is_loopback(address[0]) and not token:
            raise ValueError(f"refusing to listen on non-loopback {address[0]} without a token")
        self.host = host
        self.token = token
        super().__init__(address, _Connection)


def _read_token(token_file: Path | None) -> str:
    if token_file is not None:
        return token_file.read_text().strip()
    return os.environ.get("SCHEDBRIDGE_TOKEN", "")


@click.command("serve")
@click.option("--policy", required=True, help="Policy name (fifo, or any registered policy).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Policy parameter; repeatable.")
@click.option("--host", "bind", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File holding the shared token (default: $SCHEDBRIDGE_TOKEN); required off loopback.")
def serve(policy: str, params: tuple[str, ...], bind: str, port: int, token_file: Path | None) -> None:
    """Serve one policy to every Spark application using spark.schedbridge.endpoint=tcp://HOST:PORT."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        planner = make_planner(policy, parse_params(params))
        daemon = PolicyDaemon((bind, port), PolicyHost(planner), _read_token(token_file))
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"schedbridge serve: policy {planner.name} on tcp://{bind}:{daemon.server_address[1]}", err=True)
    with daemon:
        try:
            daemon.serve_forever()
        except KeyboardInterrupt:
            pass
