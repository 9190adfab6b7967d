"""The Spark plugin on the real testbed (YARN, 2 NodeManagers): executors come from YARN
containers, results equal stock Spark's under each live policy, and Hawk's placement is visible in
the daemon's log (long stages only on its general partition)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.testbed.spark import spark_submit
from tests.integration.sparkplugin_support import DaemonProcess
from workloads.tpch.compare import compare_results
from workloads.tpch.datagen import generate
from workloads.tpch.queries import is_ordered, query_texts
from tests.integration.process_output import failure_excerpt

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parent / "jobs" / "sparkplugin_app.py"
QUERIES = "1,6"
LIVE = ["fifo", "sparrow", "hawk", "eagle", "kairos", "falcon"]
HAWK = ["cutoff=10", "big_partition=50", "small_partition=100"]


@pytest.fixture(scope="module")
def env(testbed) -> dict[str, str]:
    return {**testbed.spark_env(), "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def tpch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(0.01, tmp_path_factory.mktemp("tpch"))


def run_app(cmd: list[str], env: dict[str, str], out: Path, tpch: Path) -> dict:
    full = [*cmd, "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}", str(APP), "--out", str(out),
            "--tpch", str(tpch), "--queries", QUERIES]
    result = subprocess.run(full, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, failure_excerpt(result.stderr)
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def stock(env: dict[str, str], tpch: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("stock") / "out.json"
    return run_app([str(spark_submit()), "--master", "yarn", "--num-executors", "2"], env, out, tpch)


def assert_same_results(got: dict, stock: dict) -> None:
    assert got["wordcount"] == stock["wordcount"]
    assert got["sql"] == stock["sql"]
    assert got["long_sum"] == stock["long_sum"] == sum(range(8))
    texts = query_texts()
    for q, rows in stock["tpch"].items():
        verdict = compare_results([tuple(r) for r in got["tpch"][q]], [tuple(r) for r in rows],
                                  ordered=is_ordered(texts[int(q)]))
        assert verdict.equal, f"Q{q}: {verdict.detail}"


def submit_via_daemon(policy: str, params: list[str], env: dict[str, str], tpch: Path, tmp: Path):
    daemon = DaemonProcess(tmp / "daemon.log", policy=policy, params=params)
    try:
        cmd = [str(Path(sys.executable).parent / "schedbridge"), "submit",
               "--master", "spark-schedbridge://yarn", "--num-executors", "2",
               *[arg for key, value in daemon.conf.items() for arg in ("--conf", f"{key}={value}")],
               "--conf", f"spark.schedbridge.policy={policy}",
               *[arg for param in params for arg in ("--conf", f"spark.schedbridge.policy.{param}")]]  # as the daemon's
        got = run_app(cmd, env, tmp / "out.json", tpch)
        daemon.wait_for(rf"{re.escape(got['app'])} round \d+: s")
    finally:
        daemon.kill()
    return got, daemon.log.read_text()


@pytest.mark.parametrize("policy", LIVE)
def test_results_equal_stock_under_each_policy(policy: str, env, tpch, stock, tmp_path) -> None:
    got, log = submit_via_daemon(policy, HAWK if policy == "hawk" else [], env, tpch, tmp_path)
    assert got["scheduler"] == "BridgeYarnScheduler"
    assert_same_results(got, stock)
    assert "state rebuilt from snapshot: 1 executors" in log or "state rebuilt from snapshot: 2 executors" in log
    if policy == "hawk":
        assert_long_stages_on_general_partition(got, log)


def assert_long_stages_on_general_partition(got: dict, log: str) -> None:
    """Hawk (cutoff 10 s, general partition 50%): every grant for the long job goes to node 1."""
    nodes = re.findall(r"rebuilt over 2 executors x \d+ slots, nodes: (\S+) (\S+)", log)[-1]
    general = nodes[1].split("/", 1)[1]  # Hawk's general partition: the highest node ids
    long_grants = [ex for stage, ex in re.findall(r"s(\d+)\.\d+->(\S+?)x\d+", log)
                   if int(stage) in got["long_stages"]]
    assert long_grants and set(long_grants) == {general}, (long_grants, nodes)  # fallback rounds may place some


def test_inprocess_policy_on_yarn(env, tpch, stock, tmp_path) -> None:
    cmd = [sys.executable, str(APP), "--inprocess", "sparrow"]
    result = subprocess.run([*cmd, "--out", str(tmp_path / "out.json"), "--tpch", str(tpch),
                             "--queries", QUERIES], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, failure_excerpt(result.stderr)
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["scheduler"] == "BridgeYarnScheduler"
    assert_same_results(got, stock)
