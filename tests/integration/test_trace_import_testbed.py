"""`trace import` against the testbed: `--from-rm` through its real ResourceManager (two
distributed-shell applications, one succeeds, one fails, and whatever ran before them become a
YARN-level trace, one job per successful application, that `simulate` plays), and an event log
in its HDFS through WebHDFS."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.common.paths import hadoop_lib_dir
from bridge.testbed import dshell
from workloads.trace import read_trace
from yarnclient import ResourceManagerClient
from yarnclient.hdfs import hdfs_client

pytestmark = pytest.mark.integration


def test_the_testbeds_applications_import_as_a_yarn_level_trace(testbed, tmp_path: Path) -> None:
    rm = ResourceManagerClient(testbed.rm_url, user=testbed.layout.user)
    hdfs = hdfs_client(testbed.hdfs_url, user=testbed.layout.user)
    submitted = {status: dshell.submit(rm, dshell.distributed_shell(
                     hdfs, testbed.fs_default, testbed.conf_dir, hadoop_lib_dir(), ["sh", "-c", command]))
                 for status, command in (("SUCCEEDED", "sleep 1"), ("FAILED", "exit 3"))}  # side by side
    apps = {status: dshell.wait_until_done(rm, app_id, timeout_s=180) for status, app_id in submitted.items()}
    assert {status: app.final_status for status, app in apps.items()} == {s: s for s in apps}
    out = tmp_path / "yarn.jsonl"
    result = CliRunner().invoke(main, ["trace", "import", "--from-rm", testbed.rm_url, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"read {testbed.rm_url}/ws/v1/cluster/apps: " in result.output and "failed applications" in result.output
    jobs = read_trace(out)
    [mine] = [j for j in jobs if j.name.startswith(apps["SUCCEEDED"].app_id + " ")]
    ok = apps["SUCCEEDED"]
    assert set(mine.durations) == {(ok.finished_ms - ok.started_ms) / 1000}
    assert not any(j.name.startswith(apps["FAILED"].app_id + " ") for j in jobs)
    played = CliRunner().invoke(main, ["simulate", "--trace", str(out), "--policy", "fifo", "--nodes", "4", "--json"])
    assert played.exit_code == 0, played.output
    assert json.loads(played.stdout.splitlines()[-1])["finished_jobs"] == len(jobs)


def test_an_event_log_in_hdfs_imports_as_from_its_file(testbed, tmp_path: Path) -> None:
    """The committed rolled log, put in the testbed's HDFS, read back over WebHDFS (the NameNode
    sends each read on to the DataNode) into the trace its local copy gives."""
    fixture = next((Path(__file__).resolve().parents[1] / "fixtures").glob("eventlog_v2_*"))
    hdfs = hdfs_client(testbed.hdfs_url, user=testbed.layout.user)
    for part in fixture.iterdir():
        hdfs.write(f"/tmp/schedbridge-events/{fixture.name}/{part.name}", data=part.read_bytes(), overwrite=True)
    from_file, from_hdfs = tmp_path / "file.jsonl", tmp_path / "hdfs.jsonl"
    result = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(fixture), "--out", str(from_file)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", "hdfs:///tmp/schedbridge-events",
                                       "--hadoop-conf-dir", str(testbed.conf_dir), "--out", str(from_hdfs)])
    assert result.exit_code == 0, result.output
    assert f"read hdfs:///tmp/schedbridge-events/{fixture.name}: " in result.output
    assert from_hdfs.read_text() == from_file.read_text()
