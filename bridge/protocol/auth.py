"""Mutual authentication of a plugin connection and a policy host over TCP, with one shared token.

The token never crosses the wire. Hello: the plugin sends its application's name and a fresh
nonce; the host answers with its own nonce and ``proof("host", ...)``, which only a holder of the
token can compute, so a fake host listening on the endpoint is detected before the plugin sends
anything else (and learns nothing it could use: HMACs over nonces it chose or saw). The plugin then
answers ``proof("plugin", ...)`` with its *application key*, a random secret of this
SparkContext: the host keys the application's state by its id and that key's digest, so one
application cannot read or reset another's state even with the host's token (``PolicyHost``).
TLS, when ``serve`` has it, is beneath this: the endpoint's ``tls://`` (``bridge.protocol.endpoint``).
The Java side is ``TcpTransport.java``.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from io import BufferedIOBase
from pathlib import Path

from bridge.protocol.messages import PROTOCOL_VERSION

NONCE_BYTES = 16
DEFAULT_TOKEN_FILE = Path.home() / ".schedbridge" / "serve-token"


class AuthError(OSError):
    """The other side does not know the token (or does not follow the handshake)."""


def proof(token: str, role: str, first: str, second: str) -> str:
    """HMAC-SHA256 of ``role|first|second`` under the token, hex; roles keep the two proofs apart."""
    return hmac.new(token.encode(), f"{role}|{first}|{second}".encode(), hashlib.sha256).hexdigest()


def new_nonce() -> str:
    return secrets.token_hex(NONCE_BYTES)


def key_digest(app_key: str) -> str:
    """What the host keeps of an application key (never the key itself)."""
    return hashlib.sha256(app_key.encode()).hexdigest()


def ensure_token_file(path: Path) -> str:
    """The token in ``path``, created (random, owner-only) if missing; refuses a file others can read."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"token file {path} is readable by others; chmod 600 it")
    token = path.read_text().strip()
    if len(token) < 16:
        raise ValueError(f"token file {path} holds fewer than 16 characters")
    return token


def client_handshake(f: BufferedIOBase, token: str, app: str, app_key: str) -> None:
    """The plugin's side of the hello (for Python clients: preflight checks, tests)."""
    mine = new_nonce()
    reply = _exchange(f, {"v": PROTOCOL_VERSION, "kind": "hello", "app": app, "nonce": mine})
    theirs = str(reply.get("nonce", ""))
    if not theirs or not hmac.compare_digest(str(reply.get("proof", "")), proof(token, "host", mine, theirs)):
        raise AuthError(f"the policy host could not prove it knows the token: {reply.get('error', 'no proof')}")
    done = _exchange(f, {"v": PROTOCOL_VERSION, "kind": "auth", "proof": proof(token, "plugin", theirs, mine),
                         "app_key": app_key})
    if not done.get("ok"):
        raise AuthError(f"the policy host refused the connection: {done.get('error', 'no reason')}")


def _exchange(f: BufferedIOBase, msg: dict) -> dict:
    f.write(json.dumps(msg).encode() + b"\n")
    f.flush()
    line = f.readline()
    if not line:
        raise AuthError("the policy host closed the connection")
    try:
        reply = json.loads(line)
    except ValueError:
        raise AuthError("the policy host's answer is not JSON") from None
    if not isinstance(reply, dict):
        raise AuthError("the policy host's answer is not a JSON object")
    return reply
