"""`testbed up`'s exports: HADOOP_CONF_DIR and a SPARK_CONF_DIR holding everything else Spark
needs against the testbed (local jars, this Python, the driver on loopback)."""
from __future__ import annotations

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
    assert env_sh.read_text() == "SPARK_LOCAL_IP=127.0.0.1\n"


def test_the_compose_clients_driver_keeps_sparks_own_address(tmp_path: Path) -> None:
    env_sh = write_spark_conf(compose_layout(tmp_path)) / "spark-env.sh"
    assert env_sh.read_text() == ""
