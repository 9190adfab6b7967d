"""The NodeManager REST API (`/ws/v1/node`): node info and the containers on that node."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from yarnclient.hadoopconf import nodemanager_webapp_url
from yarnclient.http import DEFAULT_TIMEOUT, RestSession
from yarnclient.models import Container, items


class NodeManagerClient:
    """One NodeManager's web endpoint, e.g. `http://host:8042`."""

    def __init__(self, url: str, *, timeout: tuple[float, float] = DEFAULT_TIMEOUT,
                 retries: int = 2) -> None:
        self._http = RestSession(url, timeout=timeout, retries=retries)

    @classmethod
    def from_conf_dir(cls, conf_dir: str | Path, http_address: str | None = None,
                      **kwargs: Any) -> NodeManagerClient:
        """The NodeManager at `http_address` (a node's `nodeHTTPAddress` from the RM), else this
        host's, with the scheme `yarn.http.policy` gives (https under HTTPS_ONLY)."""
        return cls(nodemanager_webapp_url(Path(conf_dir), http_address), **kwargs)

    @property
    def url(self) -> str:
        return self._http.base_url

    def info(self) -> dict[str, Any]:
        return self._http.get("/ws/v1/node/info", lambda body: dict(body["nodeInfo"]))

    def containers(self) -> list[Container]:
        """Containers this NodeManager currently knows (running and recently finished)."""
        return self._http.get("/ws/v1/node/containers",
                              lambda body: [Container.from_json(c) for c in items(body, "containers", "container")])

    def container(self, container_id: str) -> Container:
        return self._http.get(f"/ws/v1/node/containers/{container_id}",
                              lambda body: Container.from_json(body["container"]))

    def close(self) -> None:
        self._http.close()
