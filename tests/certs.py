"""Self-signed certificates for the TLS tests of serve, the node agent and the plugin."""
from __future__ import annotations

import subprocess
from pathlib import Path

from bridge.common.tls import ServerTls


def make_cert(folder: Path, name: str = "localhost") -> ServerTls:
    """A self-signed certificate for ``name`` and 127.0.0.1 (openssl, argument list, no shell)."""
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name},IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return ServerTls(cert, key)
