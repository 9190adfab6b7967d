"""Lines over a connected socket, each bounded in size and by an absolute deadline.

A socket timeout restarts with every byte received, so a client sending one byte a second would
hold a connection forever; the deadline here covers the whole line instead. Each connection may
buffer ``Buffers.own`` bytes of an unfinished line on its own; past that it draws on a budget
shared by every connection, so that a few clients holding huge unfinished lines cannot make the
daemon hold ``connections x line limit`` bytes, nor crowd out the small lines of the others. A line
stays charged until the next ``read_line`` (its reply sent), which bounds the big lines being
decoded at once too (decoded JSON costs several times its bytes).
"""
from __future__ import annotations

import socket
import threading
import time

CHUNK = 65536


class LineTooLong(ValueError):
    """A line longer than the limit (answering its pieces would put every later reply off by one)."""


class Buffers:
    """The bytes of unfinished lines all connections may buffer past ``own`` each (thread-safe)."""

    def __init__(self, shared: int, own: int, setting: str) -> None:
        """``setting``: what raises ``shared``, named when it runs out."""
        self.shared, self.own, self.setting = shared, own, setting
        self.used = 0
        self._lock = threading.Lock()

    def charge(self, change: int) -> None:
        """Takes (positive) or gives back (negative) ``change`` bytes; raises ``LineTooLong`` past the budget."""
        with self._lock:
            if change > 0 and self.used + change > self.shared:
                raise LineTooLong(f"a message past the {self.shared} bytes all connections may buffer at once "
                                  f"beyond {self.own} each ({self.setting} raises it)")
            self.used += change


class LineSocket:
    """A blocking socket read line by line; bytes read past a line wait for the next call."""

    def __init__(self, sock: socket.socket, buffered: bytes = b"", buffers: Buffers | None = None) -> None:
        """``buffered``: bytes already read from ``sock`` (past the login's last line); ``buffers``:
        the budget shared with other connections (None: none)."""
        self.sock = sock
        self._buf = bytearray(buffered)
        self._scanned = 0  # no newline in _buf before this
        self._buffers = buffers
        self._charged = 0  # bytes of _buf taken from _buffers

    def read_line(self, limit: int, deadline: float) -> bytes | None:
        """The next line without its newline, or None at the end of the stream.

        Raises ``LineTooLong`` past ``limit`` bytes (never holding more than ``limit`` + 1) and
        ``TimeoutError`` if the line is not complete by ``deadline`` (``time.monotonic()``)."""
        self._charge(len(self._buf))  # the last line was answered
        while (end := self._buf.find(b"\n", self._scanned)) < 0:
            self._scanned = len(self._buf)
            if len(self._buf) > limit:
                raise LineTooLong(f"a message over {limit} bytes")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no complete message in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(min(CHUNK, limit + 1 - len(self._buf)))
            if not chunk:
                return None
            self._charge(len(self._buf) + len(chunk))
            self._buf += chunk
        if end > limit:
            raise LineTooLong(f"a message over {limit} bytes")
        line = bytes(self._buf[:end])
        del self._buf[:end + 1]
        self._scanned = 0
        self._charge(len(self._buf) + len(line))  # until it is answered
        return line

    def release(self) -> None:
        """Gives back what this connection took from the shared budget (it closed)."""
        self._charge(0)

    def _charge(self, size: int) -> None:
        """Brings what this connection has taken from the shared budget to a buffer of ``size``."""
        if self._buffers is not None:
            wanted = max(0, size - self._buffers.own)
            self._buffers.charge(wanted - self._charged)
            self._charged = wanted

    def send_line(self, text: str, timeout_s: float) -> None:
        """``text`` and a newline; a client that stops reading gets ``timeout_s`` per send."""
        self.sock.settimeout(timeout_s)
        self.sock.sendall(text.encode() + b"\n")
