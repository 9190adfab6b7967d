"""`trace import` on the event log of a real local PySpark session of six jobs (`local[2]`, no YARN),
as Spark 4 writes it by default (a rolled folder, zstd-compressed): a trace of six jobs, with the
session's task counts, that `simulate` plays. The session runs in its own process (a fresh JVM whose
event-log settings no earlier session of this process can have fixed)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.replay.eventlog import application_events
from tests.integration.process_output import failure_excerpt
from tests.integration.spark_six_jobs import JOBS
from workloads.trace import read_trace

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_a_local_session_of_six_jobs_imports_as_six_jobs_that_simulate_plays(tmp_path: Path) -> None:
    events = tmp_path / "events"
    done = subprocess.run([sys.executable, "-m", "tests.integration.spark_six_jobs", str(events)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    [log] = [p for p in events.iterdir() if not p.name.startswith(".")]
    assert log.name.startswith("eventlog_v2_") and any(p.suffix == ".zstd" for p in log.iterdir())  # Spark 4's default
    ends = [e for e in application_events(log) if e["Event"] == "SparkListenerTaskEnd"]
    out = tmp_path / "six.jsonl"
    imported = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(log), "--out", str(out)])
    assert imported.exit_code == 0, imported.output
    jobs = read_trace(out)
    assert len(jobs) == JOBS == 6
    assert sum(j.n_tasks for j in jobs) == len(ends)  # every task succeeded once
    assert jobs[2].n_tasks == 3 and jobs[1].stage_parents == ((), (0,))  # the shuffle read again: reduce only
    played = CliRunner().invoke(main, ["simulate", "--trace", str(out), "--policy", "fifo", "--nodes", "2", "--json"])
    assert played.exit_code == 0, played.output
    assert json.loads(played.stdout.splitlines()[-1])["finished_jobs"] == 6
