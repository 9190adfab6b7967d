"""The one place where a policy name becomes a Spark scheduler on YARN.

* `stock`: Spark's own scheduler on stock Spark-on-YARN (no plugin), the baseline.
* any registered policy (or the plugin's `spark-fifo`): the schedbridge Spark plugin (master
  `spark-schedbridge://yarn`), with the policy hosted in the driver process itself (endpoint
  `inprocess`), so the shared application's policy sees every job of the replay.

Everything else in the replay is policy-agnostic.
"""
from __future__ import annotations

from pyspark.sql import SparkSession

import sparkplugin
from bridge.live import spark_inprocess
from bridge.live.spark_host import PolicyHost
from bridge.live.spark_planners import make_planner
from bridge.live.spark_submit import rewrite
from bridge.testbed.spark import spark_submit

STOCK = "stock"


def check(policy: str) -> None:
    """Fail early, naming the valid policies, if `policy` is unknown or the plugin is not built."""
    if policy == STOCK:
        return
    try:
        make_planner(policy)
    except ValueError as exc:
        raise ValueError(f"{exc}, or {STOCK} (Spark's own scheduler, no plugin)") from None
    sparkplugin.jar_path()


def open_session(policy: str, conf: dict[str, str], app_name: str) -> SparkSession:
    """A SparkSession on YARN whose tasks `policy` places (this process hosts the policy)."""
    if policy == STOCK:
        builder = SparkSession.builder.master("yarn").appName(app_name)
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    host = PolicyHost(make_planner(policy))
    return spark_inprocess.session("yarn", host, conf=conf, app_name=app_name)


def submit_command(policy: str, args: list[str]) -> list[str]:
    """`spark-submit` for one application under `policy`; `args` are the options and the app."""
    if policy == STOCK:
        return [str(spark_submit()), "--master", "yarn", *args]
    return [str(spark_submit()),
            *rewrite(["--master", sparkplugin.master("yarn"), *args], str(sparkplugin.jar_path()))]
