"""TLS for the project's two network services, ``serve`` and the node agent: their server and client
contexts from PEM files, their command-line options, and the one rule both follow: a listen address
other than loopback needs TLS unless the operator says ``--insecure`` (tokens and commands would
otherwise cross the network in clear)."""
from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

MIN_VERSION = ssl.TLSVersion.TLSv1_2
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ServerTls:
    """A service's certificate chain and private key (PEM files)."""

    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        """A server context; a missing or unreadable file, or a key not matching the certificate,
        is a ``ValueError`` naming the files."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = MIN_VERSION
        try:
            ctx.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"cannot load the TLS certificate {self.cert} with key {self.key}: {e}") from None
        return ctx


def client_context(ca: Path | None) -> ssl.SSLContext:
    """A client context that verifies the server's certificate and host name, against ``ca`` (a PEM
    bundle, e.g. a self-signed service certificate) or the system's trust store."""
    try:
        ctx = ssl.create_default_context(cafile=str(ca) if ca is not None else None)
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"cannot load the TLS CA file {ca}: {e}") from None
    ctx.minimum_version = MIN_VERSION
    return ctx


def is_loopback(host: str) -> bool:
    """True if every address ``host`` resolves to is a loopback address (names resolved, so
    ``localhost`` counts and a name that also resolves elsewhere does not)."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(str(sa[0]).split("%", 1)[0]).is_loopback
                               for *_, sa in found)


def check_listen(service: str, host: str, tls: ServerTls | None, insecure: bool) -> None:
    """Refuses a non-loopback listen address without TLS unless ``insecure`` (a ``ValueError`` that
    says what to pass)."""
    if tls is None and not insecure and not is_loopback(host):
        raise ValueError(f"{service} refuses to listen on {host!r} without TLS: its token and commands would "
                         "cross the network in clear; give --tls-cert and --tls-key, or --insecure to accept that")


def server_tls(cert: Path | None, key: Path | None) -> ServerTls | None:
    """The pair given by the options, or None; one without the other is a ``ValueError``."""
    if (cert is None) != (key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    return ServerTls(cert, key) if cert is not None and key is not None else None


def server_options(f: F) -> F:
    """``--tls-cert``, ``--tls-key`` and ``--insecure`` for a service command."""
    pem = click.Path(exists=True, dir_okay=False, path_type=Path)
    f = click.option("--insecure", is_flag=True,
                     help="Allow a non-loopback listen address without TLS (token and traffic in clear).")(f)
    f = click.option("--tls-key", type=pem, help="PEM private key of --tls-cert.")(f)
    return click.option("--tls-cert", type=pem,
                        help="PEM certificate (chain) to serve TLS with; clients verify it.")(f)
