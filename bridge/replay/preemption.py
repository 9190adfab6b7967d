"""`schedbridge replay --preempt`: the policy's node scheduler runs on real containers.

Without it a replay drives placement only. With it, the shared application's policy host is the
policy's live node-side planner (today: Kairos, `bridge.live.kairos_live`): the NodeManagers
advertise Q more vcores for the span of the replay so that YARN grants N+Q one-core executors
per node, and one node agent per NodeManager shrinks and restores their containers' CPU.

Our reading, for a 2-core testbed: N is the shared mode's executors per NodeManager, and the live
defaults are Q = 1 and W = 5 s (the prototype's W = 50 s for jobs of 85-1,175 s, scaled to jobs
of seconds); `--conf spark.schedbridge.q=...`, `spark.schedbridge.w=...` and
`spark.schedbridge.node_cores=...` override them. The replay starts the agents itself, so this
works on the local testbed, as root; on another cluster, or in per-job mode (where every
application would have its own node scheduler), it is refused before anything is submitted.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from tqdm import tqdm

import sparkplugin
from bridge.live import spark_inprocess
from bridge.live.kairos_live import kairos_live
from bridge.live.local_agents import require_root, start_local_agents
from bridge.live.preemption import ContainerPreemptor
from bridge.live.spark_host import PolicyHost
from bridge.replay.target import ClusterTarget
from bridge.testbed.layout import default_layout
from policies.registry import config_for
from yarnclient import ResourceManagerClient

# Policies whose node scheduler can run live, and the context manager that runs it.
LIVE_NODE_SCHEDULERS: dict[str, Callable[..., Any]] = {"kairos": kairos_live}
LIVE_DEFAULTS = {"q": "1", "w": "5"}
PARAM_PREFIX = "spark.schedbridge."


def check(policy: str, mode: str, target: ClusterTarget, conf: Mapping[str, str]) -> None:
    """Refuse, with the reason, what `--preempt` cannot do; nothing has started yet."""
    if policy not in LIVE_NODE_SCHEDULERS:
        raise ValueError(f"--preempt: policy {policy!r} has no live node scheduler "
                         f"(available: {', '.join(sorted(LIVE_NODE_SCHEDULERS))})")
    if mode != "shared":
        raise ValueError("--preempt needs --mode shared: one node scheduler must see every job")
    if target.rm_url != default_layout().rm_url:
        raise ValueError("--preempt starts node agents on this host, so it runs only against the local "
                         "testbed; on a real cluster, run `schedbridge agent` on each NodeManager host")
    settings = policy_settings(conf)
    if int(settings.pop("node_cores", "1")) < 1:
        raise ValueError(f"{PARAM_PREFIX}node_cores must be at least 1")
    config_for(policy, settings)  # unknown or impossible parameters: the registry's error names them
    require_root()


def policy_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """The live defaults, overridden by `spark.schedbridge.<param>` entries of the Spark conf."""
    return {**LIVE_DEFAULTS, **sparkplugin.policy_params(conf)}


class PreemptiveSession:
    """A shared application whose tasks the policy's live node scheduler time-slices.

    `close` stops Spark, restores every container and the nodes' vcores, then stops the agents
    (restoring a dead agent's containers from its state file), writes the preemption commands it
    applied to ``work/preemption.json`` and prints one line on those that failed."""

    def __init__(self, policy: str, conf: dict[str, str], app_name: str, work: Path) -> None:
        layout = default_layout()
        self._work = work
        self._stack, self._agents = ExitStack(), ExitStack()
        self.preemptor = ContainerPreemptor({})
        rm = ResourceManagerClient(layout.rm_url, user=layout.user)
        nodes = sorted(n.http_address for n in rm.nodes(states=["RUNNING"]))
        if not nodes:
            raise ValueError(f"no RUNNING NodeManager at {layout.rm_url}")
        settings = policy_settings(conf)
        cores = int(settings.pop("node_cores", max(1, int(conf.get("spark.executor.instances", "4")) // len(nodes))))
        config = config_for(policy, settings)
        try:
            planner = self._stack.enter_context(LIVE_NODE_SCHEDULERS[policy](
                rm, self.preemptor, nodes, cores, config, layout.vcores_record))
            executors = (cores + config.q) * len(nodes)
            spark_conf = {**{k: v for k, v in conf.items() if not sparkplugin.is_policy_param(k)},
                          **{PARAM_PREFIX + k: v for k, v in settings.items()},  # what the planner runs with
                          "spark.executor.instances": str(executors),
                          "spark.dynamicAllocation.enabled": "false", "spark.locality.wait": "0s"}
            self.spark = spark_inprocess.session("yarn", PolicyHost(planner), conf=spark_conf, app_name=app_name)
            self._stack.callback(self.spark.stop)
            self.preemptor.agents.update(start_local_agents(
                self._agents, layout, rm, self.spark.sparkContext.applicationId, work, "replay"))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            self._agents.close()  # after the restore above, which goes through the agents
            commands = [{"container": c.ref.container, "node": c.ref.node, "action": c.action,
                         "status": c.status.code.value, "seconds": c.seconds} for c in self.preemptor.commands]
            (self._work / "preemption.json").write_text(json.dumps(commands, indent=1))
            if failures := self.preemptor.failures():
                tqdm.write(f"replay: {failures}; see preemption.json")
