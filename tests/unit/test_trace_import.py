"""`schedbridge trace import`: a real Spark event log (the committed fixture, six jobs of a local
PySpark session as Spark 4 wrote them: a rolled folder, zstd-compressed; made by
`tests/integration/spark_six_jobs.py`) and a ResourceManager's application list (a fake RM on
127.0.0.1 serving the JSON shapes of `ws/v1/cluster/apps`) into traces `simulate` plays, with
what was left out and why. Expected values are computed from the log's own events here."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bridge.cli import main
from bridge.history.logs import log_lines
from workloads.trace import read_trace

FIXTURE = next((Path(__file__).resolve().parents[1] / "fixtures").glob("eventlog_v2_*"))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["trace", "import", *args])


def fixture_events() -> list[dict]:
    return [line.event for line in log_lines(FIXTURE) if line.event is not None]


def plain_copy(where: Path, events: list[dict | str]) -> Path:
    """A single-file plain log of ``events`` (a string is written as a raw line)."""
    path = where / "app-plain"
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events))
    return path


def test_the_fixture_is_six_spark_jobs_and_imports_as_six_jobs_with_their_stages(tmp_path: Path) -> None:
    events = fixture_events()
    starts = [e for e in events if e["Event"] == "SparkListenerJobStart"]
    ends = [e for e in events if e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success"]
    assert len(starts) == 6
    out = tmp_path / "six.jsonl"
    result = invoke("--from-eventlog", str(FIXTURE), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "6 Spark jobs" in result.output and "imported 6 jobs" in result.output
    assert "left out" not in result.output  # every job succeeded, every task once
    jobs = read_trace(out)
    assert len(jobs) == 6
    first = starts[0]["Submission Time"]
    assert [j.submit for j in jobs] == pytest.approx([(s["Submission Time"] - first) / 1000 for s in starts])
    durations = sorted((e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"]) / 1000 for e in ends)
    assert sorted(d for j in jobs for d in j.durations) == pytest.approx(durations)
    # job 1 is a shuffle: its map stage first, the reduce after it; job 2 reads that shuffle again,
    # so its map stage (run by job 1) is left out and it is one stage of 3 tasks
    assert jobs[1].stage_parents == ((), (0,)) and jobs[1].stage_of == (0,) * 4 + (1,) * 3
    assert jobs[2].stage_parents == ((),) and jobs[2].n_tasks == 3
    assert all(j.stage_of is not None for j in jobs)


@pytest.mark.parametrize("name", ["six.trace", "six.jsonl"])
def test_simulate_plays_the_imported_trace(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    assert invoke("--from-eventlog", str(FIXTURE), "--out", str(out)).exit_code == 0
    played = CliRunner().invoke(main, ["simulate", "--trace", str(out), "--policy", "fifo", "--nodes", "2", "--json"])
    assert played.exit_code == 0, played.output
    summary = json.loads(played.stdout.splitlines()[-1])
    assert summary["finished_jobs"] == 6 and summary["tasks"] == 33


def test_a_plain_copy_gives_the_same_trace(tmp_path: Path) -> None:
    rolled, plain = tmp_path / "rolled.trace", tmp_path / "plain.trace"
    assert invoke("--from-eventlog", str(FIXTURE), "--out", str(rolled)).exit_code == 0
    log = plain_copy(tmp_path, fixture_events())
    assert invoke("--from-eventlog", str(log), "--out", str(plain)).exit_code == 0
    assert plain.read_text() == rolled.read_text()


def test_what_is_left_out_is_counted_with_reasons_and_line_numbers(tmp_path: Path) -> None:
    events: list[dict | str] = list(fixture_events())
    job_ends = [i for i, e in enumerate(events) if isinstance(e, dict) and e["Event"] == "SparkListenerJobEnd"]
    events[job_ends[3]] = {**events[job_ends[3]], "Job Result": {"Result": "JobFailed"}}  # job 3 failed
    task_ends = [i for i, e in enumerate(events) if isinstance(e, dict) and e["Event"] == "SparkListenerTaskEnd"]
    failed = dict(events[task_ends[0]])
    failed["Task End Reason"] = {"Reason": "ExceptionFailure"}
    events.insert(task_ends[0], failed)  # a failed attempt before job 0's first task succeeded
    del events[task_ends[-1] + 1]  # job 5's last task never ends
    events.insert(5, '{"Event": "SparkListenerTaskEnd", "Stage')  # line 6: cut short
    events.insert(7, {"Event": "SparkListenerJobStart", "Job ID": 99})  # line 8: no submission time
    out = tmp_path / "t.trace"
    result = invoke("--from-eventlog", str(plain_copy(tmp_path, events)), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "2 malformed lines (app-plain line 6: not JSON: " in result.output
    assert "app-plain line 8: SparkListenerJobStart with no 'Submission Time'" in result.output
    assert "1 failed Spark jobs (" in result.output and "job 3)" in result.output
    assert "1 task attempts that did not succeed (exceptionfailure)" in result.output
    assert "1 tasks started but never finished" in result.output
    jobs = read_trace(out)
    assert len(jobs) == 5 and jobs[-1].n_tasks == 1  # job 5 kept, with its one finished task


def test_a_log_with_no_job_writes_nothing(tmp_path: Path) -> None:
    log = plain_copy(tmp_path, [e for e in fixture_events() if not e["Event"].startswith("SparkListenerJob")])
    out = tmp_path / "t.trace"
    result = invoke("--from-eventlog", str(log), "--out", str(out))
    assert result.exit_code == 1 and "no job to import: nothing written" in result.output
    assert not out.exists()


@pytest.mark.parametrize("args,message", [
    ((), "give --from-eventlog PATH (repeatable) or --from-rm URL, one of the two"),
    (("--from-eventlog", str(FIXTURE), "--from-rm", "http://127.0.0.1:9"), "one of the two"),
    (("--from-eventlog", str(FIXTURE), "--format", "jsonl"), "--format jsonl needs a .jsonl name"),
])
def test_bad_command_lines_are_one_error(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    result = invoke(*args, "--out", str(tmp_path / "t.trace"))
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_a_log_in_a_codec_it_cannot_read_is_one_error_naming_it(tmp_path: Path) -> None:
    log = tmp_path / "app-1.lz4"
    log.write_bytes(b"LZ4Block\x00")
    result = invoke("--from-eventlog", str(log), "--out", str(tmp_path / "t.trace"))
    assert result.exit_code == 1, result.output
    assert f"{log}: a lz4-compressed Spark event log" in result.output
    assert "spark.eventLog.compression.codec=zstd" in result.output


# --- the ResourceManager's applications --------------------------------------------------------

def app(app_id: str, state: str, final: str, started: int, finished: int, vcore_seconds: int = 0) -> dict:
    """An application as the RM's REST API lists it (the fields this reader uses, and a few more)."""
    return {"id": app_id, "user": "alice", "name": f"job {app_id[-2:]}", "queue": "default", "state": state,
            "finalStatus": final, "progress": 100.0, "applicationType": "SPARK", "priority": 0,
            "startedTime": started, "launchTime": started + 500, "finishedTime": finished,
            "elapsedTime": max(finished - started, 0), "allocatedVCores": -1, "vcoreSeconds": vcore_seconds,
            "memorySeconds": vcore_seconds * 1024, "diagnostics": ""}


T0 = 1_795_000_000_000
APPS = [app("application_1_0001", "FINISHED", "SUCCEEDED", T0, T0 + 10_000, vcore_seconds=41),
        app("application_1_0002", "FINISHED", "FAILED", T0 + 1_000, T0 + 5_000, vcore_seconds=8),
        app("application_1_0003", "KILLED", "KILLED", T0 + 2_000, T0 + 3_000),
        app("application_1_0004", "FINISHED", "SUCCEEDED", T0 + 4_500, T0 + 6_500),  # no vcore-seconds
        app("application_1_0005", "RUNNING", "UNDEFINED", T0 + 7_000, 0, vcore_seconds=3),
        app("application_1_0006", "ACCEPTED", "UNDEFINED", T0 + 8_000, 0)]


@pytest.fixture
def rm() -> Iterator[dict]:
    """A fake RM on 127.0.0.1: GET /ws/v1/cluster/apps answers ``served["body"]``."""
    served: dict = {"body": {"apps": {"app": APPS}}}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(served["body"]).encode()
            self.send_response(200 if self.path.startswith("/ws/v1/cluster/apps") else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield served
    server.shutdown()
    server.server_close()
    thread.join()


def test_each_finished_application_is_a_job_of_its_average_vcores(tmp_path: Path, rm: dict) -> None:
    out = tmp_path / "yarn.trace"
    result = invoke("--from-rm", rm["url"], "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"read {rm['url']}/ws/v1/cluster/apps: 6 applications" in result.output
    assert "1 failed applications (application_1_0002)" in result.output
    assert "1 killed applications (application_1_0003)" in result.output
    assert "2 unfinished applications (application_1_0005 RUNNING; application_1_0006 ACCEPTED)" in result.output
    jobs = read_trace(out)
    # 41 vcore-seconds over 10 s: 4 vcores on average, each for the 10 s; no vcore-seconds: one task
    assert [(j.submit, j.durations) for j in jobs] == [(0.0, (10.0,) * 4), (4.5, (2.0,))]
    assert invoke("--from-rm", rm["url"], "--rm-tasks", "one", "--out", str(out)).exit_code == 0
    assert [j.durations for j in read_trace(out)] == [(10.0,), (2.0,)]
    played = CliRunner().invoke(main, ["simulate", "--trace", str(out), "--policy", "fifo", "--nodes", "1", "--json"])
    assert played.exit_code == 0 and json.loads(played.stdout.splitlines()[-1])["finished_jobs"] == 2


def test_an_rm_with_no_finished_application_or_a_reply_not_yarns_is_one_error(tmp_path: Path, rm: dict) -> None:
    out = tmp_path / "yarn.trace"
    rm["body"] = {"apps": {"app": APPS[4:]}}
    result = invoke("--from-rm", rm["url"], "--out", str(out))
    assert result.exit_code == 1 and "no job to import: nothing written" in result.output
    rm["body"] = {"apps": {"app": [{"name": "no id"}]}}
    result = invoke("--from-rm", rm["url"], "--out", str(out))
    assert result.exit_code == 1 and "did not answer as YARN does" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_an_rm_that_cannot_be_reached_is_one_error_naming_it(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = invoke("--from-rm", f"http://127.0.0.1:{port}", "--out", str(tmp_path / "t.trace"))
    assert result.exit_code == 1 and f"cannot reach http://127.0.0.1:{port}" in result.output
