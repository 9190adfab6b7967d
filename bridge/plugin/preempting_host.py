"""A preempting policy in a policy host: `schedbridge serve`, or the host the plugin starts beside a driver.

A host given an agents file serves a policy whose registry entry declares ``Preempts`` (Kairos, Big-C,
Falcon and its baselines) with ``bridge.drivers.node_engine``'s planner on the cluster's NodeManagers: the
agents are asked to answer first (``cluster_agents.connect``), the NodeManagers advertise the policy's
extra vcores for as long as the host runs, and the host's ``ExitStack`` restores every throttled
container and every node's vcores when it stops. Any other policy, or any policy without an agents file, gets
the usual planner (``spark_planners.make_planner``).

N, the slots of a node, is ``node_cores`` among the parameters, else the vcores each NodeManager
advertised before any raise (the smallest, if they differ): our reading of Kairos' N, a node's cores.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path

from bridge.drivers.node_engine import NODE_CORES, NodePlanner, node_cores, node_preemption, preempting_policies
from bridge.drivers.planners import RoundPlanner, make_planner
from bridge.nodes.cluster_agents import AgentsConfig, agents_file, connect, default_vcores_record, hadoop_user, load
from bridge.nodes.node_capacity import load_record
from bridge.nodes.preemption import ContainerPreemptor
from bridge.nodes.vcores_guard import GuardTarget
from bridge.target.config import resolve
from yarnclient.errors import YarnError
from yarnclient.resourcemanager import ResourceManagerClient


def node_planner(stack: ExitStack, policy: str, params: Mapping[str, str], config: AgentsConfig,
                 rm: ResourceManagerClient, rm_url: str) -> NodePlanner:
    """Policy ``policy`` live on the cluster's NodeManagers through ``config``'s agents until
    ``stack`` closes; ValueError (naming the node, key or agent) if it cannot start."""
    try:
        agents = connect(config, rm)
        for agent in agents.values():
            stack.callback(agent.close)
        record = config.vcores_record or default_vcores_record(rm_url)
        settings = dict(params)
        given = settings.pop(NODE_CORES, None)
        cores = advertised_cores(rm, record) if given is None else node_cores(given)
        preemptor = ContainerPreemptor(agents, lease_s=config.lease_s)
        guard = GuardTarget((rm_url,), hadoop_user()).start  # vcores back even after a SIGKILL
        return stack.enter_context(node_preemption(rm, preemptor, sorted(agents), cores,
                                                   policy, settings, record, guard=guard))
    except YarnError as exc:
        raise ValueError(f"the ResourceManager at {rm_url}: {exc}") from None


def advertised_cores(rm: ResourceManagerClient, record_path: Path) -> int:
    """The smallest vcores a RUNNING NodeManager advertises, as a killed run's record kept them
    (the RM may still show that run's raised values)."""
    record = load_record(record_path)
    vcores = [record.get(n.node_id, (n.vcores_total, 0))[0] for n in rm.nodes(states=["RUNNING"])]
    if not vcores:
        raise ValueError("the ResourceManager lists no RUNNING NodeManager")
    return min(vcores)


def planner_factory(stack: ExitStack, config: AgentsConfig | None, rm: ResourceManagerClient | None,
                    rm_url: str) -> Callable[[str, Mapping[str, str]], RoundPlanner]:
    """What a host builds a planner with: a preempting policy on the agents (if configured), any
    other policy (or no agents file) the usual way."""
    def make(policy: str, params: Mapping[str, str]) -> RoundPlanner:
        if config is None or rm is None or policy not in preempting_policies():
            return make_planner(policy, params)
        return node_planner(stack, policy, params, config, rm, rm_url)
    return make


def host_planners(stack: ExitStack, agents: Path | None = None, conf_dir: Path | None = None,
                  environ: Mapping[str, str] | None = None) -> Callable[[str, Mapping[str, str]], RoundPlanner]:
    """The planner factory of a host whose agents file is ``agents``, else ``$SCHEDBRIDGE_AGENTS``
    (none: every policy the usual way), on the cluster of ``conf_dir`` (else ``$HADOOP_CONF_DIR``,
    ``$YARN_CONF_DIR``, the default cluster: the local testbed in a host `schedbridge serve` runs; a
    host beside a driver has the driver's configuration); the file is read and checked now, its
    agents asked when a preempting policy is built."""
    environ = os.environ if environ is None else environ
    path, origin = agents_file(agents, environ)
    if path is None:
        return make_planner
    config = load(path, origin)
    try:
        target = resolve(conf_dir, environ, hdfs=False)
    except YarnError as exc:
        raise ValueError(str(exc)) from None
    return planner_factory(stack, config, target.rm_client(user=hadoop_user(environ)), target.rm_url)
