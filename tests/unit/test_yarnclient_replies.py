"""A successful reply that is not YARN's (another service on the port, a proxy, JSON of the wrong
shape) raises YarnUnexpectedReply naming the URL, never a KeyError or TypeError."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from yarnclient import NodeManagerClient, ResourceManagerClient, YarnServerError, YarnUnexpectedReply

REPLY: dict[str, Any] = {"body": {}}


class _Handler(BaseHTTPRequestHandler):
    def _reply(self) -> None:
        payload = json.dumps(REPLY["body"]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = _reply

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


CALLS: dict[str, Callable[[str], Any]] = {
    "info": lambda url: ResourceManagerClient(url).info(),
    "metrics": lambda url: ResourceManagerClient(url).metrics(),
    "scheduler": lambda url: ResourceManagerClient(url).scheduler(),
    "nodes": lambda url: ResourceManagerClient(url).nodes(),
    "node": lambda url: ResourceManagerClient(url).node("h:1"),
    "apps": lambda url: ResourceManagerClient(url).apps(),
    "app": lambda url: ResourceManagerClient(url).app("application_1_0001"),
    "new_application": lambda url: ResourceManagerClient(url).new_application(),
    "kill": lambda url: ResourceManagerClient(url).kill("application_1_0001"),
    "set_priority": lambda url: ResourceManagerClient(url).set_priority("application_1_0001", 2),
    "update_node_resource": lambda url: ResourceManagerClient(url).update_node_resource(
        "h:1", vcores=4, memory_mb=1024),
    "nm_info": lambda url: NodeManagerClient(url).info(),
    "containers": lambda url: NodeManagerClient(url).containers(),
    "container": lambda url: NodeManagerClient(url).container("container_1_0001_01_000001"),
}
# Not YARN's reply to any call: JSON, but not an object.
NOT_AN_OBJECT = [["a", "list"], "a string", 42]
# An object, but without what the call needs, or with the wrong types in it (kill and
# update_node_resource read nothing they need from their replies).
WRONG_OBJECT: dict[str, Any] = {
    "info": {"unexpected": "keys"},
    "metrics": {"clusterMetrics": [1]},
    "scheduler": {"scheduler": {"queues": []}},
    "nodes": {"nodes": {"node": ["x"]}},
    "node": {"node": {"nodeHostName": "no id"}},
    "apps": {"apps": {"app": [{"id": "a", "priority": "high"}]}},
    "app": {"app": {"name": "no id"}},
    "new_application": {"application-id": 5},
    "set_priority": {"priority": "high"},
    "nm_info": {"nodeInfo": "text"},
    "containers": {"containers": {"container": 7}},
    "container": {"container": {}},
}


def _expect_typed_error(server: str, name: str, body: Any) -> None:
    REPLY["body"] = body
    with pytest.raises(YarnUnexpectedReply, match=f"{server}/ws/v1/.* did not answer as YARN does") as err:
        CALLS[name](server)
    assert isinstance(err.value, YarnServerError) and err.value.url.startswith(server)


@pytest.mark.parametrize("body", NOT_AN_OBJECT, ids=["list", "string", "number"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_reply_that_is_not_an_object_is_a_typed_error(server: str, name: str, body: Any) -> None:
    _expect_typed_error(server, name, body)


@pytest.mark.parametrize("name", sorted(WRONG_OBJECT))
def test_an_object_of_the_wrong_shape_is_a_typed_error(server: str, name: str) -> None:
    _expect_typed_error(server, name, WRONG_OBJECT[name])
