"""The agent's HTTP/JSON API, authenticated with a shared bearer token.

    GET  /v1/node                            node statistics
    GET  /v1/containers                      every running/managed container with its limits and CPU usage
    GET  /v1/containers/{id}                 one container
    POST /v1/containers/{id}/suspend         {"freeze": false, "lease_s": 30}   shrink to the minimum share
    POST /v1/containers/{id}/resume          {}                                 back to full size
    POST /v1/containers/{id}/resize          {"cpus": 0.5, "lease_s": 30}       cap at a CPU share
    POST /v1/leases/renew                    {"containers": [...], "lease_s": 30}   extend the leases held
    GET  /metrics                            Prometheus text (`metrics.py`), same token

Errors are JSON `{"error": <code>, "message": <text>}` with the status of the `AgentError` raised.

Connections are read by one asyncio loop, so a client that sends its request slowly (or never finishes
it) costs a buffer, not a thread, and is dropped after `timeout_s`. The token is checked as soon as
the headers are in, before any body byte is read. Only authenticated, complete requests reach the
`WORKERS` threads that run commands, so unauthenticated clients cannot delay an authenticated one,
and `admission.Admission` bounds the connections that have not authenticated yet per peer address,
so that they cannot crowd out one that will. With a TLS context the same API is served over TLS;
a connection is admitted before its handshake, which must end within `timeout_s`, so that silent
connections that never finish it are bounded and displaced like any other (counted after the
handshake, 900 of them held 200 MB of TLS buffers).

Why asyncio's streams and not a maintained HTTP server (aiohttp, uvicorn with starlette): the
limits above are the point of this module, and those servers leave out the ones that matter here.
Both run the TLS handshake inside asyncio's SSL protocol before they see the connection, so a
connection could not be admitted (and a silent one displaced) before its handshake; neither has a
deadline for a request's head and body (aiohttp's handler has a keep-alive timeout only, and
uvicorn's keep-alive timer restarts on every byte received, so a client that trickles its headers
holds the connection); uvicorn's `limit_concurrency` is one global cap, answered with 503, not a
cap per peer on the unauthenticated. Matching this module would mean subclassing their protocol
classes, internals that change between releases, and adding compiled dependencies (multidict,
yarl, ... or httptools) to a daemon that runs as root on every node. What is hand-written is small
and strict: HTTP/1.x with Content-Length bodies only (chunked refused), headers parsed by the
standard library's `http.client.parse_headers`, a bounded head, and answers of one JSON object.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import http.client
import io
import ipaddress
import json
import logging
import re
import socket
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from bridge.agent.admission import Admission
from bridge.agent.errors import AgentError, BadRequest, NoSuchEndpoint, PayloadTooLarge, Unauthorized
from bridge.agent.metrics import CONTENT_TYPE as METRICS_TYPE
from bridge.agent.service import NodeAgent

log = logging.getLogger(__name__)
MAX_BODY = 64 * 1024
MAX_HEAD = 16 * 1024  # request line and headers
MIN_TOKEN_LEN = 16
REQUEST_TIMEOUT_S = 5.0  # for the headers, the body and the reply, each
WORKERS = 4  # commands serialise on the agent's lock anyway; more threads would only queue
LINGER_S = 1.0  # after a closing reply, how long unread input is discarded (closing on it would reset)
CONTAINER_PATH = re.compile(r"/v1/containers/([^/]+)(?:/(suspend|resume|resize))?")
ENDPOINTS = {"/v1/node", "/v1/containers", "/v1/leases/renew", "/metrics"}


@dataclass(frozen=True)
class ListenAddress:
    """A resolved, checked address to bind: never a wildcard."""

    family: socket.AddressFamily
    sockaddr: tuple[Any, ...]

    @property
    def url_host(self) -> str:
        host = self.sockaddr[0]
        return f"[{host}]" if self.family == socket.AF_INET6 else host


def listen_address(host: str, port: int) -> ListenAddress:
    """Resolve `host`, refusing it if any address it stands for is a wildcard.

    Compared as addresses, not strings: `0`, `0x0`, `::`, `::ffff:0.0.0.0` and names resolving to
    them all bind every interface.
    """
    if not host.strip():
        raise BadRequest("refusing to listen on wildcard address '' (every interface): use 127.0.0.1 "
                         "or the node's cluster address")
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise BadRequest(f"cannot resolve listen address {host!r}: {exc}") from exc
    for *_, sockaddr in found:
        if _is_wildcard(str(sockaddr[0])):
            raise BadRequest(f"refusing to listen on wildcard address {host!r} (= {sockaddr[0]}, every "
                             "interface): use 127.0.0.1 or the node's cluster address")
    family, _, _, _, sockaddr = found[0]
    return ListenAddress(family, sockaddr)


def _is_wildcard(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_unspecified or (mapped is not None and mapped.is_unspecified)


def check_token(token: str) -> None:
    if len(token) < MIN_TOKEN_LEN:
        raise BadRequest(f"the shared token must have at least {MIN_TOKEN_LEN} characters, it has {len(token)}")


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    headers: http.client.HTTPMessage
    keep_alive: bool


class AgentServer:
    """Serves one NodeAgent on an address checked by `listen_address`; binds on construction."""

    def __init__(self, address: ListenAddress, agent: NodeAgent, token: str,
                 timeout_s: float = REQUEST_TIMEOUT_S, tls: ssl.SSLContext | None = None,
                 admission: Admission[asyncio.Task[Any]] | None = None) -> None:
        check_token(token)
        self.agent = agent
        self.token = token.encode()
        self.timeout_s = timeout_s
        self.tls = tls
        self.admission: Admission[asyncio.Task[Any]] = admission or Admission()
        self.socket = _bind(address)
        self.server_address = self.socket.getsockname()
        self.url = f"{'https' if tls else 'http'}://{address.url_host}:{self.server_address[1]}"
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._done = threading.Event()
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="agent-worker")
        self._connections: set[asyncio.Task[Any]] = set()

    def serve_forever(self) -> None:
        """Serve until `shutdown` (called from another thread)."""
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._done.set()

    def shutdown(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._done.wait(timeout=2 * self.timeout_s)

    def server_close(self) -> None:
        self.socket.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if not self._loop.is_running():
            self._loop.close()

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._connection, sock=self.socket, limit=MAX_HEAD)
        try:
            await self._stop.wait()
        finally:
            server.close()
            open_ = list(self._connections)
            for task in open_:
                task.cancel()
            await asyncio.gather(*open_, return_exceptions=True)
            log.info("stopped serving; closed %d open connection(s)", len(open_))  # one line, however many

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None, "a connection handler runs in a task"
        peer = str((writer.get_extra_info("peername") or ("?",))[0])
        displaced = self.admission.admit(task, peer)
        if displaced is not None:
            displaced.cancel()  # the oldest unauthenticated connection of this address (or of all)
            self.agent.metrics.inc("schedbridge_agent_connections_refused_total", reason="displaced")
        self._connections.add(task)
        try:
            if self.tls is not None:
                await writer.start_tls(self.tls, ssl_handshake_timeout=self.timeout_s)
            while await self._exchange(reader, writer, task):
                pass
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # slow, half-sent, vanished or a failed handshake: drop it, no thread was ever held
        except asyncio.CancelledError:
            pass  # displaced by a newer connection, or the agent stops: ended quietly, not logged
        finally:
            self._connections.discard(task)
            self.admission.leave(task)
            writer.close()

    @staticmethod
    async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Discard what the client still sends (e.g. the body of a refused request) for a moment: closing
        with unread input resets the connection, and the client could lose the reply."""
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            writer.write_eof()
            async with asyncio.timeout(LINGER_S):
                while await reader.read(MAX_BODY):
                    pass

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        connection: asyncio.Task[Any]) -> bool:
        """Answer one request; whether the connection can carry another."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeout_s)
        except asyncio.LimitOverrunError:
            await self._reply(writer, 431, {"error": BadRequest.code,
                                            "message": f"request headers exceed {MAX_HEAD} bytes"}, False)
            return False
        keep_alive = False  # until the whole body has been read
        request = None
        try:
            request = _parse_head(head)
            self._authenticate(request.headers)
            may_stay = self.admission.authenticated(connection)
            length = _content_length(request.headers)
            raw = await asyncio.wait_for(reader.readexactly(length), self.timeout_s) if length else b""
            keep_alive = request.keep_alive and may_stay
            body = _json_body(raw)
            payload = await asyncio.get_running_loop().run_in_executor(
                self._pool, self._route, request.method, request.path, body)
            status = 200
        except AgentError as exc:
            status, payload = exc.status, {"error": exc.code, "message": str(exc)}
            if isinstance(exc, Unauthorized):
                self.agent.metrics.inc("schedbridge_agent_connections_refused_total", reason="unauthorized")
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            raise  # the body came too slowly or not at all: drop the connection without a reply
        except Exception:  # the agent must answer, not drop the connection
            log.exception("request failed")
            status, payload = 500, {"error": AgentError.code, "message": "internal agent error; see agent log"}
        self.agent.metrics.inc("schedbridge_agent_requests_total", **_endpoint(request), status=str(status))
        await self._reply(writer, status, payload, keep_alive)
        if not keep_alive:
            await self._linger(reader, writer)
        return keep_alive

    async def _reply(self, writer: asyncio.StreamWriter, status: int, payload: dict[str, Any] | str,
                     keep_alive: bool) -> None:
        """A JSON object, or text (the metrics page)."""
        data, kind = (payload.encode(), METRICS_TYPE) if isinstance(payload, str) else \
            (json.dumps(payload).encode(), "application/json")
        head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {len(data)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
        writer.write(head.encode() + data)
        await asyncio.wait_for(writer.drain(), self.timeout_s)

    def _authenticate(self, headers: http.client.HTTPMessage) -> None:
        scheme, _, given = (headers.get("Authorization") or "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(given.strip().encode("latin-1"), self.token):
            raise Unauthorized("missing or wrong bearer token")

    def _route(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any] | str:
        agent = self.agent
        if method == "GET" and path == "/metrics":
            return agent.prometheus()
        if method == "GET" and path == "/v1/node":
            return agent.node()
        if method == "GET" and path == "/v1/containers":
            return {"containers": agent.containers()}
        if method == "POST" and path == "/v1/leases/renew":
            return agent.renew(body.get("containers"), body.get("lease_s"))
        match = CONTAINER_PATH.fullmatch(path)
        if match is None:
            raise NoSuchEndpoint(f"no endpoint {method} {path}")
        container_id, action = match.groups()
        handlers: dict[tuple[str, str | None], Callable[[], dict[str, Any]]] = {
            ("GET", None): lambda: agent.container(container_id),
            ("POST", "suspend"): lambda: agent.suspend(container_id, _flag(body, "freeze"), body.get("lease_s")),
            ("POST", "resume"): lambda: agent.resume(container_id),
            ("POST", "resize"): lambda: agent.resize(container_id, body.get("cpus"), body.get("lease_s")),
        }
        handler = handlers.get((method, action))
        if handler is None:
            raise NoSuchEndpoint(f"no endpoint {method} {path}")
        return handler()


def _endpoint(request: _Request | None) -> dict[str, str]:
    """A request's method and path as metric labels: container ids folded into ``{id}``, so a scan of
    made-up paths cannot grow the series without bound."""
    if request is None:
        return {"method": "", "endpoint": "malformed"}
    match = CONTAINER_PATH.fullmatch(request.path)
    path = "/v1/containers/{id}" + (f"/{match.group(2)}" if match.group(2) else "") if match else request.path
    known = request.method in ("GET", "POST") and (match is not None or path in ENDPOINTS)
    return {"method": request.method if known else "other", "endpoint": path if known else "other"}


def _bind(address: ListenAddress) -> socket.socket:
    sock = socket.socket(address.family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address.sockaddr)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _parse_head(head: bytes) -> _Request:
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(f"malformed request line {line[:80]!r}")
    try:
        headers = http.client.parse_headers(io.BytesIO(rest))
    except http.client.HTTPException as exc:
        raise BadRequest(f"malformed headers: {exc}") from exc
    connection = (headers.get("Connection") or "").lower()
    keep_alive = connection == "keep-alive" if parts[2] == "HTTP/1.0" else connection != "close"
    return _Request(parts[0], parts[1].split("?", 1)[0], headers, keep_alive)


def _content_length(headers: http.client.HTTPMessage) -> int:
    if headers.get("Transfer-Encoding"):
        raise BadRequest("chunked request bodies are not accepted: send Content-Length")
    values = set(headers.get_all("Content-Length") or ["0"])
    text = values.pop() if len(values) == 1 else ""
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise BadRequest("invalid Content-Length")
    length = int(text)
    if length > MAX_BODY:
        raise PayloadTooLarge(f"request body of {length} bytes refused: at most {MAX_BODY} bytes")
    return length


def _json_body(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    return body


def _flag(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise BadRequest(f"{key!r} must be true or false, got {value!r}")
    return value
