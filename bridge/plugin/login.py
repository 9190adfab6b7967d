"""The daemon's front door: accepting connections and running their login on one thread.

Before a client proves it knows the token, it costs the daemon almost nothing: no thread (one
selector serves every connection still logging in), at most ``Limits.login_line_bytes`` buffered,
and ``Limits.login_timeout_s`` for the whole handshake (TLS included), however slowly its bytes
arrive. Connections are capped in total and per peer address. A newcomer over a cap is not refused
while connections still logging in hold the room: the gate sheds one of those instead, the oldest
that has not even sent its hello, from the newcomer's own address past the per-address cap, else
from the address holding the most (an address over its fair share loses first). Idle sockets from a
few addresses thus only ever push out each other, and a real application's login gets through. Only
logged-in connections, which cost a token, fill a cap for good. A client that logs in is handed,
as a blocking socket, to ``admit`` (the daemon gives it a thread). The handshake is ``bridge.protocol.auth``'s.
"""
from __future__ import annotations

import hmac
import selectors
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bridge.plugin.peer_text import peer_logger
from bridge.protocol.auth import key_digest, new_nonce, proof
from bridge.protocol.messages import (
    MAX_MESSAGE_BYTES,
    ProtocolError,
    decode,
    encode_challenge,
    encode_error,
    encode_hello_reply,
)

log = peer_logger(__name__)

MIN_APP_KEY = 16


@dataclass(frozen=True)
class Limits:
    """What one client may cost the daemon (the defaults suit hundreds of applications)."""

    login_timeout_s: float = 5.0        # connect to logged in, TLS handshake included
    login_line_bytes: int = 4096        # a hello or auth line
    idle_timeout_s: float = 600.0       # for each message once logged in (the whole line)
    send_timeout_s: float = 30.0        # for each reply to a client that does not read it
    message_bytes: int = MAX_MESSAGE_BYTES
    max_connections: int = 1024         # open at once, logged in or not
    max_per_peer: int = 256             # from one address (a gateway host runs many drivers)
    backlog: int = 256                  # many applications starting at once
    log_every_s: float = 10.0           # at most one line per kind of refusal in this time
    # Once logged in (a token holder): what one application key can make the daemon keep.
    apps_per_key: int = 16              # applications with a state (a Spark driver is one, with its own key)
    apps_per_connection: int = 4
    snapshot_bytes: int = 4 << 20       # a round carrying a snapshot (decoded, about ten times as much)
    buffered_bytes: int = 64 << 20      # unfinished messages of all connections at once, past the next
    own_buffer_bytes: int = 64 << 10    # each connection's unfinished message, outside that budget
    closed_keys: int = 256              # keys whose connections all closed, kept for --app-timeout


class Throttled:
    """One warning per ``every_s`` at most; the next one counts those left out meanwhile."""

    def __init__(self, every_s: float) -> None:
        self._every_s, self._next, self._skipped = every_s, 0.0, 0

    def warning(self, fmt: str, *args: object) -> None:
        now = time.monotonic()
        if now < self._next:
            self._skipped += 1
            return
        more = f" ({self._skipped} more like it since the last such line)" if self._skipped else ""
        log.warning(fmt + "%s", *args, more)
        self._skipped, self._next = 0, now + self._every_s


class Refused(Exception):
    """A login that ends here; its message goes to the log (and to the client if ``reply``)."""

    def __init__(self, why: str, reply: str | None = None) -> None:
        super().__init__(why)
        self.reply = reply


@dataclass(eq=False)
class _Login:
    """One connection still logging in."""

    sock: socket.socket
    peer: str
    deadline: float
    tls_pending: bool
    buf: bytearray = field(default_factory=bytearray)
    app: str = "?"
    mine: str = ""    # the host's nonce, once the hello came
    theirs: str = ""  # the client's


# The logged-in socket (blocking), its peer, its owner (application key digest), the application's
# name from its hello and the bytes it sent past its auth line.
Admit = Callable[[socket.socket, str, str, str, bytes], None]


class LoginGate:
    """Accepts on ``listener`` and logs clients in, on the thread that calls ``run``."""

    def __init__(self, listener: socket.socket, token: str, tls: ssl.SSLContext | None, limits: Limits,
                 admit: Admit) -> None:
        self.token, self.tls, self.limits, self._admit = token, tls, limits, admit
        self._listener = listener
        self._selector = selectors.DefaultSelector()
        self._logins: dict[int, _Login] = {}  # by fd, in accept order, so by deadline
        self._open: Counter[str] = Counter()  # peer -> connections, logged in or not
        self._waiting: Counter[str] = Counter()  # peer -> connections still logging in
        self._lock = threading.Lock()  # _open: released by the connections' threads
        self._wake_r, self._wake_w = socket.socketpair()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._refused = Throttled(limits.log_every_s)
        self._dropped = Throttled(limits.log_every_s)
        self._shed = Throttled(limits.log_every_s)
        listener.setblocking(False)
        self._selector.register(listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)

    def run(self, poll_interval: float, tick: Callable[[], None]) -> None:
        """Serves until ``stop``; calls ``tick`` at least every ``poll_interval`` seconds."""
        self._stopped.clear()
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(self._wait(poll_interval)):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.data is not None:
                        self._step(key.data)
                self._expire()
                tick()
        finally:
            self._stop.clear()
            self._stopped.set()

    def stop(self) -> None:
        """Ends ``run`` and waits for it."""
        self._stop.set()
        self._wake_w.send(b"x")
        self._stopped.wait()

    def close(self) -> None:
        for login in list(self._logins.values()):
            self._close(login)
        self._selector.close()
        for s in (self._listener, self._wake_r, self._wake_w):
            s.close()

    def release(self, peer: str) -> None:
        """A logged-in connection from ``peer`` closed."""
        with self._lock:
            self._open[peer] -= 1
            if not self._open[peer]:
                del self._open[peer]

    def _wait(self, poll_interval: float) -> float:
        first = next(iter(self._logins.values()), None)
        return poll_interval if first is None else max(0.0, min(poll_interval, first.deadline - time.monotonic()))

    def _accept(self) -> None:
        for _ in range(64):  # then the logins in progress get their turn
            try:
                sock, addr = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as e:  # e.g. out of file descriptors: the backlog waits
                self._refused.warning("schedbridge serve: cannot accept connections: %s", e)
                return
            if not self._take(addr[0]):
                sock.close()
                continue
            self._start(sock, addr[0])

    def _take(self, peer: str) -> bool:
        """Counts a connection from ``peer``, shedding a login in progress if a cap is reached."""
        while True:
            with self._lock:
                total = sum(self._open.values())
                if total < self.limits.max_connections and self._open[peer] < self.limits.max_per_peer:
                    self._open[peer] += 1
                    return True
                own = self._open[peer] >= self.limits.max_per_peer
            victim = self._victim(peer if own else None)
            if victim is None:
                break
            self._shed.warning("schedbridge serve: shedding connections not logged in: %d open in all, %d from "
                               "%s (caps %d and %d per address); closed the oldest idle one from %s", total,
                               self._open[peer], peer, self.limits.max_connections, self.limits.max_per_peer,
                               victim.peer)
            self._close(victim)
        self._refused.warning("schedbridge serve: refused a connection from %s: %d open from it, %d in all "
                              "(caps %d and %d), all logged in", peer, self._open[peer], total,
                              self.limits.max_per_peer, self.limits.max_connections)
        return False

    def _victim(self, peer: str | None) -> _Login | None:
        """The login to shed for a newcomer: ``peer``'s (None: the address with most logins in
        progress), the oldest that has sent no hello, else its oldest; None if it has none."""
        if peer is None:
            if not self._waiting:
                return None
            peer = self._waiting.most_common(1)[0][0]
        oldest = None
        for login in self._logins.values():
            if login.peer == peer:
                if not login.mine:
                    return login
                oldest = oldest or login
        return oldest

    def _start(self, sock: socket.socket, peer: str) -> None:
        sock.setblocking(False)
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        login = _Login(sock, peer, time.monotonic() + self.limits.login_timeout_s, self.tls is not None)
        self._logins[sock.fileno()] = login
        self._waiting[peer] += 1
        self._selector.register(sock, selectors.EVENT_READ, login)

    def _expire(self) -> None:
        now = time.monotonic()
        for login in list(self._logins.values()):
            if login.deadline > now:
                break
            self._drop(login, f"not logged in within {self.limits.login_timeout_s:g} s")

    def _step(self, login: _Login) -> None:
        """Whatever ``login``'s readiness allows: the TLS handshake, then its lines."""
        try:
            if login.tls_pending:
                self._handshake(login)
            if not login.tls_pending:
                self._read(login)
        except Refused as e:
            if e.reply is not None:
                self._try_send(login, e.reply)
            self._drop(login, str(e))
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            self._drop(login, f"{type(e).__name__}: {e}")

    def _handshake(self, login: _Login) -> None:
        assert isinstance(login.sock, ssl.SSLSocket)
        try:
            login.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._selector.modify(login.sock, selectors.EVENT_READ, login)
            return
        except ssl.SSLWantWriteError:
            self._selector.modify(login.sock, selectors.EVENT_WRITE, login)
            return
        login.tls_pending = False
        self._selector.modify(login.sock, selectors.EVENT_READ, login)

    def _read(self, login: _Login) -> None:
        """Reads what has come (all of it: TLS may hold decrypted bytes no selector sees)."""
        limit = self.limits.login_line_bytes
        while True:
            try:
                chunk = login.sock.recv(limit + 1 - len(login.buf))
            except (BlockingIOError, ssl.SSLWantReadError):
                return
            if not chunk:
                raise Refused("closed the connection while logging in")
            login.buf += chunk
            while (end := login.buf.find(b"\n")) >= 0:
                line = bytes(login.buf[:end])
                del login.buf[:end + 1]
                if self._line(login, line):
                    return
            if len(login.buf) > limit:
                raise Refused(f"sent a login message over {limit} bytes",
                              encode_error(f"login message over {limit} bytes; connection closed"))

    def _line(self, login: _Login, line: bytes) -> bool:
        """One handshake line; True once the client is logged in and handed over."""
        if not login.mine:
            hello = _expect(line, "hello")
            login.app, login.theirs = str(hello.get("app", "?"))[:200], str(hello.get("nonce", ""))
            if not login.theirs:
                raise Refused("hello without a nonce", encode_error(
                    "hello without a nonce (a plugin older than protocol v2?)"))
            login.mine = new_nonce()
            self._send(login, encode_challenge(login.mine, proof(self.token, "host", login.theirs, login.mine)))
            return False
        auth = _expect(line, "auth")
        app_key = str(auth.get("app_key", ""))
        if not hmac.compare_digest(str(auth.get("proof", "")), proof(self.token, "plugin", login.mine, login.theirs)) \
                or len(app_key) < MIN_APP_KEY:
            raise Refused("bad token or application key", encode_hello_reply(False, "bad token"))
        self._send(login, encode_hello_reply(True))
        self._hand_over(login, key_digest(app_key))
        return True

    def _hand_over(self, login: _Login, owner: str) -> None:
        self._forget(login)
        login.sock.setblocking(True)
        self._admit(login.sock, login.peer, owner, login.app, bytes(login.buf))

    def _send(self, login: _Login, text: str) -> None:
        """A handshake reply: a few hundred bytes, which a new connection's send buffer takes whole."""
        data = text.encode() + b"\n"
        try:
            sent = login.sock.send(data)
        except (BlockingIOError, ssl.SSLWantWriteError):
            sent = 0
        if sent != len(data):
            raise Refused("does not read the handshake's replies")

    def _try_send(self, login: _Login, text: str) -> None:
        try:
            self._send(login, text)
        except (Refused, OSError):
            pass  # the refusal is logged either way

    def _drop(self, login: _Login, why: str) -> None:
        self._dropped.warning("schedbridge serve: connection from %s (%s) closed before login: %s", login.peer,
                              login.app, why)
        self._close(login)

    def _close(self, login: _Login) -> None:
        self._forget(login)
        login.sock.close()
        self.release(login.peer)

    def _forget(self, login: _Login) -> None:
        if self._logins.pop(login.sock.fileno(), None) is not None:
            self._waiting[login.peer] -= 1
            if not self._waiting[login.peer]:
                del self._waiting[login.peer]
        try:
            self._selector.unregister(login.sock)
        except (KeyError, ValueError):
            pass  # not registered (any more)


def _expect(line: bytes, kind: str) -> dict[str, Any]:
    try:
        msg = decode(line.decode("utf-8", "replace"))
    except ProtocolError as e:
        raise Refused(str(e), encode_error(str(e))) from None
    if msg.get("kind") != kind:
        why = f"expected a {kind}, got kind {msg.get('kind')!r}"
        raise Refused(why, encode_error(why))
    return msg
