"""The agent's HTTP/JSON API (stdlib ThreadingHTTPServer), authenticated with a shared bearer token.

    GET  /v1/node                            node statistics
    GET  /v1/containers                      every running/managed container with its limits and CPU usage
    GET  /v1/containers/{id}                 one container
    POST /v1/containers/{id}/suspend         {"freeze": false}   shrink to the minimum share (or freeze)
    POST /v1/containers/{id}/resume          {}                  back to full size
    POST /v1/containers/{id}/resize          {"cpus": 0.5}       cap at a CPU share

Errors are JSON `{"error": <code>, "message": <text>}` with the status of the `AgentError` raised.
"""
from __future__ import annotations

import hmac
import json
import logging
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bridge.agent.errors import AgentError, BadRequest, NoSuchEndpoint, Unauthorized
from bridge.agent.service import NodeAgent

log = logging.getLogger(__name__)
MAX_BODY = 64 * 1024
MIN_TOKEN_LEN = 16
CONTAINER_PATH = re.compile(r"/v1/containers/([^/]+)(?:/(suspend|resume|resize))?")
WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]", "*"}


class AgentServer(ThreadingHTTPServer):
    """Serves one NodeAgent; refuses wildcard listen addresses and short tokens."""

    daemon_threads = True

    def __init__(self, host: str, port: int, agent: NodeAgent, token: str) -> None:
        if host in WILDCARD_HOSTS:
            raise BadRequest(f"refusing to listen on wildcard address {host!r}: use 127.0.0.1 or the "
                             "node's cluster address")
        if len(token) < MIN_TOKEN_LEN:
            raise BadRequest(f"the shared token must have at least {MIN_TOKEN_LEN} characters")
        self.agent = agent
        self.token = token.encode()
        super().__init__((host, port), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: AgentServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        try:
            body = self._body()
            self._authenticate()
            status, payload = 200, self._route(method, body)
        except AgentError as exc:
            status, payload = exc.status, {"error": exc.code, "message": str(exc)}
        except Exception:  # noqa: BLE001 - the agent must answer, not drop the connection
            log.exception("%s %s failed", method, self.path)
            status, payload = 500, {"error": AgentError.code, "message": "internal agent error; see agent log"}
        self._send(status, payload)

    def _body(self) -> dict[str, Any]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError as exc:
            raise BadRequest("invalid Content-Length") from exc
        if not 0 <= length <= MAX_BODY:
            raise BadRequest(f"request body must be at most {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise BadRequest(f"request body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        return body

    def _authenticate(self) -> None:
        scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
        if scheme != "Bearer" or not hmac.compare_digest(given.strip().encode(), self.server.token):
            raise Unauthorized("missing or wrong bearer token")

    def _route(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        agent = self.server.agent
        path = self.path.split("?", 1)[0]
        if method == "GET" and path == "/v1/node":
            return agent.node()
        if method == "GET" and path == "/v1/containers":
            return {"containers": agent.containers()}
        match = CONTAINER_PATH.fullmatch(path)
        if match is None:
            raise NoSuchEndpoint(f"no endpoint {method} {path}")
        container_id, action = match.groups()
        handlers: dict[tuple[str, str | None], Callable[[], dict[str, Any]]] = {
            ("GET", None): lambda: agent.container(container_id),
            ("POST", "suspend"): lambda: agent.suspend(container_id, freeze=_flag(body, "freeze")),
            ("POST", "resume"): lambda: agent.resume(container_id),
            ("POST", "resize"): lambda: agent.resize(container_id, body.get("cpus")),
        }
        handler = handlers.get((method, action))
        if handler is None:
            raise NoSuchEndpoint(f"no endpoint {method} {path}")
        return handler()

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        send_json(self, status, payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    """Reply with a JSON body and an explicit length (keep-alive needs it)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _flag(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise BadRequest(f"{key!r} must be true or false, got {value!r}")
    return value
