"""`schedbridge experiment --master`: an experiment's runs as Spark tasks write the same bytes as
`--workers 1`. On the real testbed through the plugin's `spark-schedbridge://yarn` (the application
is looked up in the ResourceManager: it ran there and succeeded), and on `local[2]`; and an
executor whose Python lacks schedbridge fails the sweep saying what to install, with no results."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.process_output import failure_excerpt
from yarnclient.resourcemanager import ResourceManagerClient

pytestmark = pytest.mark.integration

SCHEDBRIDGE = str(Path(sys.executable).parent / "schedbridge")
EXPERIMENT = ["experiment", "hawk-breakdown", "--scale", "0.001"]  # 4 runs of a few seconds each
APP_ID = re.compile(r"runs as tasks of Spark application (application_\d+_\d+) on ")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _run(args: list[str], cwd: Path, timeout: int = 480) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    return subprocess.run([SCHEDBRIDGE, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("serial")
    done = _run([*EXPERIMENT, "--workers", "1", "--out", str(out)], out)
    assert done.returncode == 0, failure_excerpt(done.stdout + done.stderr)
    files = _files(out)
    assert len(files) >= 3  # two tables and a plot
    return files


@pytest.mark.long  # make test-long: make test runs this path live on a local master (below)
def test_runs_as_spark_tasks_on_yarn_write_the_serial_bytes(testbed, serial: dict[str, bytes], tmp_path: Path) -> None:
    """Through the plugin's `spark-schedbridge://yarn` (plain `yarn` is the same path to YARN, with
    Spark's own scheduling, which the local master below uses too)."""
    done = _run([*EXPERIMENT, "--master", "spark-schedbridge://yarn", "--policy", "sparrow",
                 "--hadoop-conf-dir", str(testbed.conf_dir),
                 "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, failure_excerpt(done.stdout + done.stderr)
    assert "hawk-breakdown: 100%" in done.stderr and "4/4" in done.stderr  # the progress bar reached the end
    app_id = APP_ID.search(done.stderr)
    assert app_id, done.stderr[-2000:]
    app = ResourceManagerClient(testbed.rm_url, user=testbed.layout.user).app(app_id.group(1))
    assert (app.name, app.final_status) == ("schedbridge-experiment-hawk-breakdown", "SUCCEEDED")
    parallel = _files(tmp_path / "out")
    assert parallel.keys() == serial.keys()
    for path in serial:
        assert parallel[path] == serial[path], path


def test_runs_as_spark_tasks_on_a_local_master_write_the_serial_bytes(serial: dict[str, bytes], tmp_path: Path) -> None:
    done = _run([*EXPERIMENT, "--master", "local[2]", "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, failure_excerpt(done.stdout + done.stderr)
    assert "on local[2]" in done.stderr and "4/4" in done.stderr
    assert _files(tmp_path / "out") == serial


def test_an_executor_without_schedbridge_fails_the_sweep_saying_what_to_install(tmp_path: Path) -> None:
    """A bare virtual environment stands for a node where schedbridge is not installed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True, timeout=120)
    python = str(tmp_path / "bare" / "bin" / "python")
    assert subprocess.run([python, "-c", "import bridge"], cwd=tmp_path, capture_output=True).returncode != 0
    done = _run([*EXPERIMENT, "--master", "local[1]", "--conf", f"spark.pyspark.python={python}",
                 "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 1, failure_excerpt(done.stdout + done.stderr)
    assert "Error: hawk-breakdown: a Spark executor cannot import '" in done.stderr
    assert "install schedbridge (this version, with its dependencies) on every node" in done.stderr
    assert f"spark.pyspark.python: {python}" in done.stderr and "Traceback" not in done.stderr.split("Error:")[-1]
    assert not (tmp_path / "out").exists()
