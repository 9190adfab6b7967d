"""ResourceManager HA: send every call to the active RM of a configured set, failing over.

Which RM is active is asked of the RMs themselves, as YARN's web clients do: `GET
/ws/v1/cluster/info` answers `clusterInfo.haState` ("ACTIVE", "STANDBY"), and a standby RM
redirects other REST calls to the active one. On a connection error the active RM is looked for
again and the call repeated once there. The RM's REST writes used here set absolute state (kill,
queue, priority, node resource) or are refused when repeated (a submission under the same
application id), so repeating one after a failover is harmless.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from yarnclient.errors import YarnConnectionError, YarnError, YarnNoActiveResourceManager
from yarnclient.http import DEFAULT_TIMEOUT, JsonCalls, RestSession

INFO_PATH = "/ws/v1/cluster/info"


def ha_state(session: RestSession) -> str:
    """The RM's own answer ("ACTIVE", "STANDBY", ...), or why it gave none (not raised: the
    caller goes on to the next RM and lists every reason if none is active)."""
    try:
        body = session.request("GET", INFO_PATH, follow_redirects=False)
        return str(body["clusterInfo"]["haState"])
    except YarnError as exc:  # down, redirecting (a standby), or not answering as an RM
        return f"not active: {exc}"
    except (KeyError, TypeError) as exc:
        return f"not active: no clusterInfo.haState in the reply ({type(exc).__name__}: {exc})"


class FailoverSession(JsonCalls):
    """A `RestSession` over several RMs: each call goes to the active one."""

    def __init__(self, urls: Sequence[str], *, timeout: tuple[float, float] = DEFAULT_TIMEOUT,
                 retries: int = 2, user: str | None = None) -> None:
        if not urls:
            raise ValueError("no ResourceManager URL given")
        self._sessions = [RestSession(url, timeout=timeout, retries=retries, user=user) for url in urls]
        self._active: RestSession | None = None

    @property
    def base_url(self) -> str:  # type: ignore[override]
        """The active RM's URL (found on first use)."""
        return self.active().base_url

    @property
    def urls(self) -> list[str]:
        return [s.base_url for s in self._sessions]

    def active(self) -> RestSession:
        """The RM that says it is active, asked in configuration order; cached until it fails."""
        if self._active is None:
            tried = []
            for session in self._sessions:
                state = ha_state(session)
                if state == "ACTIVE":
                    self._active = session
                    return session
                tried.append(f"{session.base_url} ({state})")
            raise YarnNoActiveResourceManager("no active ResourceManager among "
                                              f"{len(tried)} tried: {'; '.join(tried)}")
        return self._active

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json: Any = None) -> Any:
        session = self.active()
        try:
            return session.request(method, path, params=params, json=json)
        except YarnConnectionError:
            self._active = None  # it went away: another RM may have taken over
            if self.active() is session:
                raise
            return self.active().request(method, path, params=params, json=json)

    def close(self) -> None:
        for session in self._sessions:
            session.close()
