"""The Spark plugin on the real testbed (YARN, 2 NodeManagers): executors come from YARN
containers, and an application's results (WordCount, SQL, TPC-H Q1 and Q6, a long job) are
right, checked against answers computed here (Python for WordCount and the SQL, DuckDB for
TPC-H): under Hawk through a `schedbridge serve` daemon, whose placement is visible in its log
(long stages only on its general partition). (A policy hosted in the driver's own process on
YARN, with its answers checked, is every replay's: test_replay_testbed.py and the demo; the other
policies run live in the demo, the replays and the `--preempt` tests.)"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.process_output import failure_excerpt
from tests.integration.sparkplugin_support import LINES, DaemonProcess, hawk_grants_over_two_executors
from workloads.tpch.datagen import generate
from workloads.tpch.reference import check_answer, duckdb_answers

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parent / "jobs" / "sparkplugin_app.py"
QUERIES = (1, 6)
HAWK = ["cutoff=10", "big_partition=50", "small_partition=100"]


@pytest.fixture(scope="module")
def env(testbed) -> dict[str, str]:
    return {**testbed.spark_env(), "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def tpch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(0.01, tmp_path_factory.mktemp("tpch"))


@pytest.fixture(scope="module")
def reference(tpch: Path) -> dict[int, list[tuple]]:
    return duckdb_answers(tpch, QUERIES)


def run_app(cmd: list[str], env: dict[str, str], out: Path, tpch: Path, *app_args: str) -> dict:
    full = [*cmd, str(APP), *app_args, "--out", str(out), "--tpch", str(tpch), "--queries", ",".join(map(str, QUERIES))]
    result = subprocess.run(full, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, failure_excerpt(result.stderr)
    return json.loads(out.read_text())


def assert_right_results(got: dict, reference: dict[int, list[tuple]]) -> None:
    assert got["scheduler"] == "BridgeYarnScheduler"
    words = Counter(w for line in LINES for w in line.split())
    assert [tuple(pair) for pair in got["wordcount"]] == sorted(words.items())
    # the SQL of sparkplugin_support.SQL: ids 0..1999 grouped by id % 7, kept where the key is below 5
    sql = [(k, len(ids), sum(3 * i for i in ids)) for k in range(5) for ids in [range(k, 2000, 7)]]
    assert [tuple(row) for row in got["sql"]] == sql
    assert got["long_sum"] == sum(range(8))
    for q in QUERIES:
        verdict = check_answer(q, [tuple(r) for r in got["tpch"][str(q)]], reference[q])
        assert verdict.equal, f"Q{q}: {verdict.detail}"


def test_hawk_through_a_daemon_gives_right_results_and_keeps_long_stages_on_its_general_partition(
        env, tpch, reference, tmp_path) -> None:
    daemon = DaemonProcess(tmp_path / "daemon.log", policy="hawk", params=HAWK)
    try:
        cmd = [str(Path(sys.executable).parent / "schedbridge"), "submit",
               "--master", "spark-schedbridge://yarn", "--num-executors", "2",
               *[arg for key, value in daemon.conf.items() for arg in ("--conf", f"{key}={value}")],
               "--conf", "spark.schedbridge.policy=hawk", "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}",
               *[arg for param in HAWK for arg in ("--conf", f"spark.schedbridge.policy.{param}")]]  # as the daemon's
        got = run_app(cmd, env, tmp_path / "out.json", tpch)
        daemon.wait_for(rf"{re.escape(got['app'])}@[0-9a-f]+ round \d+: s")  # the id and its owner's key
    finally:
        daemon.kill()
    assert_right_results(got, reference)
    log = daemon.log.read_text()
    assert re.search(r"state rebuilt from snapshot: [12] executors", log), log[-3000:]
    # Hawk (cutoff 10 s, general partition 50%): every grant for the long job goes to node 1
    long_grants = [(ex, general) for stage, ex, _, general in hawk_grants_over_two_executors(log)
                   if stage in got["long_stages"]]
    assert long_grants and all(ex == general for ex, general in long_grants), long_grants
