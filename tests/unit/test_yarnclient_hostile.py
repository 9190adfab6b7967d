"""Hostile ResourceManager replies (issue 46, items 5-7): a gzip body that inflates past the cap,
JSON nested too deeply, numbers past a float, and times or vcore-seconds no cluster can hold are
each one typed error (or an application left out, naming it), never a traceback or gigabytes of
memory; `trace import --from-rm` says them in one line."""
from __future__ import annotations

import gzip
import json
import re
import threading
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.cli import main
from tests.unit.test_report_inputs import assert_one_error_line
from tests.unit.test_trace_import import APPS
from yarnclient import ResourceManagerClient, YarnError, YarnServerError, YarnUnexpectedReply
from yarnclient import http

REPLY: dict[str, Any] = {}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body, encoding = REPLY["body"], REPLY.get("encoding")
        self.send_response(REPLY.get("status", 200))
        self.send_header("Content-Type", "application/json")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _serve(body: bytes, **more: Any) -> None:
    REPLY.clear()
    REPLY.update(body=body, **more)


def _apps(app_text: str) -> bytes:
    return ('{"apps": {"app": [' + app_text + "]}}").encode()


def _import(server: str, tmp_path: Path) -> Any:
    return CliRunner().invoke(main, ["trace", "import", "--from-rm", server, "--out", str(tmp_path / "t.trace")])


def test_a_gzip_bomb_stops_at_the_body_cap(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "MAX_BODY_BYTES", 1 << 20)
    _serve(gzip.compress(b" " * (64 << 20), compresslevel=9), encoding="gzip")
    assert len(REPLY["body"]) < 128 << 10
    tracemalloc.start()
    try:
        with pytest.raises(YarnServerError, match=f"answered with more than {1 << 20} bytes"):
            ResourceManagerClient(server).apps()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # the capped body and a chunk, not the 64 MiB it inflates to


HOSTILE = {  # name -> (body, status, a fragment of the one error line)
    "nested JSON": (b"[" * 200_000, 200, "non-JSON content (application/json, nested too deeply)"),
    "startedTime 1e400": (_apps('{"id": "application_1_0001", "startedTime": 1e400}'), 200,
                          "did not answer as YARN does (OverflowError"),
    "an error body nested": (b"[" * 200_000, 500, "500 from"),
    "an error body of a list": (b"[1, 2]", 404, "404 from"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_reply_is_one_typed_error(server: str, tmp_path: Path, name: str) -> None:
    body, status, fragment = HOSTILE[name]
    _serve(body, status=status)
    with pytest.raises(YarnError, match=re.escape(fragment)):
        ResourceManagerClient(server).apps()
    assert_one_error_line(_import(server, tmp_path), fragment)


@pytest.mark.parametrize("field,value,reason", [
    ("startedTime", "1e300", "applications without valid start and finish times"),
    ("finishedTime", "1" + "0" * 400, "applications without valid start and finish times"),
    ("vcoreSeconds", "1e300", "applications whose vcoreSeconds are no number or more than"),
    ("vcoreSeconds", '"many"', "applications whose vcoreSeconds are no number or more than"),
])
def test_an_application_of_impossible_magnitudes_is_left_out_naming_it(server: str, tmp_path: Path, field: str,
                                                                        value: str, reason: str) -> None:
    good, bad = dict(APPS[0]), dict(APPS[3])
    bad[field] = "__hostile__"
    _serve(_apps(f"{json.dumps(good)}, {json.dumps(bad).replace(chr(34) + '__hostile__' + chr(34), value)}"))
    result = _import(server, tmp_path)
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert reason in result.output and "application_1_0004" in result.output
    assert "imported 1 jobs" in result.output


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)
FIELDS = ["id", "state", "finalStatus", "startedTime", "finishedTime", "vcoreSeconds", "priority", "progress",
          "name", "applicationType"]
APP = st.dictionaries(st.sampled_from(FIELDS), JSON | st.integers(min_value=10**300), max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(apps=st.lists(APP, max_size=3))
def test_fuzzed_applications_end_in_a_trace_or_one_error(server: str, tmp_path: Path, apps: list[dict]) -> None:
    _serve(json.dumps({"apps": {"app": apps}}).encode())
    result = _import(server, tmp_path)
    assert result.exit_code in (0, 1) and "Traceback" not in result.output, result.output
    if result.exit_code == 1:
        assert result.output.strip().splitlines()[-1].startswith("Error: "), result.output
    try:
        ResourceManagerClient(server).apps()
    except YarnUnexpectedReply as exc:
        assert "\n" not in str(exc)
