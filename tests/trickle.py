"""An HTTP server that answers one byte at a time: a slow (or hostile) NodeManager or ResourceManager,
for the whole-request deadlines of ``yarnclient.http``."""
from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BODY = b'{"containers": {"container": []}}' + b" " * 4096  # valid JSON, longer than any deadline lets through


@contextmanager
def trickling(every_s: float) -> Iterator[str]:
    """The URL of a server on 127.0.0.1 that reads a request's head, then sends a 200 reply one byte
    per ``every_s`` (each byte well within a read timeout, the whole reply never in time)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head and (chunk := conn.recv(4096)):
                head += chunk
            reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
                len(BODY), BODY)
            for i in range(len(reply)):
                if stop.wait(every_s):
                    return
                try:
                    conn.sendall(reply[i:i + 1])
                except OSError:
                    return  # the client gave up

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        server.join(timeout=2)
        listener.close()
