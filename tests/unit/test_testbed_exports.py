"""`testbed up`'s exports: HADOOP_CONF_DIR and a SPARK_CONF_DIR holding everything else Spark
needs against the testbed (local jars, this Python, the driver on loopback)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bridge.apps.testbed_cli import shell_exports
from bridge.testbed.compose import compose_layout
from bridge.testbed.layout import local_layout
from bridge.testbed.spark import SPARK_HOME, write_spark_conf


def test_exports_name_the_hadoop_and_the_written_spark_conf(tmp_path: Path) -> None:
    layout = local_layout(tmp_path)
    assert shell_exports(layout) == [f"export HADOOP_CONF_DIR={layout.conf_dir}",
                                     f"export SPARK_CONF_DIR={tmp_path / 'spark-conf'}"]
    defaults = (tmp_path / "spark-conf" / "spark-defaults.conf").read_text()
    assert f"spark.yarn.jars local:{SPARK_HOME}/jars/*\n" in defaults


def test_the_local_testbeds_driver_binds_to_loopback(tmp_path: Path) -> None:
    env_sh = write_spark_conf(local_layout(tmp_path)) / "spark-env.sh"
    assert env_sh.read_text().endswith("SPARK_LOCAL_IP=127.0.0.1\n")


def test_the_compose_clients_driver_keeps_sparks_own_address(tmp_path: Path) -> None:
    env_sh = write_spark_conf(compose_layout(tmp_path)) / "spark-env.sh"
    assert "SPARK_LOCAL_IP" not in env_sh.read_text()


def _sourced_python(env_sh: Path, environ: dict[str, str]) -> str:
    """PYSPARK_PYTHON after Spark's launch scripts source ``env_sh`` (as load-spark-env.sh does)."""
    script = '. "$1"; printf %s "$PYSPARK_PYTHON"'
    return subprocess.run(["sh", "-c", script, "sh", str(env_sh)], env=environ, capture_output=True,
                          text=True, check=True, timeout=30).stdout


def test_this_python_is_a_default_that_a_users_pyspark_python_overrides(tmp_path: Path) -> None:
    """Not `spark.pyspark.python` in the defaults, which Spark would prefer to the user's variable."""
    conf = write_spark_conf(local_layout(tmp_path))
    assert "pyspark.python" not in (conf / "spark-defaults.conf").read_text()
    path = {"PATH": os.environ["PATH"]}
    assert _sourced_python(conf / "spark-env.sh", path) == sys.executable
    assert _sourced_python(conf / "spark-env.sh", {**path, "PYSPARK_PYTHON": "/opt/py/bin/python"}) == \
        "/opt/py/bin/python"
