"""`schedbridge report` on a Spark application's own event log: JCTs from job start/end, placements
from the plugin's records, Spark 4's rolled folder and plain files, side by side with a replay, and
one error line for what it cannot read.

The event lines have the shapes Spark 4.3 wrote with the plugin (hawk, local[2], the policy host
beside the driver), copied from a real log and cut to the fields a reader may use; unit tests start
no JVM (test_sparkplugin_local.py reports on a real log in the integration suite).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.apps.report.cli import report
from bridge.apps.report.load import load_runs
from bridge.apps.report.table import build
from tests.unit.test_report import make_run
from tests.unit.test_report_inputs import assert_one_error_line

APP, T0 = "local-1795736029229", 1795736028039  # application id, start (ms since the epoch)


def task(stage: int, tid: int, launch_s: float, finish_s: float, by: str = "POLICY") -> list[dict]:
    info = {"Task ID": tid, "Index": tid, "Attempt": 0, "Partition ID": tid, "Launch Time": T0 + int(launch_s * 1000),
            "Executor ID": "driver", "Host": "192.0.2.2", "Locality": "PROCESS_LOCAL", "Speculative": False,
            "Getting Result Time": 0, "Finish Time": 0, "Failed": False, "Killed": False, "Accumulables": []}
    return [{"Event": "SparkListenerTaskStart", "Stage ID": stage, "Stage Attempt ID": 0, "Task Info": info},
            {"Event": "org.schedbridge.spark.PlacementEvent", "policy": "hawk", "round": tid + 1, "by": by,
             "taskId": tid, "task": f"task {tid}.0 in stage {stage}.0 (TID {tid})", "executor": "driver"},
            {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0, "Task Type": "ResultTask",
             "Task End Reason": {"Reason": "Success"},
             "Task Info": {**info, "Finish Time": T0 + int(finish_s * 1000)}}]


def job(job_id: int, submit_s: float, end_s: float | None, tasks: list[list[dict]]) -> list[dict]:
    start = {"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": T0 + int(submit_s * 1000),
             "Stage Infos": [], "Stage IDs": [job_id],
             "Properties": {"callSite.short": "sum at gen.py:15", "schedbridge.estimate": "0.1"}}
    end = [] if end_s is None else [{"Event": "SparkListenerJobEnd", "Job ID": job_id,
                                     "Completion Time": T0 + int(end_s * 1000),
                                     "Job Result": {"Result": "JobSucceeded"}}]
    return [start, *(e for t in tasks for e in t), *end]


def application(jobs: list[list[dict]]) -> list[dict]:
    head = [{"Event": "SparkListenerLogStart", "Spark Version": "4.3.0"},
            {"Event": "SparkListenerExecutorAdded", "Timestamp": T0 + 1652, "Executor ID": "driver",
             "Executor Info": {"Host": "192.0.2.2", "Total Cores": 2, "Log Urls": {}, "Attributes": {},
                               "Resources": {}, "Resource Profile Id": 0}},
            {"Event": "SparkListenerApplicationStart", "App Name": "pyspark-shell", "App ID": APP,
             "Timestamp": T0, "User": "root"}]
    return [*head, *(e for j in jobs for e in j)]


TWO_JOBS = [job(0, 4.0, 7.0, [task(0, 0, 4.1, 6.0), task(0, 1, 4.1, 6.5, by="FALLBACK")]),
            job(1, 8.0, 9.0, [task(1, 2, 8.1, 8.9), task(1, 3, 8.1, 8.9, by="UNMANAGED")])]


def lines(events: list[dict]) -> str:
    return "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)  # compact, as Spark writes


def rolled(where: Path, events: list[dict], parts: int = 1) -> Path:
    """Spark 4's default layout: eventlog_v2_<app>/events_<n>_<app> and an appstatus file."""
    folder = where / f"eventlog_v2_{APP}"
    folder.mkdir(parents=True)
    (folder / f"appstatus_{APP}").write_text("")
    cut = len(events) // parts
    for n in range(parts):
        (folder / f"events_{n + 1}_{APP}").write_text(lines(events[n * cut:None if n == parts - 1 else (n + 1) * cut]))
    return folder


def test_a_rolled_log_gives_jcts_and_who_placed_each_task(tmp_path: Path) -> None:
    table = build(load_runs([rolled(tmp_path, application(TWO_JOBS), parts=3)]), 100.0)
    column = table[f"hawk ({APP})"]
    assert column["jobs"] == 2 and column["succeeded"] == 2
    assert column["short mean JCT (s)"] == pytest.approx(2.0)  # 3 s and 1 s
    assert column["makespan (s)"] == pytest.approx(5.0)  # first submission at 4 s, last end at 9 s
    assert column["tasks placed by policy"] == 2 and column["tasks placed in fallback"] == 1
    assert column["tasks not managed"] == 1
    assert 0 < column["utilization"] <= 1  # 2 cores from the executor


def test_a_plain_single_file_log_is_told_by_its_first_line(tmp_path: Path) -> None:
    log = tmp_path / APP
    log.write_text(lines(application(TWO_JOBS)))
    [run] = load_runs([log])
    assert list(run.jobs["finish"] - run.jobs["submit"]) == pytest.approx([3.0, 1.0])
    assert run.n_slots == 2 and len(run.tasks) == 4


def test_a_compacted_rolled_log_is_read_from_its_last_compact_part(tmp_path: Path) -> None:
    folder = rolled(tmp_path, application(TWO_JOBS[:1]))
    (folder / f"events_1_{APP}").write_text(lines(application([job(7, 0.0, 50.0, [])])))  # superseded
    (folder / f"events_2_{APP}.compact").write_text(lines(application(TWO_JOBS[:1])))
    (folder / f"events_3_{APP}").write_text(lines(TWO_JOBS[1]))
    [run] = load_runs([folder])
    assert list(run.jobs["job_id"]) == [0, 1]


def test_a_zstd_compressed_rolled_log_reads_as_the_plain_one(tmp_path: Path) -> None:
    """Spark 4's default: each part zstd-compressed (here by pyarrow's zstd, the reader's too; the
    integration suite reads one Spark compressed), named .zstd or, renamed, told by its magic."""
    import pyarrow as pa

    folder = rolled(tmp_path, application(TWO_JOBS), parts=2)
    for n, name in ((1, f"events_1_{APP}.zstd"), (2, f"events_2_{APP}")):
        plain = folder / f"events_{n}_{APP}"
        data = plain.read_bytes()
        plain.unlink()
        with pa.CompressedOutputStream(str(folder / name), "zstd") as out:
            out.write(data)
    [run] = load_runs([folder])
    assert list(run.jobs["finish"] - run.jobs["submit"]) == pytest.approx([3.0, 1.0]) and len(run.tasks) == 4


@pytest.mark.parametrize("name,data,codec", [
    (f"events_1_{APP}.lz4", b"LZ4Block", "lz4"),
    (f"events_1_{APP}.snappy", b"\x82SNAPPY\x00", "snappy"),
    (f"events_1_{APP}.lzf", b"ZV", "lzf"),
])
def test_a_compressed_log_is_one_error_naming_the_file_and_the_fix(tmp_path: Path, name: str, data: bytes,
                                                                    codec: str) -> None:
    folder = tmp_path / f"eventlog_v2_{APP}"
    folder.mkdir()
    (folder / name).write_bytes(data)
    result = CliRunner().invoke(report, [str(folder)])
    assert_one_error_line(result, str(folder / name), f"a {codec}-compressed Spark event log",
                          "spark.eventLog.compress=false")


def test_an_event_log_beside_a_replay_and_the_report_written_beside_the_log(tmp_path: Path) -> None:
    log = rolled(tmp_path / "spark-events", application(TWO_JOBS))
    replay = make_run(tmp_path / "fifo", "fifo", [2.0, 2.0])
    result = CliRunner().invoke(report, [str(log), str(replay)])
    assert result.exit_code == 0, result.output
    header = result.output.splitlines()[1]  # under the reporting cutoff
    assert f"hawk ({APP})" in header and "fifo shared (live)" in header
    out = tmp_path / "spark-events" / f"report-{log.name}"  # not eventlog_v2_*: Spark's History Server skips it
    assert (out / "report.csv").is_file() and (out / "jct_cdf.png").is_file()
    assert sorted(p.name for p in log.iterdir()) == [f"appstatus_{APP}", f"events_1_{APP}"]


def test_a_log_cut_before_a_job_ended_is_refused_unless_partial(tmp_path: Path) -> None:
    log = tmp_path / APP
    log.write_text(lines(application([TWO_JOBS[0], job(1, 8.0, None, [task(1, 2, 8.1, 8.9)])])))
    refused = CliRunner().invoke(report, [str(log)])
    assert refused.exit_code == 1 and "the event log ends before some jobs did" in refused.output
    assert "job(s) never finished: 1" in refused.output
    partial = CliRunner().invoke(report, [str(log), "--partial"])
    assert partial.exit_code == 0 and "[partial]" in partial.output.splitlines()[1]


def test_an_event_without_a_field_the_report_reads_is_one_error_line(tmp_path: Path) -> None:
    events = application(TWO_JOBS)
    del next(e for e in events if e["Event"] == "SparkListenerJobStart")["Submission Time"]
    log = tmp_path / APP
    log.write_text(lines(events))
    assert_one_error_line(CliRunner().invoke(report, [str(log)]), str(log), "Submission Time")
