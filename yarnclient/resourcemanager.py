"""The ResourceManager REST API (`/ws/v1/cluster`)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from yarnclient.ha import FailoverSession
from yarnclient.hadoopconf import rm_webapp_urls
from yarnclient.http import DEFAULT_TIMEOUT, JsonCalls, RestSession
from yarnclient.models import AllocatedContainer, Application, ClusterMetrics, Node, items

_BASE = "/ws/v1/cluster"


class ResourceManagerClient:
    """A ResourceManager's web endpoint, e.g. `http://rm-host:8088`, or an HA set of them
    (`["http://rm1:8088", "http://rm2:8088"]`): then every call goes to the active one
    (`yarnclient.ha`).

    Writes (kill, move, priority, node resources, submit) act as `user` under simple
    authentication (`?user.name=`); on a Kerberos cluster put a proxy in front.
    """

    def __init__(self, url: str | Sequence[str], *, user: str | None = None,
                 timeout: tuple[float, float] = DEFAULT_TIMEOUT, retries: int = 2) -> None:
        urls = [url] if isinstance(url, str) else list(url)
        self._http: JsonCalls
        if len(urls) == 1:
            self._http = RestSession(urls[0], timeout=timeout, retries=retries, user=user)
        else:
            self._http = FailoverSession(urls, timeout=timeout, retries=retries, user=user)

    @classmethod
    def from_conf_dir(cls, conf_dir: str | Path, **kwargs: Any) -> ResourceManagerClient:
        """Build from a Hadoop configuration directory (`HADOOP_CONF_DIR`): its RM, or with
        `yarn.resourcemanager.ha.enabled` all its RMs, over https under HTTPS_ONLY."""
        return cls(rm_webapp_urls(Path(conf_dir)), **kwargs)

    @property
    def url(self) -> str:
        """The RM this client talks to (with HA: the active one, found on first use)."""
        return self._http.base_url

    # --- reads -----------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        return self._http.get(f"{_BASE}/info", lambda body: dict(body["clusterInfo"]))

    def metrics(self) -> ClusterMetrics:
        return self._http.get(f"{_BASE}/metrics", lambda body: ClusterMetrics.from_json(body["clusterMetrics"]))

    def scheduler(self) -> dict[str, Any]:
        return self._http.get(f"{_BASE}/scheduler", lambda body: dict(body["scheduler"]["schedulerInfo"]))

    def nodes(self, states: Iterable[str] | None = None) -> list[Node]:
        return self._http.get(f"{_BASE}/nodes", lambda body: [Node.from_json(n) for n in items(body, "nodes", "node")],
                              states=_csv(states))

    def node(self, node_id: str) -> Node:
        return self._http.get(f"{_BASE}/nodes/{node_id}", lambda body: Node.from_json(body["node"]))

    def apps(self, states: Iterable[str] | None = None, application_types: Iterable[str] | None = None,
             queue: str | None = None) -> list[Application]:
        return self._http.get(f"{_BASE}/apps",
                              lambda body: [Application.from_json(a) for a in items(body, "apps", "app")],
                              states=_csv(states), applicationTypes=_csv(application_types), queue=queue)

    def app(self, app_id: str) -> Application:
        return self._http.get(f"{_BASE}/apps/{app_id}", lambda body: Application.from_json(body["app"]))

    def app_containers(self, app_id: str) -> list[AllocatedContainer]:
        """The live containers of the application's latest attempt, its AM's marked (where YARN
        placed them: `replay --preempt` checks the executors' spread across NodeManagers). The RM
        answers `{"container": [...]}`, without the outer key its other lists have."""
        attempts = self._http.get(f"{_BASE}/apps/{app_id}/appattempts",
                                  lambda body: items(body, "appAttempts", "appAttempt"))
        if not attempts:
            return []
        latest = max(attempts, key=lambda a: int(a["id"]))
        am = str(latest.get("containerId", ""))
        return self._http.get(f"{_BASE}/apps/{app_id}/appattempts/{latest['appAttemptId']}/containers",
                              lambda body: [AllocatedContainer.from_json(c, am)
                                            for c in items({"containers": body}, "containers", "container")])

    def conf(self) -> dict[str, str]:
        """The ResourceManager's own configuration (its `/conf` servlet, every property at once):
        what the RM runs with, which a client's yarn-site.xml need not be."""
        return self._http.get("/conf", lambda body: {str(p["key"]): str(p["value"]) for p in body["properties"]})

    # --- writes ----------------------------------------------------------------------------
    def new_application(self) -> dict[str, Any]:
        """Reserve an application id; the reply also names the maximum container resource."""
        return self._http.parsed("POST", f"{_BASE}/apps/new-application", _new_application)

    def submit_application(self, context: dict[str, Any]) -> None:
        """Submit an ApplicationSubmissionContext (see `yarnclient.submission`)."""
        self._http.request("POST", f"{_BASE}/apps", json=context)

    def kill(self, app_id: str) -> str:
        """Ask the RM to kill an application; returns the state the RM reports (it is asynchronous)."""
        return self._http.parsed("PUT", f"{_BASE}/apps/{app_id}/state",
                                 lambda body: str((body or {}).get("state", "")), json={"state": "KILLED"})

    def move_queue(self, app_id: str, queue: str) -> str:
        return self._http.parsed("PUT", f"{_BASE}/apps/{app_id}/queue",
                                 lambda body: str((body or {}).get("queue", "")), json={"queue": queue})

    def set_priority(self, app_id: str, priority: int) -> int:
        return self._http.parsed("PUT", f"{_BASE}/apps/{app_id}/priority",
                                 lambda body: int((body or {}).get("priority", priority)),
                                 json={"priority": priority})

    def update_node_resource(self, node_id: str, *, vcores: int, memory_mb: int,
                             overcommit_timeout_s: int = -1) -> dict[str, Any]:
        """Change a node's advertised capacity (Kairos raises vcores to admit cores+Q tasks)."""
        body = {"resource": {"memory": memory_mb, "vCores": vcores},
                "overCommitTimeout": overcommit_timeout_s}
        return self._http.parsed("POST", f"{_BASE}/nodes/{node_id}/resource",
                                 lambda reply: dict(reply or {}), json=body)

    def close(self) -> None:
        self._http.close()


def _new_application(body: Any) -> dict[str, Any]:
    """The reply of new-application, which must name the reserved id."""
    if not isinstance(body["application-id"], str):
        raise TypeError(f"application-id is {body['application-id']!r}, not a string")
    return dict(body)


def _csv(values: Iterable[str] | None) -> str | None:
    return ",".join(values) if values else None
