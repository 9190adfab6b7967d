"""The one place where a policy name becomes a Spark scheduler on YARN.

* `stock`: Spark's own scheduler on stock Spark-on-YARN (no plugin), the baseline.
* any registered policy (or the plugin's `spark-fifo`): the schedbridge Spark plugin (master
  `spark-schedbridge://yarn`). In shared mode the policy is hosted in the replay's own driver
  process (endpoint `inprocess`), so the shared application's policy sees every job of the
  replay; in per-job mode each application's plugin starts a host beside its driver (`local`).

Everything else in the replay is policy-agnostic.
"""
from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

import sparkplugin
from bridge.drivers.planners import make_planner
from bridge.launch import preflight as spark_preflight
from bridge.launch.submit import rewrite
from bridge.plugin import inprocess as spark_inprocess
from bridge.plugin.host import PolicyHost
from bridge.testbed.spark import spark_submit

STOCK = "stock"


def check(policy: str, conf: Mapping[str, str], preempt: bool = False) -> None:
    """Fail early, naming what is wrong, on what the plugin would refuse at start: an unknown
    policy, parameter or value, a bad plugin setting or a daemon that does not answer; or if the
    plugin is not built. Parameters of `--preempt`'s node scheduler are checked by its own check."""
    if policy == STOCK:
        if sparkplugin.policy_params(conf):
            raise ValueError(f"{STOCK} takes no policy parameters, got "
                             f"{sorted(sparkplugin.policy_params(conf))}")
        return
    plugin_conf = {k: v for k, v in conf.items() if not sparkplugin.is_policy_param(k)} if preempt else conf
    try:
        spark_preflight.check(policy, plugin_conf)
    except ValueError as exc:
        if "unknown policy" in str(exc):
            raise ValueError(f"{exc}, or {STOCK} (Spark's own scheduler, no plugin)") from None
        raise
    sparkplugin.jar_path()


def open_session(policy: str, conf: dict[str, str], app_name: str, master: str = "yarn") -> SparkSession:
    """A SparkSession on Spark's ``master`` (YARN unless given: `replay` and `tpch`; any master for
    `experiment --master`) whose tasks `policy` places (this process hosts the policy, built with
    the policy parameters of `conf`, on ``spark-schedbridge://<master>``)."""
    if policy == STOCK:
        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    host = PolicyHost(make_planner(policy, sparkplugin.policy_params(conf)))
    return spark_inprocess.session(master, host, conf=conf, app_name=app_name)


def submit_command(policy: str, args: list[str]) -> list[str]:
    """`spark-submit` for one application under `policy`; `args` are the options and the app."""
    if policy == STOCK:
        return [str(spark_submit()), "--master", "yarn", *args]
    return [str(spark_submit()),
            *rewrite(["--master", sparkplugin.master("yarn"), *args], str(sparkplugin.jar_path()))]
