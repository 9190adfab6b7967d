"""Typed errors: what went wrong, with the server's own message when it sent one."""
from __future__ import annotations


class YarnError(Exception):
    """Any failure talking to a YARN daemon."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None,
                 exception: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.exception = exception  # the Java exception class the server named, if any


class YarnConnectionError(YarnError):
    """The daemon could not be reached (down, wrong address, or timed out)."""


class YarnRedirect(YarnError):
    """HTTP 3xx where the caller asked not to follow redirects (a standby RM points to the active)."""


class YarnNoActiveResourceManager(YarnConnectionError):
    """ResourceManager HA: none of the configured RMs answered as the active one."""


class YarnBadRequest(YarnError):
    """HTTP 400: the request was malformed or refused as invalid."""


class YarnForbidden(YarnError):
    """HTTP 401/403: the caller may not do this (ACLs, authentication)."""


class YarnNotFound(YarnError):
    """HTTP 404: no such application, node, container or endpoint."""


class YarnServerError(YarnError):
    """HTTP 5xx or an unexpected reply."""


class YarnUnexpectedReply(YarnServerError):
    """A successful reply that is not shaped as YARN's (a missing key, a wrong type): another
    service on the port, a proxy's page, or an incompatible Hadoop version."""
