"""`schedbridge submit --deploy-mode cluster`: Spark on YARN's own cluster submission around the
plugin's ClusterDriver, the application unchanged. Nothing here runs spark-submit."""
from __future__ import annotations

import sys

import click
import pytest

from bridge.launch.submit import rewrite

YARN = ["--master", "spark-schedbridge://yarn", "--deploy-mode", "cluster"]


def conf(args: list[str]) -> dict[str, str]:
    return dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")


def test_a_python_application_runs_through_the_cluster_driver_with_its_file_shipped() -> None:
    args = rewrite([*YARN, "--num-executors", "2", "--files", "d.txt#alias", "--queue", "q",
                    "/apps/pi.py", "20", "--out", "x"], "/p.jar", {"PYSPARK_PYTHON": "/opt/py/bin/python"})
    assert args[:4] == ["--master", "yarn", "--deploy-mode", "cluster"]
    assert args[-4:] == ["/p.jar", "20", "--out", "x"]  # the plugin jar is the primary resource
    assert args[args.index("--class") + 1] == "org.schedbridge.spark.ClusterDriver"
    assert args[args.index("--files") + 1] == "d.txt#alias,/apps/pi.py"
    assert "--num-executors" in args and "--queue" in args  # YARN's own options under --master yarn
    c = conf(args)
    assert c["spark.schedbridge.cluster.pyFile"] == "pi.py" and c["spark.yarn.isPython"] == "true"
    assert c["spark.yarn.appMasterEnv.PYSPARK_PYTHON"] == "/opt/py/bin/python"  # the user's, as spark-submit would
    assert c["spark.schedbridge.python"] == sys.executable


def test_a_jvm_application_keeps_its_jar_and_names_its_main_class() -> None:
    args = rewrite([*YARN, "--class", "SumApp", "--jars", "dep.jar",
                    "--conf", "spark.schedbridge.python=./env/bin/python", "app.jar", "1"], "/p.jar", {})
    assert args[-2:] == ["app.jar", "1"]
    assert args[args.index("--class") + 1] == "org.schedbridge.spark.ClusterDriver"
    assert args[args.index("--jars") + 1] == "dep.jar,/p.jar"
    c = conf(args)
    assert c["spark.schedbridge.cluster.mainClass"] == "SumApp" and c["spark.schedbridge.python"] == "./env/bin/python"
    assert "spark.yarn.appMasterEnv.PYSPARK_PYTHON" not in c and "--driver-class-path" not in args


def test_cluster_mode_needs_yarn_and_a_jar_needs_its_main_class() -> None:
    with pytest.raises(click.UsageError, match="--deploy-mode cluster needs --master spark-schedbridge://yarn"):
        rewrite(["--master", "spark-schedbridge://local[2]", "--deploy-mode", "cluster", "a.py"], "/p.jar", {})
    with pytest.raises(click.UsageError, match="needs --class MAIN"):
        rewrite([*YARN, "app.jar"], "/p.jar", {})


def test_a_python_set_in_the_conf_is_not_overridden() -> None:
    args = rewrite([*YARN, "--conf", "spark.pyspark.python=./env/bin/python", "a.py"], "/p.jar",
                   {"PYSPARK_PYTHON": "/usr/bin/python3"})
    assert "spark.yarn.appMasterEnv.PYSPARK_PYTHON" not in conf(args)
