"""The virtualenv's own `spark-submit`, run the way a new user runs it: by path, with the venv not on
PATH, and against the testbed with nothing but the two exports `testbed up` prints: stock Spark on
YARN reads a file from HDFS and counts its words right."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bridge.apps.testbed_cli import shell_exports
from tests.integration.process_output import failure_excerpt
from yarnclient.hdfs import hdfs_client

pytestmark = pytest.mark.integration
VENV_BIN = Path(sys.executable).parent
JOB = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
conf = spark.sparkContext.getConf()
print("jars", conf.get("spark.yarn.jars"))
print("driver", conf.get("spark.driver.host"))
print("master", spark.sparkContext.master)
counts = spark.sparkContext.textFile(sys.argv[1], 2).flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(int.__add__)
print("counts", json.dumps(dict(counts.collect())))
spark.stop()
"""
WORDS = ["alpha", "beta", "gamma", "delta", "beta", "gamma", "gamma"]
TEXT = "\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))) * 50


def _user_shell() -> dict[str, str]:
    """A login shell's environment: system PATH (with java) and HOME; no venv, no SPARK_* variable."""
    java = shutil.which("java")
    assert java, "java is not on PATH"
    path = os.pathsep.join(dict.fromkeys([str(Path(java).parent), "/usr/bin", "/bin"]))
    assert str(VENV_BIN) not in path.split(os.pathsep)
    return {"PATH": path, "HOME": os.environ.get("HOME", "/root")}


def _exported(lines: list[str]) -> dict[str, str]:
    """`export NAME=VALUE` lines as a shell would apply them."""
    pairs = (line.removeprefix("export ").split("=", 1) for line in lines)
    return {name: value for name, value in pairs}


def test_venv_spark_submit_runs_without_the_venv_on_path() -> None:
    done = subprocess.run([str(VENV_BIN / "spark-submit"), "--version"], env=_user_shell(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "version 4.3" in done.stderr


@pytest.mark.long  # make test-long: 55 s of the testbed lane, make test's critical path
def test_the_printed_exports_suffice_for_spark_on_yarn_to_count_words_in_hdfs(testbed, tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    hdfs = hdfs_client(testbed.hdfs_url, user=testbed.layout.user)
    hdfs.write("/tmp/wc-in/input.txt", data=TEXT.encode(), overwrite=True)
    exports = shell_exports(testbed.layout)
    assert [line.split("=")[0] for line in exports] == ["export HADOOP_CONF_DIR", "export SPARK_CONF_DIR"]
    env = {**_user_shell(), **_exported(exports)}
    done = subprocess.run([str(VENV_BIN / "spark-submit"), "--master", "yarn", "--num-executors", "2", str(job),
                           f"{testbed.fs_default}/tmp/wc-in/input.txt"],
                          env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    printed = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert printed["master"] == "yarn"
    assert json.loads(printed["counts"]) == Counter(TEXT.split())
    assert printed["jars"].startswith("local:")  # not ~400 MB uploaded per application
    # Spark names the driver by its address's canonical name ("localhost"); without spark-env.sh
    # it picks a non-loopback interface, since this host's name resolves to loopback
    assert socket.gethostbyname(printed["driver"]) == testbed.layout.bind_host
