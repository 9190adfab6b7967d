"""yarnclient's logic against a canned local HTTP server (the real RM is in tests/integration)."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.trickle import trickling
from yarnclient import (NodeManagerClient, ResourceManagerClient, YarnBadRequest, YarnConnectionError,
                        YarnNotFound, YarnServerError)
from yarnclient.hadoopconf import HadoopConfError, rm_webapp_urls, webhdfs_url
from yarnclient.submission import AppSubmission, LocalResource

ROUTES: dict[tuple[str, str], tuple[int, object]] = {
    ("GET", "/ws/v1/cluster/apps"): (200, {"apps": None}),
    ("GET", "/ws/v1/cluster/nodes"): (200, {"nodes": {"node": [{
        "id": "h:1", "nodeHostName": "h", "state": "RUNNING", "numContainers": 2,
        "usedMemoryMB": 512, "availMemoryMB": 3584, "usedVirtualCores": 1,
        "availableVirtualCores": 3}]}}),
    ("GET", "/ws/v1/cluster/apps/application_9_0001"): (404, {"RemoteException": {
        "exception": "NotFoundException", "message": "app with id: application_9_0001 not found"}}),
    ("PUT", "/ws/v1/cluster/apps/application_9_0002/priority"): (400, {"RemoteException": {
        "exception": "BadRequestException", "message": "priority must be an integer"}}),
    ("GET", "/ws/v1/cluster/metrics"): (500, "<html>boom</html>"),
    ("GET", "/ws/v1/node/containers"): (200, {"containers": {"container": {
        "id": "container_1_0001_01_000002", "state": "RUNNING", "exitCode": -1000,
        "totalMemoryNeededMB": 1024, "totalVCoresNeeded": 1}}}),
    ("GET", "/ws/v1/cluster/apps/application_9_0003/appattempts"): (200, {"appAttempts": {"appAttempt": [
        {"id": 1, "appAttemptId": "appattempt_9_0003_000001", "containerId": "container_9_0003_01_000001"},
        {"id": 2, "appAttemptId": "appattempt_9_0003_000002", "containerId": "container_9_0003_02_000001"}]}}),
    ("GET", "/ws/v1/cluster/apps/application_9_0003/appattempts/appattempt_9_0003_000002/containers"): (200, {
        "container": [
            {"containerId": "container_9_0003_02_000001", "nodeId": "h:1", "allocatedMB": 640,
             "allocatedVCores": 1, "nodeHttpAddress": "http://h:8042"},
            {"containerId": "container_9_0003_02_000002", "nodeId": "h:2", "allocatedMB": 1664,
             "allocatedVCores": 1, "nodeHttpAddress": "http://h:8043"}]}),
    ("GET", "/conf"): (200, {"properties": [
        {"key": "yarn.scheduler.minimum-allocation-mb", "value": "128", "isFinal": False, "resource": "x"}]}),
}
SEEN: list[tuple[str, str]] = []


class _Handler(BaseHTTPRequestHandler):
    def _reply(self) -> None:
        SEEN.append((self.command, self.path))
        status, body = ROUTES.get((self.command, self.path.split("?")[0]), (404, {}))
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = _reply

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_empty_app_list_is_an_empty_list(server: str) -> None:
    assert ResourceManagerClient(server).apps(states=["RUNNING"]) == []


def test_nodes_are_typed_and_totals_derived(server: str) -> None:
    (node,) = ResourceManagerClient(server).nodes()
    assert (node.node_id, node.state, node.vcores_total, node.memory_mb_total) == ("h:1", "RUNNING", 4, 4096)


def test_unknown_app_raises_not_found_with_server_message(server: str) -> None:
    with pytest.raises(YarnNotFound, match="application_9_0001 not found") as err:
        ResourceManagerClient(server).app("application_9_0001")
    assert err.value.status == 404 and err.value.exception == "NotFoundException"


def test_bad_request_carries_message_and_user_name_is_sent_on_writes(server: str) -> None:
    with pytest.raises(YarnBadRequest, match="priority must be an integer"):
        ResourceManagerClient(server, user="alice").set_priority("application_9_0002", 3)
    assert any(m == "PUT" and "user.name=alice" in p for m, p in SEEN)


def test_server_error_with_html_body_is_typed(server: str) -> None:
    with pytest.raises(YarnServerError, match="500 .*boom"):
        ResourceManagerClient(server).metrics()


def test_single_container_object_is_unwrapped_and_unknown_exit_code_is_none(server: str) -> None:
    (container,) = NodeManagerClient(server).containers()
    assert container.container_id.endswith("000002") and container.exit_code is None
    assert (container.memory_mb, container.vcores) == (1024, 1)


def _site(path: Path, props: dict[str, str]) -> None:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
    path.write_text(f"<configuration>{body}</configuration>")


def test_urls_from_a_hadoop_conf_dir(tmp_path: Path) -> None:
    _site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.example"})
    _site(tmp_path / "hdfs-site.xml", {})
    _site(tmp_path / "core-site.xml", {"fs.defaultFS": "hdfs://nn.example:8020"})
    assert rm_webapp_urls(tmp_path) == ["http://rm.example:8088"]
    assert webhdfs_url(tmp_path) == "http://nn.example:9870"


def test_conf_dir_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(HadoopConfError, match="yarn-site.xml: no such file"):
        rm_webapp_urls(tmp_path)
    (tmp_path / "yarn-site.xml").write_text("<configuration>\n<property>\n")
    with pytest.raises(HadoopConfError, match=r"yarn-site.xml: line 3: malformed XML"):
        rm_webapp_urls(tmp_path)


def test_submission_context_shape() -> None:
    app = AppSubmission(name="x", command="true", memory_mb=300, local_resources={
        "a.jar": LocalResource("hdfs://nn/a.jar", size=10, timestamp_ms=5)}, environment={"K": "V"})
    ctx = app.to_json("application_1_0001")
    assert ctx["application-id"] == "application_1_0001"
    assert ctx["resource"] == {"memory": 300, "vCores": 1}
    assert ctx["am-container-spec"]["local-resources"]["entry"][0] == {
        "key": "a.jar", "value": {"resource": "hdfs://nn/a.jar", "type": "FILE",
                                  "visibility": "APPLICATION", "size": 10, "timestamp": 5}}


def test_the_latest_attempts_containers_with_its_am_marked(server: str) -> None:
    rm = ResourceManagerClient(server)
    containers = rm.app_containers("application_9_0003")
    assert [(c.node_id, c.memory_mb, c.is_am) for c in containers] == [("h:1", 640, True), ("h:2", 1664, False)]


def test_the_rms_own_configuration(server: str) -> None:
    assert ResourceManagerClient(server).conf()["yarn.scheduler.minimum-allocation-mb"] == "128"


def test_a_call_against_a_server_trickling_its_reply_ends_within_its_whole_request_deadline() -> None:
    """Each byte comes well within the read timeout, so only a deadline for the whole call ends it."""
    with trickling(0.05) as url:
        client = NodeManagerClient(url, timeout=(0.5, 1.0), retries=0)
        started = time.monotonic()
        with pytest.raises(YarnConnectionError, match=r"no whole reply within 1\.5 s"):
            client.containers()
        assert time.monotonic() - started < 2.5
