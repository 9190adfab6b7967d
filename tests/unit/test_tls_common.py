"""The shared TLS rules: loopback needs nothing, any other address needs TLS or --insecure; a real
handshake with a self-signed certificate verifies, one against an unknown CA does not."""
from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from bridge.common.tls import ServerTls, check_listen, client_context, is_loopback, server_tls
from tests.certs import make_cert


def test_loopback_is_recognised() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("10.1.2.3") and not is_loopback("no-such-host.invalid")


def test_non_loopback_needs_tls_or_insecure(tmp_path: Path) -> None:
    check_listen("serve", "127.0.0.1", None, False)
    check_listen("serve", "10.1.2.3", None, True)
    check_listen("serve", "10.1.2.3", ServerTls(tmp_path / "c", tmp_path / "k"), False)
    with pytest.raises(ValueError, match="without TLS.*--insecure"):
        check_listen("serve", "10.1.2.3", None, False)


def test_cert_and_key_go_together(tmp_path: Path) -> None:
    assert server_tls(None, None) is None
    with pytest.raises(ValueError, match="go together"):
        server_tls(tmp_path / "c", None)


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nope.crt"):
        ServerTls(tmp_path / "nope.crt", tmp_path / "nope.key").context()
    with pytest.raises(ValueError, match="ca.pem"):
        client_context(tmp_path / "ca.pem")


def _serve_once(ctx: ssl.SSLContext) -> tuple[socket.socket, threading.Thread]:
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        conn, _ = listener.accept()
        try:
            with ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(tls.recv(16))
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener, thread


def test_client_verifies_the_server(tmp_path: Path) -> None:
    good = make_cert(tmp_path)
    listener, thread = _serve_once(good.context())
    with socket.create_connection(listener.getsockname(), timeout=10) as raw, \
            client_context(good.cert).wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"ping")
        assert tls.recv(16) == b"ping"
    thread.join(10)
    listener.close()

    other = make_cert(tmp_path, "other")
    listener, thread = _serve_once(good.context())
    with socket.create_connection(listener.getsockname(), timeout=10) as raw, \
            pytest.raises(ssl.SSLCertVerificationError):
        client_context(other.cert).wrap_socket(raw, server_hostname="localhost")
    thread.join(10)
    listener.close()
