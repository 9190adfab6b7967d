"""The one-line submission on the real testbed: `schedbridge submit` and plain `spark-submit` on
`spark-schedbridge://yarn`, with no endpoint given, host the policy beside the driver: a PySpark
application (our copy of Spark's `pi.py`) by `schedbridge submit`, a JVM one (a Java job compiled
here) and the same PySpark one (without `spark.yarn.isPython`) by plain `spark-submit`, all under
hawk. The plugin's counters show that the policy placed every task and no round fell back; a
parameter in the application's conf changes Hawk's placement; a JVM application with a
misspelled parameter stops before YARN is asked for anything."""
from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import sparkplugin
from bridge.target.spark import SPARK_HOME, spark_submit
from yarnclient.resourcemanager import ResourceManagerClient
from tests.integration.process_output import failure_excerpt
from tests.integration.sparkplugin_support import DaemonProcess, hawk_grants_over_two_executors

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
JOBS = Path(__file__).resolve().parent / "jobs"
SCHEDBRIDGE = str(Path(sys.executable).parent / "schedbridge")
PI_PARTITIONS = 20
SUM_N, SUM_PARTITIONS = 1000, 6


@pytest.fixture(scope="module")
def env(testbed) -> dict[str, str]:
    return {**testbed.spark_env(), "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def java_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SumApp.java compiled against Spark's own jars into a jar."""
    work = tmp_path_factory.mktemp("java-app")
    classes = work / "classes"
    subprocess.run(["javac", "--release", "17", "-cp", str(SPARK_HOME / "jars" / "*"), "-d", str(classes),
                    str(JOBS / "java" / "SumApp.java")], check=True, capture_output=True, timeout=300)
    jar = work / "sum-app.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True, timeout=120)
    return jar


def launcher(how: str) -> list[str]:
    """`schedbridge submit`, or plain spark-submit with the jar and YARN-only options given as conf."""
    if how == "schedbridge-submit":
        return [SCHEDBRIDGE, "submit", "--master", "spark-schedbridge://yarn", "--num-executors", "2"]
    jar = str(sparkplugin.jar_path())
    return [str(spark_submit()), "--master", "spark-schedbridge://yarn", "--jars", jar, "--driver-class-path", jar,
            "--conf", "spark.executor.instances=2"]


def application(kind: str, how: str, out: Path, java_app: Path) -> list[str]:
    if kind == "pi.py":  # no spark.yarn.isPython: the plugin sets it for a Python application
        return ["--conf", f"spark.executorEnv.PYTHONPATH={ROOT}", str(JOBS / "pi.py"),
                str(PI_PARTITIONS), "--executors", "2", "--out", str(out)]
    return ["--class", "SumApp", str(java_app), str(SUM_N), str(SUM_PARTITIONS), str(out)]


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)


# These tests claim that the policy places every task; a round past the default 50 ms deadline falls
# back to Spark (tested in test_sparkplugin_local.py), which a loaded CI machine has caused (3 rounds
# in one run), so they give the policy's call room.
ROOMY_DEADLINE = ("--conf", "spark.schedbridge.deadline=5s")


def assert_every_task_placed_by_hawk(stats_file: Path, tasks: int) -> None:
    stats = json.loads(stats_file.read_text())
    assert stats["policy"] == "hawk" and stats["endpoint"].startswith("a host beside the driver")
    # every task placed by the policy. One failed call is allowed (e.g. past its 50 ms deadline on the
    # loaded CI machine: seen once, an idle flush of events, now a failed report), and it is named.
    assert stats["fallback_tasks"] == 0 and stats["placed_tasks"] >= tasks and stats["unmanaged_tasks"] == 0, stats
    failed = stats["fallback_rounds"] + stats["failed_reports"]
    assert failed <= 1 and (failed == 0 or stats["last_failure"]), stats


def python_wrapper(folder: Path) -> Path:
    """A user's own PYSPARK_PYTHON: this Python behind a script that marks the processes it starts."""
    wrapper = folder / "user-python"
    wrapper.write_text(f'#!/bin/sh\nPROBE_PYTHON=user-wrapper exec {shlex.quote(sys.executable)} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def test_a_pyspark_application_by_schedbridge_submit_is_placed_by_hawk_with_its_own_parameters(
        env, java_app, tmp_path) -> None:
    """cutoff=0 makes every job long for Hawk, so with a 50% general partition every task goes to
    the executor that is node 1; ignored, the default cutoff (90 s) would probe both executors.
    The same run keeps spark-submit's YARN behaviour: the user's PYSPARK_PYTHON runs the tasks and
    ``--files F#alias``, ``--archives A#dir`` and ``--py-files`` reach every container by those names."""
    out, stats_file, log = tmp_path / "out.txt", tmp_path / "stats.json", tmp_path / "host.log"
    data, probe_out, archive, module = (tmp_path / "data.txt", tmp_path / "probe.json", tmp_path / "bundle.zip",
                                        tmp_path / "probe_module.py")
    data.write_text("shipped by --files\n")
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("inner.txt", "unpacked from --archives\n")
    module.write_text('VALUE = "imported from --py-files"\n')
    cmd = [*launcher("schedbridge-submit"), "--conf", "spark.schedbridge.policy=hawk", *ROOMY_DEADLINE,
           "--conf", "spark.schedbridge.policy.cutoff=0", "--conf", "spark.schedbridge.policy.big_partition=50",
           "--conf", f"spark.schedbridge.host.log={log}", "--conf", f"spark.schedbridge.stats.file={stats_file}",
           "--files", f"{data}#alias", "--archives", f"{archive}#unpacked", "--py-files", str(module),
           *application("pi.py", "schedbridge-submit", out, java_app),
           "--probe", "alias", "unpacked/inner.txt", "probe_module", "--probe-out", str(probe_out)]
    result = run(cmd, {**env, "PYSPARK_PYTHON": str(python_wrapper(tmp_path))})
    assert result.returncode == 0, failure_excerpt(result.stderr)
    assert math.isclose(float(out.read_text()), math.pi, abs_tol=0.05)
    assert json.loads(probe_out.read_text()) == [{"file": "shipped by --files", "python": "user-wrapper",
                                                  "archive": "unpacked from --archives",
                                                  "module": "imported from --py-files"}] * 4
    assert_every_task_placed_by_hawk(stats_file, PI_PARTITIONS)
    assert "schedbridge: policy hawk (a host beside the driver" in result.stderr  # the summary at the end
    granted = hawk_grants_over_two_executors(log.read_text())
    assert sum(n for _, _, n, _ in granted) >= PI_PARTITIONS, granted
    assert all(ex == general for _, ex, _, general in granted), granted


def test_spark_pi_in_cluster_deploy_mode_attaches_to_serve_and_is_placed_by_hawk(env, testbed, tmp_path) -> None:
    """Spark's own `pi.py` with its driver in YARN's ApplicationMaster container, attached to a
    `schedbridge serve` daemon (`spark.schedbridge.endpoint`): the application ends SUCCEEDED in
    the ResourceManager, and its event log (written by that driver) holds a placement by the
    policy for every task Spark started. (Cluster mode with the policy host beside the driver, from
    a packed environment: the deployment guide's test on the compose cluster.)"""
    events = tmp_path / "events"
    events.mkdir()
    daemon = DaemonProcess(tmp_path / "daemon.log", policy="hawk")
    try:
        cmd = [SCHEDBRIDGE, "submit", "--master", "spark-schedbridge://yarn", "--deploy-mode", "cluster",
               "--num-executors", "2", "--policy", "hawk", *ROOMY_DEADLINE,
               *[arg for key, value in daemon.conf.items() for arg in ("--conf", f"{key}={value}")],
               "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events.as_uri()}",
               "--conf", "spark.eventLog.compress=false",
               str(SPARK_HOME / "examples" / "src" / "main" / "python" / "pi.py"), str(PI_PARTITIONS)]
        result = run(cmd, env)
    finally:
        daemon.kill()
    assert result.returncode == 0, failure_excerpt(result.stderr)
    app_id = re.search(r"Submitted application (application_\d+_\d+)", result.stderr).group(1)  # type: ignore[union-attr]
    final = ResourceManagerClient(testbed.rm_url).app(app_id)
    assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED")
    log = [json.loads(line) for f in events.rglob("*") if f.is_file() and not f.name.startswith(".")
           for line in f.read_text().splitlines()]
    started = {e["Task Info"]["Task ID"] for e in log if e["Event"] == "SparkListenerTaskStart"}
    placed = [e for e in log if e["Event"] == "org.schedbridge.spark.PlacementEvent"]
    assert len(started) >= PI_PARTITIONS and {p["taskId"] for p in placed} == started
    assert {(p["policy"], p["by"]) for p in placed} == {("hawk", "POLICY")}
    assert app_id in daemon.log.read_text()  # the daemon, not a host beside the driver, placed them


@pytest.mark.long  # make test-long: 49-51 s of the testbed lane, make test's critical path
def test_a_pyspark_application_by_plain_spark_submit_needs_no_is_python(env, java_app, tmp_path) -> None:
    """Plain spark-submit with the master and the policy: the plugin sets spark.yarn.isPython itself,
    so YARN's client ships pyspark.zip and py4j and the executors run the Python tasks."""
    out, stats_file = tmp_path / "out.txt", tmp_path / "stats.json"
    cmd = [*launcher("spark-submit"), "--conf", "spark.schedbridge.policy=hawk", *ROOMY_DEADLINE,
           "--conf", f"spark.schedbridge.stats.file={stats_file}",
           *application("pi.py", "spark-submit", out, java_app)]
    result = run(cmd, env)
    assert result.returncode == 0, failure_excerpt(result.stderr)
    assert "spark.yarn.isPython=true (spark-submit runs a Python application)" in result.stderr
    assert math.isclose(float(out.read_text()), math.pi, abs_tol=0.05)
    assert_every_task_placed_by_hawk(stats_file, PI_PARTITIONS)


@pytest.mark.long  # make test-long: 49-51 s of the testbed lane, make test's critical path
def test_a_jvm_application_by_plain_spark_submit_is_placed_by_hawk(env, java_app, tmp_path) -> None:
    out, stats_file = tmp_path / "out.txt", tmp_path / "stats.json"
    cmd = [*launcher("spark-submit"), "--conf", "spark.schedbridge.policy=hawk", *ROOMY_DEADLINE,
           "--conf", f"spark.schedbridge.stats.file={stats_file}",
           *application("SumApp (JVM)", "spark-submit", out, java_app)]
    result = run(cmd, env)
    assert result.returncode == 0, failure_excerpt(result.stderr)
    assert out.read_text().split() == [str(sum(x * x for x in range(SUM_N))), str(len(range(0, SUM_N, 3)))]
    assert_every_task_placed_by_hawk(stats_file, 2 * SUM_PARTITIONS)  # at least: the RDD job's and the SQL scan's
    assert "schedbridge: policy hawk (a host beside the driver" in result.stderr


def test_a_jvm_application_with_a_misspelled_parameter_stops_before_yarn(env, java_app, tmp_path) -> None:
    cmd = [*launcher("spark-submit"), "--conf", "spark.schedbridge.policy=hawk",
           "--conf", "spark.schedbridge.policy.cutof=1",
           *application("SumApp (JVM)", "spark-submit", tmp_path / "out.txt", java_app)]
    result = run(cmd, env)
    assert result.returncode != 0
    assert "unknown parameter(s) ['cutof'] (did you mean 'cutoff'?)" in result.stderr, failure_excerpt(result.stderr)
    assert "Submitting application" not in result.stderr and not (tmp_path / "out.txt").exists()
