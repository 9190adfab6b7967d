"""Spark's history from where it lives: `hdfs://` paths read over WebHDFS and a History Server's
REST API, against a local HTTP server emulating both (a NameNode that sends reads on to a
"DataNode" by redirect, as HDFS does, and the History Server's application list and zips, as
Spark 4.3's answered for the committed fixture). Each application once, the same trace as the
file import, and every fault one line naming the URL and application: a bad address, a server
down, a reply too slow or too large, a zip that is none or reaches outside its folder."""
from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from click.testing import CliRunner, Result

from bridge.cli import main
from bridge.history import historyserver, webhdfs

FIXTURE = next((Path(__file__).resolve().parents[1] / "fixtures").glob("eventlog_v2_*"))
APP_ID = FIXTURE.name.removeprefix("eventlog_v2_")


class Fake:
    """What the server holds: HDFS files by path (a folder is a path prefix), the History Server's
    applications and their zips, the requests it saw and how slowly it answers."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.apps: list[dict] = []
        self.zips: dict[str, bytes] = {}
        self.seen: list[str] = []
        self.drip_s = 0.0  # seconds between the bytes of a body

    def folder(self, path: str) -> bool:
        return any(p.startswith(path.rstrip("/") + "/") for p in self.files)

    def children(self, path: str) -> list[dict]:
        prefix, names = path.rstrip("/") + "/", {}
        for p in self.files:
            if p.startswith(prefix):
                name, _, rest = p[len(prefix):].partition("/")
                names[name] = "DIRECTORY" if rest else "FILE"
        return [{"pathSuffix": n, "type": t, "length": 0} for n, t in sorted(names.items())]


FAKE = Fake()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        path = unquote(url.path)
        FAKE.seen.append(f"{path} {query.get('op', '')} {query.get('length', '')}".strip())
        if path.startswith("/webhdfs/v1"):
            self._webhdfs(path.removeprefix("/webhdfs/v1"), query)
        elif path.startswith("/datanode"):
            data = FAKE.files[path.removeprefix("/datanode")]
            self._send(200, data[:int(query["length"])] if "length" in query else data)
        elif path == historyserver.API:
            self._send(200, json.dumps(FAKE.apps).encode(), "application/json")
        elif path.startswith(historyserver.API) and path.endswith("/logs"):
            if self.headers.get("Accept") == "application/json":  # Spark's answer: its zips are no JSON
                self._send(406, b"Not Acceptable")
                return
            app = path.removeprefix(historyserver.API + "/").split("/")[0]
            found = FAKE.zips.get(app)
            self._send(200, found) if found is not None else self._send(404, f"no such app: {app}".encode())
        else:
            self._send(404, b"not found")

    def _webhdfs(self, path: str, query: dict[str, str]) -> None:
        missing = {"RemoteException": {"exception": "FileNotFoundException", "message": f"File {path} does not exist."}}
        known = path in FAKE.files or FAKE.folder(path)
        if not known:
            self._send(404, json.dumps(missing).encode(), "application/json")
        elif query["op"] == "GETFILESTATUS":
            kind = "FILE" if path in FAKE.files else "DIRECTORY"
            self._send(200, json.dumps({"FileStatus": {"pathSuffix": "", "type": kind}}).encode(), "application/json")
        elif query["op"] == "LISTSTATUS":
            self._send(200, json.dumps({"FileStatuses": {"FileStatus": FAKE.children(path)}}).encode(),
                       "application/json")
        elif query["op"] == "OPEN":  # a NameNode sends the read on to a DataNode
            length = f"?length={query['length']}" if "length" in query else ""
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/datanode{path}{length}")
            self.send_header("Content-Length", "0")
            self.end_headers()

    def _send(self, status: int, body: bytes, kind: str = "application/octet-stream") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if not FAKE.drip_s or status != 200:
                self.wfile.write(body)
                return
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(FAKE.drip_s)
        except OSError:
            pass  # the client stopped reading: what a limit or a deadline does

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def fresh() -> None:
    FAKE.__init__()  # type: ignore[misc]


def conf_dir(where: Path, server: str) -> Path:
    """A cluster's client configuration naming the fake NameNode."""
    port = urlsplit(server).port
    conf = where / "conf"
    conf.mkdir()
    site = "<configuration><property><name>{}</name><value>{}</value></property></configuration>"
    (conf / "core-site.xml").write_text(site.format("fs.defaultFS", "hdfs://127.0.0.1:9000"))
    (conf / "hdfs-site.xml").write_text(site.format("dfs.namenode.http-address", f"127.0.0.1:{port}"))
    (conf / "yarn-site.xml").write_text(site.format("yarn.resourcemanager.webapp.address", f"127.0.0.1:{port}"))
    return conf


def put_fixture(folder: str) -> None:
    for part in FIXTURE.iterdir():
        FAKE.files[f"{folder}/{FIXTURE.name}/{part.name}"] = part.read_bytes()


def zipped(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as packed:
        for name, data in entries.items():
            packed.writestr(name, data)
    return buffer.getvalue()


def serve_fixture_app(app_id: str = APP_ID, completed: bool = True, attempt: str | None = None) -> None:
    """The fixture as the History Server lists and zips it (a rolled folder, its appstatus marker)."""
    FAKE.apps.append({"id": app_id, "name": "six", "attempts": [
        {"completed": completed, **({"attemptId": attempt} if attempt else {})}]})
    FAKE.zips[app_id] = zipped({f"{FIXTURE.name}/{p.name}": p.read_bytes() for p in FIXTURE.iterdir()})


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["trace", "import", *args])


def file_import(tmp_path: Path) -> str:
    out = tmp_path / "from-file.jsonl"
    assert invoke("--from-eventlog", str(FIXTURE), "--out", str(out)).exit_code == 0
    return out.read_text()


def one_error_line(result: Result, exit_code: int = 1) -> str:
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert result.exit_code == exit_code and len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


# --- HDFS ------------------------------------------------------------------------------------------

def test_an_hdfs_folder_is_searched_and_each_application_read_once(tmp_path: Path, server: str) -> None:
    put_fixture("/spark-logs")
    put_fixture("/spark-logs/copy")  # the same application again, deeper
    plain = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in _fixture_events())  # as Spark writes
    FAKE.files["/spark-logs/app-plain"] = plain.encode()  # no codec suffix: told by its first bytes
    FAKE.files["/spark-logs/notes.txt"] = b"not a log\n"
    FAKE.files["/spark-logs/.hidden/" + FIXTURE.name + "/events_1_x"] = b"never read"
    out = tmp_path / "hdfs.jsonl"
    result = invoke("--from-eventlog", "hdfs:///spark-logs", "--hadoop-conf-dir", str(conf_dir(tmp_path, server)),
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"trace import: cluster from --hadoop-conf-dir {tmp_path / 'conf'}" in result.stderr
    assert "read hdfs:///spark-logs/app-plain: " in result.output, result.output
    for again in (f"hdfs:///spark-logs/copy/{FIXTURE.name}", f"hdfs:///spark-logs/{FIXTURE.name}"):
        assert f"skipped {again}: application {APP_ID}, already read from hdfs:///spark-logs/app-plain" \
            in result.output
    assert out.read_text() == file_import(tmp_path)
    notes = "/webhdfs/v1/spark-logs/notes.txt OPEN"
    assert f"{notes} 64" in FAKE.seen and notes not in FAKE.seen  # its first bytes told, never copied
    assert not any(".hidden" in seen for seen in FAKE.seen)


def test_a_rolled_log_in_hdfs_gives_the_file_imports_trace_and_builds_estimates(tmp_path: Path,
                                                                                server: str) -> None:
    put_fixture("/logs")
    conf = str(conf_dir(tmp_path, server))
    out = tmp_path / "hdfs.jsonl"
    uri = f"hdfs://127.0.0.1:9000/logs/{FIXTURE.name}"
    result = invoke("--from-eventlog", uri, "--hadoop-conf-dir", conf, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"read {uri}: " in result.output and out.read_text() == file_import(tmp_path)
    built = CliRunner().invoke(main, ["estimates", "build", "hdfs:///logs", "--hadoop-conf-dir", conf,
                                      "--out", str(tmp_path / "e.json")])
    local = CliRunner().invoke(main, ["estimates", "build", str(FIXTURE), "--out", str(tmp_path / "l.json")])
    assert built.exit_code == 0 and local.exit_code == 0, built.output
    assert (tmp_path / "e.json").read_text() == (tmp_path / "l.json").read_text()


@pytest.mark.parametrize(("uri", "message"), [
    ("hdfs:///missing", "Error: hdfs:///missing: 404 from http://127.0.0.1:{port}/webhdfs/v1/missing: "
                        "File /missing does not exist."),
    ("hdfs://elsewhere:8020/logs", "Error: hdfs://elsewhere:8020/logs: not in the cluster's file system "
                                   "hdfs://127.0.0.1:9000 (its fs.defaultFS)"),
    ("hdfs://127.0.0.1:9000", "Error: hdfs://127.0.0.1:9000: not an hdfs:// path"),
    ("hdfs:///empty", "Error: hdfs:///empty: no Spark event log in it, at any depth"),
])
def test_a_bad_hdfs_path_is_one_line(tmp_path: Path, server: str, uri: str, message: str) -> None:
    FAKE.files["/empty/notes.txt"] = b"hello\n"
    result = invoke("--from-eventlog", uri, "--hadoop-conf-dir", str(conf_dir(tmp_path, server)),
                    "--out", str(tmp_path / "t.trace"))
    expected = message.format(port=urlsplit(server).port)
    assert one_error_line(result).startswith(expected), result.output
    assert not (tmp_path / "t.trace").exists()


def test_an_hdfs_file_over_the_size_limit_stops_there(tmp_path: Path, server: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    put_fixture("/logs")
    monkeypatch.setattr(webhdfs, "MAX_FETCH_BYTES", 1000)
    result = invoke("--from-eventlog", "hdfs:///logs", "--hadoop-conf-dir", str(conf_dir(tmp_path, server)),
                    "--out", str(tmp_path / "t.trace"))
    line = one_error_line(result)
    assert line.startswith("Error: hdfs:///logs: ") and "answered with more than 1000 bytes" in line
    assert f"/webhdfs/v1/logs/{FIXTURE.name}/events_1_{APP_ID}.zstd answered" in line


# --- the History Server ----------------------------------------------------------------------------

def test_the_history_servers_application_gives_the_file_imports_trace(tmp_path: Path, server: str) -> None:
    serve_fixture_app()
    serve_fixture_app("app-running", completed=False)
    out = tmp_path / "shs.jsonl"
    result = invoke("--from-history-server", server + "/", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"read {server}/api/v1/applications/{APP_ID}/logs/{FIXTURE.name}: " in result.output
    assert f"skipped {server}/api/v1/applications/app-running: application app-running, still running" \
        in result.output
    assert out.read_text() == file_import(tmp_path)
    assert f"{historyserver.API}/app-running/logs" not in FAKE.seen


def test_an_application_read_already_is_not_downloaded(tmp_path: Path, server: str) -> None:
    serve_fixture_app(attempt="2")
    result = invoke("--from-eventlog", str(FIXTURE), "--from-history-server", server, "--out",
                    str(tmp_path / "t.jsonl"))
    assert result.exit_code == 0, result.output
    assert f"skipped {server}/api/v1/applications/{APP_ID}: application {APP_ID}, already read from {FIXTURE}" \
        in result.output
    assert FAKE.seen == [historyserver.API]
    FAKE.seen.clear()
    again = invoke("--from-history-server", server, "--from-history-server", server, "--out", str(tmp_path / "t.jsonl"))
    assert again.exit_code == 0 and "imported 6 jobs" in again.output
    assert FAKE.seen.count(f"{historyserver.API}/{APP_ID}/2/logs") == 1  # its newest attempt, once


@pytest.mark.parametrize(("url", "message"), [
    ("ftp://127.0.0.1/", "Invalid value for '--from-history-server': ftp://127.0.0.1/: not a History Server's "
                         "address (http://HOST:18080)"),
    ("127.0.0.1:18080", "127.0.0.1:18080: not a History Server's address"),
])
def test_a_bad_history_server_address_is_a_usage_error(tmp_path: Path, url: str, message: str) -> None:
    assert message in one_error_line(invoke("--from-history-server", url, "--out", str(tmp_path / "t")), 2)


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_history_server_down_or_not_one_is_one_line(tmp_path: Path, server: str) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    line = one_error_line(invoke("--from-history-server", down, "--out", str(tmp_path / "t")))
    assert line.startswith(f"Error: {down}: cannot list its applications: cannot reach {down}")
    FAKE.apps = [{"id": "x"}]  # type: ignore[list-item]  # no attempts: not a History Server's listing
    line = one_error_line(invoke("--from-history-server", server, "--out", str(tmp_path / "t")))
    assert line.startswith(f"Error: {server}/api/v1/applications did not answer as a Spark History Server does")


def test_a_download_slower_than_its_deadline_ends_there(tmp_path: Path, server: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    serve_fixture_app()
    monkeypatch.setattr(historyserver, "FETCH_SECONDS", 1.5)
    FAKE.drip_s = 0.01  # ~50 KB at 100 bytes a second: over 8 minutes, and each byte within any read timeout
    started = time.monotonic()
    line = one_error_line(invoke("--from-history-server", server, "--out", str(tmp_path / "t")))
    assert time.monotonic() - started < 10
    assert line == (f"Error: {server}/api/v1/applications/{APP_ID}/logs: application {APP_ID}: "
                    f"{server}/api/v1/applications/{APP_ID}/logs: no whole reply within 1.5 s")


def test_a_zip_over_the_size_limit_stops_there(tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    serve_fixture_app()
    monkeypatch.setattr(historyserver, "MAX_FETCH_BYTES", 4096)
    line = one_error_line(invoke("--from-history-server", server, "--out", str(tmp_path / "t")))
    assert line.startswith(f"Error: {server}/api/v1/applications/{APP_ID}/logs: application {APP_ID}: ")
    assert "answered with more than 4096 bytes" in line


def _bomb() -> bytes:
    """A zip whose one entry declares 10 bytes and inflates to 64 MiB of zeros."""
    data = zipped({f"{FIXTURE.name}/events_1_{APP_ID}": bytes(64 << 20)})
    info = zipfile.ZipFile(io.BytesIO(data)).infolist()[0]
    local_size = 22  # the uncompressed size's offset in the local header
    central = data.rindex(b"PK\x01\x02")
    patched = bytearray(data)
    for offset in (info.header_offset + local_size, central + 24):
        patched[offset:offset + 4] = (10).to_bytes(4, "little")
    return bytes(patched)


@pytest.mark.parametrize(("archive", "message"), [
    (b"<html>a proxy's page</html>", "not a readable zip of event logs (BadZipFile"),
    (zipped({"../escaped/events_1_x": b"{}\n"}), "the zip holds '../escaped/events_1_x', a path outside its folder"),
    (zipped({"/etc/events_1_x": b"{}\n"}), "the zip holds '/etc/events_1_x', a path outside its folder"),
    (zipped({"notes.txt": b"hello\n"}), "no Spark event log in its zip"),
    (None, "not a readable zip of event logs (BadZipFile: Bad CRC-32 for file"),  # stopped at 10 bytes
], ids=["not-a-zip", "parent-path", "absolute-path", "no-log", "bomb"])
def test_a_zip_that_is_not_one_of_event_logs_is_one_line(tmp_path: Path, server: str, archive: bytes | None,
                                                         message: str) -> None:
    serve_fixture_app()
    FAKE.zips[APP_ID] = archive if archive is not None else _bomb()
    line = one_error_line(invoke("--from-history-server", server, "--out", str(tmp_path / "t")))
    assert f"{server}/api/v1/applications/{APP_ID}/logs" in line and message in line, line
    assert not (tmp_path / "escaped").exists()


def test_a_malformed_line_is_named_where_it_lives(tmp_path: Path, server: str) -> None:
    """A reader's message about the copy names the History Server's log, not the temporary copy."""
    serve_fixture_app()
    bad = b'{"Event":"SparkListenerLogStart"}\n{"Event":"SparkListenerApplicationStart","App ID":"a"}\n' \
          b'{"Event":"SparkListenerJobStart","Job ID":0}\n'
    FAKE.zips[APP_ID] = zipped({"a-log": bad})
    result = CliRunner().invoke(main, ["estimates", "build", "--from-history-server", server,
                                       "--out", str(tmp_path / "e.json")])
    line = one_error_line(result)
    assert line == (f"Error: {server}/api/v1/applications/{APP_ID}/logs/a-log line 3: SparkListenerJobStart "
                    "with no 'Submission Time'")


def _fixture_events() -> list[dict]:
    from bridge.history.logs import log_lines

    return [line.event for line in log_lines(FIXTURE) if line.event is not None]


def test_no_copy_is_left_behind(tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    serve_fixture_app()
    put_fixture("/logs")
    result = invoke("--from-history-server", server, "--from-eventlog", "hdfs:///logs", "--hadoop-conf-dir",
                    str(conf_dir(tmp_path, server)), "--out", str(tmp_path / "t.jsonl"))
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "tmp").iterdir()) == []
