"""The one place where a policy name becomes a Spark scheduler on YARN.

* a stand-in (`policies.framework.standins`: `stock`, Spark's FIFO; `stock-fair`, its FAIR scheduler):
  Spark's own scheduler on stock Spark-on-YARN (no plugin) with the settings the stand-in needs,
  the baselines.
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
from bridge.target.spark import spark_submit
from policies.framework.registry import StandIn, stand_in, stand_ins_hint


def check(policy: str, conf: Mapping[str, str], preempt: bool = False) -> None:
    """Fail early, naming what is wrong, on what the plugin would refuse at start: an unknown
    policy, parameter or value, a bad plugin setting or a daemon that does not answer; or if the
    plugin is not built. Parameters of `--preempt`'s node scheduler are checked by its own check.
    A stand-in runs without the plugin: it takes no policy parameters, no `--preempt` and no Spark
    setting that contradicts its own."""
    standin = stand_in(policy)
    if standin is not None:
        _check_stand_in(standin, conf, preempt)
        return
    plugin_conf = {k: v for k, v in conf.items() if not sparkplugin.is_policy_param(k)} if preempt else conf
    try:
        spark_preflight.check(policy, plugin_conf)
    except ValueError as exc:
        if "unknown policy" in str(exc):
            raise ValueError(f"{exc}, or {stand_ins_hint()}") from None
        raise
    sparkplugin.jar_path()


def _check_stand_in(standin: StandIn, conf: Mapping[str, str], preempt: bool) -> None:
    if sparkplugin.policy_params(conf):
        raise ValueError(f"{standin.name} takes no policy parameters, got {sorted(sparkplugin.policy_params(conf))}")
    if preempt:
        raise ValueError(f"{standin.name} runs without the plugin: --preempt needs a policy that preempts")
    standin.conf(conf)


def open_session(policy: str, conf: dict[str, str], app_name: str, master: str = "yarn") -> SparkSession:
    """A SparkSession on Spark's ``master`` (YARN unless given: `replay` and `tpch`; any master for
    `experiment --master`) whose tasks `policy` places (this process hosts the policy, built with
    the policy parameters of `conf`, on ``spark-schedbridge://<master>``); a stand-in's on Spark's own
    scheduler, with the settings it needs (`check` has refused a conf that contradicts them)."""
    standin = stand_in(policy)
    if standin is not None:
        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in {**standin.live_conf, **conf}.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    host = PolicyHost(make_planner(policy, sparkplugin.policy_params(conf)))
    return spark_inprocess.session(master, host, conf=conf, app_name=app_name)


def submit_command(policy: str, args: list[str]) -> list[str]:
    """`spark-submit` for one application under `policy`; `args` are the options and the app."""
    if stand_in(policy) is not None:  # its settings: the application's own `open_session`
        return [str(spark_submit()), "--master", "yarn", *args]
    return [str(spark_submit()),
            *rewrite(["--master", sparkplugin.master("yarn"), *args], str(sparkplugin.jar_path()))]
