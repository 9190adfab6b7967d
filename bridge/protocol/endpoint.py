"""A policy daemon's endpoint, ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` (``schedbridge serve
--tls-cert``), and a connection to it for Python clients; the plugin's ``TcpTransport.java``
reads the same forms."""
from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

from bridge.common.tls import client_context

SCHEMES = ("tcp", "tls")


def address(endpoint: str) -> tuple[str, str, int]:
    """The scheme, host and port of ``endpoint``; ValueError if it is not one of the two forms."""
    parts = urlsplit(endpoint)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if parts.scheme not in SCHEMES or host is None or port is None:
        raise ValueError(f"not tcp://host:port or tls://host:port: {endpoint!r}")
    return parts.scheme, host, port


def connect(endpoint: str, timeout_s: float, ca: Path | None = None) -> socket.socket:
    """A connection to ``endpoint``; for ``tls://``, its certificate and host name verified against
    ``ca`` (PEM; None: the system's trust store). OSError (``ssl.SSLError`` included) if it fails."""
    scheme, host, port = address(endpoint)
    sock = socket.create_connection((host, port), timeout=timeout_s)
    if scheme == "tcp":
        return sock
    try:
        return client_context(ca).wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise
