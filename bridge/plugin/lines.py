"""Lines over a connected socket, each bounded in size and by an absolute deadline.

A socket timeout restarts with every byte received, so a client sending one byte a second would
hold a connection forever; the deadline here covers the whole line instead.
"""
from __future__ import annotations

import socket
import time

CHUNK = 65536


class LineTooLong(ValueError):
    """A line longer than the limit (answering its pieces would put every later reply off by one)."""


class LineSocket:
    """A blocking socket read line by line; bytes read past a line wait for the next call."""

    def __init__(self, sock: socket.socket, buffered: bytes = b"") -> None:
        """``buffered``: bytes already read from ``sock`` (past the login's last line)."""
        self.sock = sock
        self._buf = bytearray(buffered)
        self._scanned = 0  # no newline in _buf before this

    def read_line(self, limit: int, deadline: float) -> bytes | None:
        """The next line without its newline, or None at the end of the stream.

        Raises ``LineTooLong`` past ``limit`` bytes (never holding more than ``limit`` + 1) and
        ``TimeoutError`` if the line is not complete by ``deadline`` (``time.monotonic()``)."""
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
            self._buf += chunk
        if end > limit:
            raise LineTooLong(f"a message over {limit} bytes")
        line = bytes(self._buf[:end])
        del self._buf[:end + 1]
        self._scanned = 0
        return line

    def send_line(self, text: str, timeout_s: float) -> None:
        """``text`` and a newline; a client that stops reading gets ``timeout_s`` per send."""
        self.sock.settimeout(timeout_s)
        self.sock.sendall(text.encode() + b"\n")
