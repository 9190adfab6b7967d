"""One HTTP session per daemon: timeouts, bounded retries with backoff, bounded bodies, typed errors.

A read timeout restarts with every byte, so a server answering one byte a second held a call for
ever. Each call therefore also has a whole-request deadline, connect plus read timeout: when it
passes, a watchdog shuts the call's socket down, which ends any read in progress. A reply is read
as it arrives and refused past `MAX_BODY_BYTES` decoded (a 1 MB gzip body that inflates to
gigabytes, from a daemon or whatever answers on its port, stops there); JSON nested too deeply or
with numbers past a float is a typed error too, never a traceback.
"""
from __future__ import annotations

import json as jsonlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, TypeVar

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from yarnclient.errors import (YarnBadRequest, YarnConnectionError, YarnError, YarnForbidden,
                               YarnNotFound, YarnRedirect, YarnServerError, YarnUnexpectedReply)

DEFAULT_TIMEOUT = (3.0, 30.0)  # (connect, read) seconds
MAX_BODY_BYTES = 64 << 20
"""The largest reply body read, decoded: a ResourceManager listing thousands of applications sends a
few MB; more is not a YARN reply (or a decompression bomb) and would be held whole."""
_CHUNK = 1 << 16
T = TypeVar("T")
# What reading a reply of the wrong shape raises: a missing key, a list for an object, text for a
# number, a number past a float (startedTime: 1e400 is infinite, and int() of it overflows).
_SHAPE_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError)
_STATUS_ERRORS: dict[int, type[YarnError]] = {
    400: YarnBadRequest, 401: YarnForbidden, 403: YarnForbidden, 404: YarnNotFound,
}


class _Deadline:
    """Shuts down every socket a call reads its reply from once ``seconds`` have passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.passed = seconds, False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket | None) -> None:
        with self._lock:
            if sock is None:
                return
            self._socks.append(sock)
            if self.passed:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            for sock in self._socks:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed meanwhile


_calls = threading.local()  # .deadline: the _Deadline of this thread's call in progress


@contextmanager
def call_deadline(seconds: float) -> Iterator[_Deadline]:
    """The calls this thread makes inside it through a `WatchedAdapter` end within ``seconds`` in all."""
    deadline = _calls.deadline = _Deadline(seconds)
    deadline._timer.start()
    try:
        yield deadline
    finally:
        deadline._timer.cancel()
        _calls.deadline = None


class _WatchedHTTPConnection(HTTPConnection):
    """Hands its socket to the call's deadline once the request is sent (new or reused alike)."""

    def getresponse(self) -> BaseHTTPResponse:  # type: ignore[override]
        if (deadline := getattr(_calls, "deadline", None)) is not None:
            deadline.watch(self.sock)
        return super().getresponse()


class _WatchedHTTPSConnection(HTTPSConnection):
    def getresponse(self) -> BaseHTTPResponse:  # type: ignore[override]
        if (deadline := getattr(_calls, "deadline", None)) is not None:
            deadline.watch(self.sock)
        return super().getresponse()


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class WatchedAdapter(HTTPAdapter):
    """Pools whose connections obey the thread's `call_deadline`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class JsonCalls:
    """`get` and `parsed` over any `request`: shared by one daemon's session and an HA pair's."""

    base_url: str

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json: Any = None) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def get(self, path: str, parse: Callable[[Any], T], **params: Any) -> T:
        """GET ``path`` (parameters that are None left out) and read the reply with ``parse``."""
        return self.parsed("GET", path, parse, params={k: v for k, v in params.items() if v is not None})

    def parsed(self, method: str, path: str, parse: Callable[[Any], T], *,
               params: dict[str, Any] | None = None, json: Any = None) -> T:
        """The reply read by ``parse``; a reply ``parse`` cannot read is not YARN's."""
        body = self.request(method, path, params=params, json=json)
        try:
            return parse(body)
        except _SHAPE_ERRORS as exc:
            url = f"{self.base_url}{path}"
            raise YarnUnexpectedReply(f"{url} did not answer as YARN does ({type(exc).__name__}: {exc}); "
                                      "is this a YARN daemon?", url=url) from exc


class RestSession(JsonCalls):
    """JSON over HTTP against one base URL; never hangs (each call ends within its connect plus read
    timeout, however slowly the reply comes), never returns a raw HTTP error."""

    def __init__(self, base_url: str, *, timeout: tuple[float, float] = DEFAULT_TIMEOUT,
                 retries: int = 2, backoff: float = 0.3, user: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.user = user
        self._session = requests.Session()
        # Retry only what cannot have reached the server (connect errors); a write is never
        # replayed after the server may have acted on it.
        retry = Retry(total=retries, connect=retries, read=0, status=0, other=0,
                      backoff_factor=backoff, allowed_methods=None)
        adapter = WatchedAdapter(max_retries=retry)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers.update({"Accept": "application/json"})

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json: Any = None, follow_redirects: bool = True) -> Any:
        """Send one request and return the decoded JSON body (None for an empty body).

        With ``follow_redirects=False`` a redirect raises `YarnRedirect` (a standby RM redirects
        to the active one; the HA probe must see that rather than follow it)."""
        url = f"{self.base_url}{path}"
        params = dict(params or {})
        if self.user and method != "GET":
            params.setdefault("user.name", self.user)
        try:
            with call_deadline(sum(self.timeout)) as deadline:
                response = self._session.request(method, url, params=params, json=json, stream=True,
                                                 timeout=self.timeout, allow_redirects=follow_redirects)
                with response:
                    body = _body(response, url)
        except requests.exceptions.RequestException as exc:
            if deadline.passed:
                raise _late(url, deadline) from exc
            raise YarnConnectionError(f"cannot reach {self.base_url} ({type(exc).__name__}: "
                                      f"{_root_cause(exc)})", url=url) from exc
        if deadline.passed:  # cut short, a reply can even look whole: headers end at the end of input
            raise _late(url, deadline)
        if response.is_redirect:
            raise YarnRedirect(f"{response.status_code} from {url}: redirects to "
                               f"{response.headers.get('Location', '?')}", url=url, status=response.status_code)
        if response.status_code >= 400:
            raise _error_from(response, body, url)
        if not body:
            return None
        try:
            return jsonlib.loads(body)
        except (ValueError, RecursionError) as exc:
            raise YarnServerError(f"{url} answered with non-JSON content "
                                  f"({response.headers.get('Content-Type', 'no type')}"
                                  f"{', nested too deeply' if isinstance(exc, RecursionError) else ''})",
                                  url=url, status=response.status_code) from None

    def download(self, path: str, into: BinaryIO, *, max_bytes: int, seconds: float,
                 params: dict[str, Any] | None = None) -> int:
        """GET ``path`` and write its body to ``into`` as it arrives, redirects followed (WebHDFS
        sends a read on to a DataNode): at most ``max_bytes`` (decoded), the whole call within
        ``seconds`` (a file takes longer than a JSON reply's timeouts allow). The bytes written;
        the typed errors of `request`."""
        url = f"{self.base_url}{path}"
        written = 0
        try:
            with call_deadline(seconds) as deadline:
                response = self._session.get(url, params=params, stream=True, timeout=self.timeout,
                                             headers={"Accept": "*/*"})  # a file, not JSON (Spark's zips: 406)
                with response:
                    if response.status_code >= 400:
                        raise _error_from(response, _body(response, url), url)
                    for chunk in _chunks(response, url, max_bytes, ", the most read from it"):
                        written += len(chunk)
                        into.write(chunk)
        except requests.exceptions.RequestException as exc:
            if deadline.passed:
                raise _late(url, deadline, "") from exc
            raise YarnConnectionError(f"cannot reach {self.base_url} ({type(exc).__name__}: "
                                      f"{_root_cause(exc)})", url=url) from exc
        if deadline.passed:
            raise _late(url, deadline, "")
        return written

    def close(self) -> None:
        self._session.close()


def _late(url: str, deadline: _Deadline, why: str = " (the connect and read timeouts together)") -> YarnConnectionError:
    return YarnConnectionError(f"{url}: no whole reply within {deadline.seconds:g} s{why}", url=url)


def _body(response: requests.Response, url: str) -> bytes:
    """The decoded body, read chunk by chunk; YarnServerError as soon as it passes MAX_BODY_BYTES."""
    return b"".join(_chunks(response, url, MAX_BODY_BYTES, ": not a YARN reply"))


def _chunks(response: requests.Response, url: str, max_bytes: int, why: str) -> Iterator[bytes]:
    """The decoded body's chunks as they arrive; YarnServerError (ending in ``why``) as soon as
    they pass ``max_bytes``."""
    size = 0
    for chunk in response.iter_content(chunk_size=_CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise YarnServerError(f"{url} answered with more than {max_bytes} bytes (decoded){why}",
                                  url=url, status=response.status_code)
        yield chunk


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__


def _error_from(response: requests.Response, body: bytes, url: str) -> YarnError:
    """Map an HTTP error to a typed error carrying YARN's RemoteException message."""
    message, exception = response.reason or "error", ""
    try:
        remote = jsonlib.loads(body).get("RemoteException", {})
        message = str(remote.get("message") or message)
        exception = str(remote.get("exception", ""))
    except (ValueError, RecursionError, AttributeError):  # not JSON, or not YARN's shape of it
        text = body.decode("utf-8", errors="replace").strip()
        if text:
            message = text.splitlines()[0][:300]
    cls = _STATUS_ERRORS.get(response.status_code,
                             YarnServerError if response.status_code >= 500 else YarnError)
    return cls(f"{response.status_code} from {url}: {message}", url=url,
               status=response.status_code, exception=exception)
