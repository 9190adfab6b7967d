"""`schedbridge experiment --workers`: the same bytes as a serial run, and a failing run named."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bridge.apps import experiments_thesis, sweep
from bridge.apps.experiments import experiment


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("args", [("hawk-breakdown", "--scale", "0.001"), ("kairos-prototype", "--scale", "0.05"),
                                  ("psychas-load", "--quick")])
def test_two_workers_write_the_same_bytes_as_one(tmp_path: Path, args: tuple[str, ...]) -> None:
    runner = CliRunner()
    for workers in ("1", "2"):
        result = runner.invoke(experiment, [*args, "--workers", workers, "--out", str(tmp_path / workers)])
        assert result.exit_code == 0, result.output
    serial, parallel = _files(tmp_path / "1"), _files(tmp_path / "2")
    assert len(serial) >= 2 and serial.keys() == parallel.keys()
    for path in serial:
        assert serial[path] == parallel[path], path


def fail_on_three(point: int) -> int:
    """A run that raises for the point 3 (module-level: worker processes import it)."""
    if point == 3:
        raise ValueError("no such policy 'nope'")
    return point * 10


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_point_stops_the_sweep_naming_it(workers: int) -> None:
    with sweep.workers(workers):
        assert sweep.run_points(fail_on_three, [1, 2], "demo") == [10, 20]
        with pytest.raises(click.ClickException) as failed:
            sweep.run_points(fail_on_three, [1, 2, 3, 4], "demo", lambda p: f"point #{p}")
    assert failed.value.message == "demo: the run point #3 failed: ValueError: no such policy 'nope'"


def exit_on_three(point: int) -> int:
    """A run whose process dies at the point 3, as a crash in native code or the OOM killer would."""
    if point == 3:
        os._exit(3)
    return point * 10


def test_a_point_whose_worker_dies_is_named_and_the_others_kept() -> None:
    with sweep.workers(2):
        assert sweep.run_points(exit_on_three, [1, 2, 3, 4, 5], "demo",
                                dead=lambda p, why: -p) == [10, 20, -3, 40, 50]
        with pytest.raises(click.ClickException) as failed:
            sweep.run_points(exit_on_three, [1, 3, 4], "demo", lambda p: f"point #{p}")
    assert failed.value.message.startswith("demo: the run point #3 failed: its worker process died")


def test_a_failing_run_leaves_no_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(point: experiments_thesis.Point) -> experiments_thesis.Summary:
        if point.spec.variant.label == "no-stealing":
            raise KeyError("stealing")
        return real(point)

    real = experiments_thesis.run_point
    monkeypatch.setattr(experiments_thesis, "run_point", broken)
    result = CliRunner().invoke(experiment, ["hawk-breakdown", "--scale", "0.001", "--workers", "1",
                                             "--out", str(tmp_path / "results")])
    assert result.exit_code == 1
    assert "Error: hawk-breakdown: the run no-stealing on google at 15000 nodes, seed 1 failed: KeyError" \
        in result.output and "Traceback" not in result.output
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("args, message", [
    (["--master", "local[2]", "--workers", "2"], "--workers and --master exclude each other"),
    (["--policy", "hawk"], "--policy apply to Spark runs only: add --master MASTER"),
    (["--conf", "spark.executor.instances=2", "--param", "cutoff=5"],
     "--param, --conf apply to Spark runs only: add --master MASTER"),
    (["--master", "yarn", "--policy", "hawk"], "they apply with --master spark-schedbridge://"),
    (["--master", "local[2]", "--param", "cutoff=5"], "they apply with --master spark-schedbridge://"),
    (["--master", "spark-schedbridge://local[2]", "--hadoop-conf-dir", "."],
     "--hadoop-conf-dir applies to a YARN master only"),
    (["--master", "local[2]", "--conf", "spark.schedbridge.policy.cutoff=5"],
     "--conf: spark.schedbridge.policy.cutoff is a policy parameter: use --param cutoff=5"),
    (["--master", "local[2]", "--conf", "spark.ui.enabled"], "expected KEY=VALUE"),
])
def test_spark_options_are_checked_before_anything_runs(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(experiment, ["hawk-breakdown", "--scale", "0.001", *args,
                                             "--out", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("args, message", [
    (["--master", "spark-schedbridge://local[2]", "--policy", "hawkk"], "unknown policy 'hawkk'"),
    (["--master", "spark-schedbridge://local[2]", "--policy", "hawk", "--param", "cutof=5"], "cutof"),
])
def test_a_policy_the_plugin_would_refuse_is_refused_before_spark_starts(tmp_path: Path, args: list[str],
                                                                         message: str) -> None:
    result = CliRunner().invoke(experiment, ["hawk-breakdown", "--scale", "0.001", *args,
                                             "--out", str(tmp_path / "results")])
    assert result.exit_code == 1, result.output
    assert "Error: --master spark-schedbridge://local[2]: " in result.output and message in result.output
    assert "Traceback" not in result.output and not (tmp_path / "results").exists()


def test_a_yarn_cluster_that_does_not_answer_fails_fast_with_no_results(tmp_path: Path) -> None:
    """The RM is asked before Spark starts (Spark's own YARN client would retry for minutes)."""
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = tmp_path / "hadoop"
    conf.mkdir()
    (conf / "yarn-site.xml").write_text("<configuration><property><name>yarn.resourcemanager.webapp.address"
                                        f"</name><value>127.0.0.1:{port}</value></property></configuration>")
    result = CliRunner().invoke(experiment, ["hawk-breakdown", "--scale", "0.001", "--master", "yarn",
                                             "--hadoop-conf-dir", str(conf), "--out", str(tmp_path / "results")])
    assert result.exit_code == 1, result.output
    assert "Error: --master yarn: " in result.output and f"127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "results").exists()


def test_an_executor_without_schedbridge_is_told_what_to_install() -> None:
    """The text Spark gives when a task's function cannot be unpickled on an executor."""
    text = ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "pyspark/serializers.py", line 483, in loads\n'
            "ModuleNotFoundError: No module named 'bridge'\n")
    error = sweep._spark_failed(RuntimeError(text), "demo", _Context())
    assert error.message.startswith("demo: a Spark executor cannot import 'bridge': install schedbridge")
    assert "spark.pyspark.python: /nodes/python" in error.message
    assert sweep._spark_failed(RuntimeError("Job aborted\nSparkException: lost executor 2\n"), "demo",
                               _Context()).message == "demo: the Spark job failed: SparkException: lost executor 2"


class _Context:
    """What :func:`bridge.apps.sweep._spark_failed` reads of a SparkContext."""

    pythonExec = "/nodes/python"


def test_a_raising_point_is_a_value_in_its_spark_task() -> None:
    assert sweep._guarded(fail_on_three, 2) == (True, 20)
    assert sweep._guarded(fail_on_three, 3) == (False, "ValueError: no such policy 'nope'")
