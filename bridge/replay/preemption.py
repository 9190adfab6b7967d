"""`schedbridge replay --preempt`: the policy's node scheduler runs on real containers.

Without it a replay drives placement only. With it, the shared application's policy host is
``bridge.drivers.node_engine``'s planner, for any policy whose registry entry declares
``Preempts`` (Kairos, Big-C, Falcon and its baselines): the NodeManagers advertise the policy's
extra tasks per node more vcores for the span of the replay, the executor containers are sized
so that exactly N + extra of them fit on each NodeManager (``executor_spread``; checked once they
are placed), and one node agent per NodeManager shrinks and restores their containers' CPU as the
policy's ``Suspend``/``Resume`` decide.

N is the shared mode's executors per NodeManager unless `--param node_cores=...`
says otherwise; the policy's live defaults (``Preempts.live``; Kairos: Q = 1, W = 5 s, our reading
for a 2-core testbed) are overridden by `--param <param>=...`. The agents are those of
``bridge.nodes.cluster_agents.agents_for``: an agents file's (``--agents``, ``$SCHEDBRIDGE_AGENTS``)
on any cluster, else, on the local testbed as root, agents the replay starts itself. Every agent is
asked to answer before anything is submitted; per-job mode (where every application would have its
own node scheduler) is refused then too.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

from tqdm import tqdm

import sparkplugin
from bridge.common import atomic
from bridge.drivers.node_engine import NODE_CORES, live_params, node_cores, node_preemption
from bridge.drivers.spark.engine import engine_settings
from bridge.nodes.cluster_agents import ConfiguredAgents, NodeAgents, agents_for, hadoop_user
from bridge.nodes.preemption import ContainerPreemptor
from bridge.plugin import inprocess as spark_inprocess
from bridge.plugin.host import PolicyHost
from bridge.replay import executor_spread
from bridge.target.config import ClusterTarget


def check(policy: str, mode: str, target: ClusterTarget, conf: Mapping[str, str],
          agents_file: Path | None = None, min_share: float | None = None) -> NodeAgents:
    """Refuse, with the reason, what `--preempt` cannot do, and find the cluster's node agents
    (every one must answer); nothing has been submitted yet. ``min_share``: the cores a shrunk
    container keeps, for agents the run starts itself (None: the agent's default)."""
    settings = policy_settings(policy, conf)  # a policy that does not preempt: the error names those that do
    if mode != "shared":
        raise ValueError("--preempt needs --mode shared: one node scheduler must see every job")
    node_cores(settings.pop(NODE_CORES, "1"))
    engine_settings(policy, settings)  # unknown or impossible parameters: the registry's error names them
    own = target.own_agents
    agents = agents_for(target.rm_client(user=hadoop_user()), target.rm_url, agents_file,
                        own=None if own is None else lambda label: own(label, min_share))
    if min_share is not None and isinstance(agents, ConfiguredAgents):
        raise ValueError(f"--min-share is for node agents a run starts itself; these are {agents.origin}, "
                         "each with its own `schedbridge agent --min-share`")
    agents.prepare()
    return agents


def policy_settings(policy: str, conf: Mapping[str, str]) -> dict[str, str]:
    """The policy's live defaults, overridden by the policy parameters of the Spark conf."""
    return live_params(policy, sparkplugin.policy_params(conf))


class PreemptiveSession:
    """A shared application whose tasks the policy's live node scheduler time-slices.

    `close` stops Spark, restores every container and the nodes' vcores, then stops the agents
    (restoring a dead agent's containers from its state file), writes the preemption commands it
    applied to ``work/preemption.json`` (with the wall-clock time each was acknowledged: when the
    container's share changed) and prints one line on those that failed."""

    def __init__(self, policy: str, conf: dict[str, str], app_name: str, work: Path, agents: NodeAgents) -> None:
        """``agents``: what `check` returned (prepared)."""
        self._work = work
        self._stack, self._agents = ExitStack(), ExitStack()
        self.preemptor = ContainerPreemptor({}, awaiting_agents=True)  # opened once the application exists
        rm = agents.rm
        nodes = sorted(n.http_address for n in rm.nodes(states=["RUNNING"]))
        if not nodes:
            raise ValueError("the ResourceManager lists no RUNNING NodeManager")
        settings = policy_settings(policy, conf)
        default_cores = max(1, int(conf.get("spark.executor.instances", "4")) // len(nodes))
        given = settings.pop(NODE_CORES, None)
        cores = default_cores if given is None else node_cores(given)
        try:
            planner = self._stack.enter_context(node_preemption(
                rm, self.preemptor, nodes, cores, policy, settings, agents.vcores_record))
            per_node = cores + planner.extra
            capacities = [executor_spread.Node(n.node_id, n.vcores_total, n.memory_mb_total)
                          for n in rm.nodes(states=["RUNNING"])]  # vcores raised by Q now
            sizing = executor_spread.size(capacities, per_node, conf, executor_spread.increment_mb(rm.conf()))
            spark_conf = {**{k: v for k, v in conf.items()   # the policy's parameters and estimates file are
                             if not sparkplugin.is_policy_param(k) and k != sparkplugin.ESTIMATES_KEY},
                          **sparkplugin.policy_conf(settings),  # in what the planner runs with
                          **sizing.spark_conf(),
                          "spark.executor.instances": str(per_node * len(nodes)),
                          "spark.dynamicAllocation.enabled": "false", "spark.locality.wait": "0s"}
            self.spark = spark_inprocess.session("yarn", PolicyHost(planner), conf=spark_conf, app_name=app_name)
            self._stack.callback(self.spark.stop)
            app_id = self.spark.sparkContext.applicationId
            executor_spread.await_spread(lambda: rm.app_containers(app_id), [c.node_id for c in capacities],
                                         per_node)
            tqdm.write(f"replay: {per_node} executors of {sizing.container_mb} MB on each of {len(nodes)} "
                       f"NodeManagers (N = {cores}, {planner.extra} more for the policy)")
            self.preemptor.attach(agents.open(self._agents, app_id, work))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            self._agents.close()  # after the restore above, which goes through the agents
            commands = [{"container": c.ref.container, "node": c.ref.node, "action": c.action,
                         "status": c.status.code.value, "seconds": c.seconds, "at_epoch": c.at_epoch, "share": c.share}
                        for c in self.preemptor.commands]
            atomic.write_text(self._work / "preemption.json", json.dumps(commands, indent=1))
            if failures := self.preemptor.failures():
                tqdm.write(f"replay: {failures}; see preemption.json")
