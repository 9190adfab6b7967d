"""The testbed's Spark History Server as a source of `trace import`: an application run on the
testbed writes its event log where the History Server reads (the testbed's Spark defaults), and
once it has finished, its jobs imported through the History Server's REST API are the jobs its
log file gives; `testbed status` names the server's address."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.target.spark import spark_submit
from tests.integration.process_output import failure_excerpt
from workloads.model import Job
from workloads.trace import read_trace
from yarnclient import YarnError
from yarnclient.http import RestSession

# make test-long: a Spark application and a History Server's replay of its log (about 110 s of the
# testbed lane, which is make test's critical path); make test reads history over WebHDFS
pytestmark = [pytest.mark.integration, pytest.mark.long]
JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("history-server-source").getOrCreate()
sc = spark.sparkContext
print("app", sc.applicationId)
sc.parallelize(range(400), 4).map(lambda x: x * x).sum()
sc.parallelize(range(400), 4).map(lambda x: (x % 7, x)).reduceByKey(int.__add__, 3).collect()
spark.stop()
"""
LISTED_WITHIN_S = 120  # the server scans its folder every 2 s; a loaded 2-core host is slow to start


def _completed(url: str, app_id: str) -> bool:
    session = RestSession(url, timeout=(2, 10), retries=0)
    try:
        return bool(session.request("GET", f"/api/v1/applications/{app_id}")["attempts"][0]["completed"])
    except (YarnError, KeyError, IndexError, TypeError):
        return False
    finally:
        session.close()


def _mine(jobs: list[Job], app_id: str) -> list[tuple]:
    """The application's jobs, their submissions from its first: comparable across traces of
    different sets of applications."""
    own = [j for j in jobs if j.name.startswith(f"{app_id} job ")]
    first = min(j.submit for j in own)
    return [(j.name, round(j.submit - first, 3), j.durations, j.stage_of, j.stage_parents) for j in own]


def test_a_finished_application_imports_through_the_history_server_as_from_its_log(testbed, tmp_path: Path) -> None:
    layout = testbed.layout
    status = CliRunner().invoke(main, ["testbed", "status"])
    assert f"Spark History Server: {layout.history_server_url}" in status.output
    job = tmp_path / "job.py"
    job.write_text(JOB)
    done = subprocess.run([str(spark_submit()), "--master", "yarn", "--num-executors", "2", str(job)],
                          env=testbed.spark_env(), capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    [app_id] = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("app ")]
    log = layout.spark_events_dir / f"eventlog_v2_{app_id}"
    assert log.is_dir(), f"no event log of {app_id} in {layout.spark_events_dir}"
    deadline = time.monotonic() + LISTED_WITHIN_S
    while not _completed(layout.history_server_url, app_id):
        assert time.monotonic() < deadline, f"{layout.history_server_url} did not list {app_id} as completed"
        time.sleep(1)

    from_file, through_server = tmp_path / "file.jsonl", tmp_path / "server.jsonl"
    result = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(log), "--out", str(from_file)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["trace", "import", "--from-history-server", layout.history_server_url,
                                       "--out", str(through_server)])
    assert result.exit_code == 0, result.output
    assert f"read {layout.history_server_url}/api/v1/applications/{app_id}/logs/{log.name}: " in result.output
    mine = _mine(read_trace(from_file), app_id)
    assert len(mine) == 2 and _mine(read_trace(through_server), app_id) == mine
    # the application once, even given both ways
    both = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(log), "--from-history-server",
                                     layout.history_server_url, "--out", str(tmp_path / "both.jsonl")])
    assert both.exit_code == 0, both.output
    assert f"skipped {layout.history_server_url}/api/v1/applications/{app_id}: application {app_id}" in both.output
    assert _mine(read_trace(tmp_path / "both.jsonl"), app_id) == mine
