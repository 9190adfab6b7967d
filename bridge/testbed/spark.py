"""Spark on YARN against a testbed: the environment and defaults spark-submit needs.

The NodeManagers run on this host, so executors load Spark's jars straight from the pyspark
installation (`local:` URIs) instead of uploading ~400 MB to HDFS for every application, and
run the project's own Python unless the user's PYSPARK_PYTHON says otherwise. All of it is in one
SPARK_CONF_DIR (`spark-defaults.conf` and `spark-env.sh`), so a shell needs only HADOOP_CONF_DIR
and SPARK_CONF_DIR (`testbed up` prints both). A live comparison's driver gets a gateway's share of
this host's CPU (`favour_driver`).
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from bridge.target.spark import SPARK_HOME
from bridge.testbed.hadoopconf import write_conf_dir
from bridge.testbed.layout import ClusterLayout

JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"   # short-lived JVMs on few cores


def spark_conf_dir(layout: ClusterLayout) -> Path:
    return layout.home / "spark-conf"


def spark_defaults(layout: ClusterLayout) -> dict[str, str]:
    """Small JVMs and one-core executors, sized for a 2-core development machine.

    The driver's web UI is off: it would listen on every interface, and in yarn-client mode
    Spark 4.3 races the AM's web-proxy filter (added on an RPC thread) against the UI starting
    its handlers (`SparkUI.attachAllHandlers` is not synchronized), which now and then fails
    SparkContext start-up. Pass `--conf spark.ui.enabled=true` to have it anyway.

    Driver, executors and application master run as the Hadoop daemons do: C1 only, serial GC
    (`JVM_OPTIONS`). A short application starts in 12.8 s instead of 17.3 s on the 2-core machine
    (Spark's `pi.py` on YARN, 2 executors, two runs each way), and spends half the driver's CPU. The
    driver's and executors' go in `defaultJavaOptions`, which a user's `extraJavaOptions` adds to.
    """
    return {
        "spark.driver.defaultJavaOptions": JVM_OPTIONS,
        "spark.executor.defaultJavaOptions": JVM_OPTIONS,
        "spark.yarn.am.extraJavaOptions": JVM_OPTIONS,
        "spark.yarn.jars": f"local:{SPARK_HOME}/jars/*",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.executor.memoryOverhead": "256m",
        "spark.yarn.am.memory": "384m",
        "spark.yarn.am.memoryOverhead": "256m",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.hadoop.fs.defaultFS": layout.fs_default,
        **event_logs(layout),
    }


def event_logs(layout: ClusterLayout) -> dict[str, str]:
    """On the local testbed every application writes its event log where the testbed's History
    Server reads them, unless it says otherwise (a replay keeps its logs with its results). Not on
    the compose cluster: its drivers run in containers that share no such folder."""
    if layout.bind_host == "0.0.0.0":
        return {}
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": layout.spark_events_dir.as_uri()}


def spark_env_sh(layout: ClusterLayout) -> str:
    """`spark-env.sh`, which Spark's launch scripts source from SPARK_CONF_DIR.

    Python applications run this Python unless the user exported PYSPARK_PYTHON (a default in the
    environment, not `spark.pyspark.python` in the defaults, which would win over the user's).
    Where every daemon listens on loopback (the local testbed), the driver binds there too
    (SPARK_LOCAL_IP) instead of on the address Spark guesses from the hostname; with daemons
    bound to every interface (the compose testbed) Spark's own choice is the reachable one.
    """
    python = f'if [ -z "${{PYSPARK_PYTHON:-}}" ]; then PYSPARK_PYTHON={shlex.quote(sys.executable)}; fi\n'
    if layout.bind_host == "0.0.0.0":
        return python
    return f"{python}SPARK_LOCAL_IP={layout.bind_host}\n"


def write_spark_conf(layout: ClusterLayout) -> Path:
    """Write `spark-defaults.conf` and `spark-env.sh` for this testbed, and make the folder its
    applications write their event logs to (Spark refuses to start without it); returns the
    SPARK_CONF_DIR."""
    if event_logs(layout):
        layout.spark_events_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{key} {value}\n" for key, value in spark_defaults(layout).items())
    target = spark_conf_dir(layout)
    write_conf_dir(target, {"spark-defaults.conf": text, "spark-env.sh": spark_env_sh(layout)})
    return target


def spark_env(layout: ClusterLayout) -> dict[str, str]:
    """Environment for `spark-submit --master yarn` (and pyspark) against this testbed: the
    two exports `testbed up` prints, plus what makes a child process independent of the caller's
    shell (pyspark's own Spark, this Python unless PYSPARK_PYTHON is set, the testbed's user)."""
    env = dict(os.environ)
    env.update({
        "HADOOP_CONF_DIR": str(layout.conf_dir),
        "YARN_CONF_DIR": str(layout.conf_dir),
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_CONF_DIR": str(write_spark_conf(layout)),
        "HADOOP_USER_NAME": layout.user,
    })
    env.setdefault("PYSPARK_PYTHON", sys.executable)  # a user's own choice wins, as under spark-submit
    return env


# -- the driver's share of this host's CPU --------------------------------------------------------
# On a cluster, the driver of a replayed workload runs on a gateway host, apart from the executors.
# On the testbed both share this host's cores, and Linux gives every session (its *autogroup*) an
# equal share of them: four CPU-bound one-core executors on a 2-core host leave the driver a fifth,
# and a TPC-H query then spends most of its time waiting for its own driver to plan its next stage
# (measured on interactive-batch under stock Spark: a median driver gap of 5.7 s per query, 1.9 s
# with the driver favoured; docs/sim-to-real.md). So a live run on the testbed runs its driver in a
# session of its own whose autogroup weight is raised (nice ``DRIVER_NICE``: about ten times an
# executor's session), as root. Off the testbed, or without root, nothing changes, and the caller
# says so. The same weight applies to every policy and stand-in, so comparisons stay even.
DRIVER_NICE = -10   # autogroup nice of the driver's session (-20..19; each step about 1.25x the CPU weight)


def favour_driver(pid: int) -> str:
    """Raise the CPU weight of the session whose leader is ``pid`` (a process started in a new
    session); what was done, or why not, in a phrase for the run's notes."""
    path = Path(f"/proc/{pid}/autogroup")
    try:
        path.write_text(f"{DRIVER_NICE}\n")
    except FileNotFoundError:
        return "driver's CPU share as Linux gives it (no autogroups here, or the driver has ended)"
    except PermissionError:
        return "driver's CPU share not raised (that needs root): on a loaded host its queries wait for it"
    return f"driver's session at autogroup nice {DRIVER_NICE}, as on a gateway host"
