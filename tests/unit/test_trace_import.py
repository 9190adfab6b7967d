"""`schedbridge trace import`: a real Spark event log (the committed fixture, six jobs of a local
PySpark session as Spark 4 wrote them: a rolled folder, zstd-compressed; made by
`tests/integration/spark_six_jobs.py`) and a ResourceManager's application list (a fake RM on
127.0.0.1 serving the JSON shapes of `ws/v1/cluster/apps`) into traces `simulate` plays, with
what was left out and why. Expected values are computed from the log's own events here."""
from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from bridge.apps.report.eventlog import load_event_log
from bridge.apps.traceimport.cluster import Executor, Shape, at_peak, shape_of
from bridge.cli import main
from bridge.common.metrics import reporting_cutoff
from bridge.history.logs import log_lines
from workloads.trace import read_trace, stated_cluster

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


def test_a_folder_of_applications_is_read_each_once(tmp_path: Path) -> None:
    spark_events = tmp_path / "spark-events"
    shutil.copytree(FIXTURE, spark_events / FIXTURE.name)
    shutil.copytree(FIXTURE, spark_events / "copy" / FIXTURE.name)  # the same application again, deeper
    (spark_events / "notes.txt").write_text("not a log\n")
    out = tmp_path / "t.trace"
    result = invoke("--from-eventlog", str(spark_events), "--out", str(out))
    assert result.exit_code == 0, result.output
    first, again = spark_events / "copy" / FIXTURE.name, spark_events / FIXTURE.name
    assert f"skipped {again}: application {FIXTURE.name.removeprefix('eventlog_v2_')}, already read from {first}" \
        in result.output
    assert sum(line.startswith("read ") for line in result.output.splitlines()) == 1
    assert "imported 6 jobs" in result.output
    assert len(read_trace(out)) == 6
    result = invoke("--from-eventlog", str(tmp_path / "spark-events" / "copy"), "--from-eventlog", str(FIXTURE),
                    "--out", str(out))  # the same application given twice, by a folder and by its log
    assert result.exit_code == 0 and "skipped " in result.output and len(read_trace(out)) == 6


def test_a_folder_without_a_log_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = invoke("--from-eventlog", str(tmp_path / "empty"), "--out", str(tmp_path / "t.trace"))
    assert result.exit_code == 1 and "no Spark event log in it, at any depth" in result.output


def live_p50s(log: Path) -> tuple[float, float]:
    """The application's all-job and short-job JCT p50 as it ran, from its own log (`report`'s reader)."""
    run = load_event_log(log)
    jct = run.jobs["finish"] - run.jobs["submit"]
    cutoff = reporting_cutoff(list(run.jobs["mean_duration"]))
    return float(jct.median()), float(jct[run.jobs["mean_duration"] <= cutoff].median())


def test_the_trace_records_the_cluster_and_simulate_plays_it_there(tmp_path: Path) -> None:
    out = tmp_path / "six.jsonl"
    result = invoke("--from-eventlog", str(FIXTURE), "--out", str(out))
    assert result.exit_code == 0, result.output
    # local[2]: the driver is the one executor, of 2 cores, one task each
    assert "cluster 1 x 2 slots (1 executor of 2 slots at the peak)" in result.output
    assert stated_cluster(out) == (1, 2)
    played = CliRunner().invoke(main, ["simulate", "--trace", str(out), "--policy", "fifo", "--json",
                                       "--out", str(tmp_path / "jobs.csv")])
    assert played.exit_code == 0, played.output
    summary = json.loads(played.stdout.splitlines()[-1])
    assert (summary["nodes"], summary["slots_per_node"]) == (1, 2)
    all_live, short_live = live_p50s(FIXTURE)
    jobs = pd.read_csv(tmp_path / "jobs.csv")
    assert float(jobs["completion_time"].median()) == pytest.approx(all_live, rel=0.2)
    assert summary["jct"]["short"]["p50"] == pytest.approx(short_live, rel=0.2)
    assert summary["utilization"] > 0.7  # on 2 nodes x 2 slots it was 0.42 (0.83 live)
    given = CliRunner().invoke(main, ["simulate", "--trace", str(out), "--policy", "fifo", "--json", "--nodes", "2"])
    assert json.loads(given.stdout.splitlines()[-1])["nodes"] == 2  # --nodes still decides
    ranked = CliRunner().invoke(main, ["rank", str(out), "--policy", "fifo", "--workers", "1",
                                       "--out", str(tmp_path / "rank")])
    assert ranked.exit_code == 0, ranked.output
    assert "cluster 1 nodes x 2 slots = 2 slots" in ranked.output


def test_the_cluster_is_the_executors_alive_when_the_most_slots_were() -> None:
    inf = float("inf")
    # a and b overlap (4 slots); b and c too, but c comes as a goes: 4 again, not 6; then d joins: 6
    executors = [Executor("a", 0, 10, 2), Executor("b", 5, inf, 2), Executor("c", 10, 30, 2),
                 Executor("d", 20, 25, 2), Executor("e", 40, inf, 8)]
    assert [e.name for e in at_peak(executors[:4])] == ["b", "c", "d"]
    assert shape_of(executors[:4]) == Shape(3, 2, "3 executors of 2 slots at the peak")
    mixed = shape_of(executors[:2] + [Executor("f", 6, 9, 4)])  # 2 + 2 + 4 slots at once
    assert mixed.nodes is None and "executors of different sizes at the peak (2 of 2 slots, 1 of 4 slots)" in mixed.why
    assert [e.name for e in at_peak(executors)] == ["b", "e"]  # 10 slots, after the others left


def test_an_executor_runs_its_cores_over_spark_task_cpus_tasks(tmp_path: Path) -> None:
    events = fixture_events()
    for event in events:
        if event["Event"] == "SparkListenerEnvironmentUpdate":
            event["Spark Properties"] = {**event["Spark Properties"], "spark.task.cpus": "2"}
    out = tmp_path / "t.trace"
    result = invoke("--from-eventlog", str(plain_copy(tmp_path, events)), "--out", str(out))
    assert result.exit_code == 0 and stated_cluster(out) == (1, 1), result.output


def test_without_nodes_a_trace_stating_no_cluster_is_a_usage_error(tmp_path: Path) -> None:
    trace_file = tmp_path / "t.trace"
    trace_file.write_text("0 1 1.0 1.0\n")
    for command in (["simulate", "--trace", str(trace_file), "--policy", "fifo"], ["rank", str(trace_file)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2 and "states no cluster" in result.output, result.output
    trace_file.write_text("# cluster=2xfour\n0 1 1.0 1.0\n")
    result = CliRunner().invoke(main, ["simulate", "--trace", str(trace_file), "--policy", "fifo"])
    assert result.exit_code == 1 and f"{trace_file}:1: field 'cluster': expected NODESxSLOTS" in result.output


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
    ((), "give --from-eventlog PATH or --from-history-server URL (each repeatable), or --from-rm [URL], one of "
         "the two"),
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
            info = self.path.startswith("/ws/v1/cluster/info")  # asked by a client of several RMs (HA)
            body = json.dumps({"clusterInfo": {"haState": "ACTIVE"}} if info else served["body"]).encode()
            self.send_response(200 if info or self.path.startswith("/ws/v1/cluster/apps") else 404)
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


def yarn_site(conf_dir: Path, properties: dict[str, str]) -> Path:
    conf_dir.mkdir()
    (conf_dir / "yarn-site.xml").write_text("<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in properties.items())
        + "</configuration>")
    return conf_dir


def test_from_rm_without_a_url_reads_the_hadoop_configuration_with_ha(tmp_path: Path, rm: dict,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as probe:  # rm1: a port nothing listens on (a ResourceManager down)
        probe.bind(("127.0.0.1", 0))
        down = probe.getsockname()[1]
    conf = yarn_site(tmp_path / "conf", {
        "yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
        "yarn.resourcemanager.webapp.address.rm1": f"127.0.0.1:{down}",
        "yarn.resourcemanager.webapp.address.rm2": rm["url"].removeprefix("http://")})
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    out = tmp_path / "yarn.trace"
    result = invoke("--from-rm", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"$HADOOP_CONF_DIR {conf}: ResourceManager http://127.0.0.1:{down}, {rm['url']}" in result.output
    assert f"read {rm['url']}/ws/v1/cluster/apps: 6 applications" in result.output  # rm2, the active one
    assert len(read_trace(out)) == 2
    monkeypatch.delenv("HADOOP_CONF_DIR")
    single = yarn_site(tmp_path / "single", {"yarn.resourcemanager.webapp.address": rm["url"].removeprefix("http://")})
    result = invoke("--from-rm", "--hadoop-conf-dir", str(single), "--out", str(out))
    assert result.exit_code == 0 and f"--hadoop-conf-dir {single}: ResourceManager {rm['url']}" in result.output
    result = invoke("--from-rm", rm["url"], "--hadoop-conf-dir", str(single), "--out", str(out))
    assert result.exit_code == 2 and "--hadoop-conf-dir names the cluster of --from-rm given without a URL" \
        in result.output
