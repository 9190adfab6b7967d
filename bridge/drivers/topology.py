"""What a node of an engine planner's cluster state is: the one thing its two live drivers differ in.

The engine planner (``bridge.drivers.spark.engine.EnginePlanner``) runs a policy on worlds (a
cluster state with its kernel and runner) and asks its :class:`Topology` what a world's nodes
are. :class:`ExecutorNodes`: each application is a cluster of its own whose nodes are its
executors (``SparkSlots``), a new set of executors is a new set of nodes, and time is the
plugin's clock. ``bridge.drivers.node_engine.NodeManagerNodes``: one cluster of NodeManagers that
every application's executors come and go on, whose containers the node agents resize
(``NodeContainers``), on the node driver's wall clock.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bridge.cluster.runner import Pausing
from bridge.drivers.ledger import Ledger
from bridge.drivers.spark.slots import SparkRunner, SparkSlots
from bridge.drivers.spark.state import AppState, LiveCluster
from bridge.protocol.messages import ExecutorAdded, OfferRound
from policies.framework.api import ClusterSpec

# The one resource live when an executor's memory is not known: task slots (cores / spark.task.cpus).
SLOT_RESOURCE = ("slots",)
# Else executors' cores and GB of memory, as the simulator's nodes (``bridge.sim.shape.RESOURCES``).
EXECUTOR_RESOURCES = ("cpu", "mem")


@dataclass(frozen=True, slots=True)
class Nodes:
    """A new world's nodes: its cluster spec, the slots each node really has (the spec gives every
    node the most any has), and the runner that plays its tasks on them."""

    spec: ClusterSpec
    slots: list[int]
    runner: SparkRunner


def slot_spec(n_nodes: int, slots: int) -> ClusterSpec:
    """A live cluster spec: ``slots`` per node, one slot per task, no network delay."""
    return ClusterSpec(n_nodes=n_nodes, slots_per_node=slots, resources=SLOT_RESOURCE,
                       capacity=(float(slots),), network_delay=0.0)


def executor_spec(executors: Sequence[ExecutorAdded], slots: int) -> ClusterSpec:
    """A live cluster spec of ``executors`` with ``slots`` per node: their cores and GB of memory
    where the plugin reports every executor's memory, so that declared task demands pack against
    them; else :func:`slot_spec`."""
    if not executors or any(x.memory_mb <= 0 for x in executors):
        return slot_spec(max(len(executors), 1), slots)
    caps = [(float(x.cores), x.memory_mb / 1024) for x in executors]
    top = (max(c for c, _ in caps), max(m for _, m in caps))
    return ClusterSpec(n_nodes=len(caps), slots_per_node=slots, resources=EXECUTOR_RESOURCES, capacity=top,
                       network_delay=0.0, node_capacity=None if len(set(caps)) == 1 else tuple(caps))


class Topology(Protocol):
    """What the nodes of a planner's worlds are, which world a round goes to, and its time."""

    launch_reports: bool  # the planner wants Spark's launches at once (``RoundPlanner``)
    predicts: bool        # replies predict what a freed slot may launch at once (``bridge.drivers.spark.ahead``)

    def clock(self, rnd: OfferRound) -> float:
        """The policy's time at ``rnd``, in seconds (its timers fire by it)."""

    def scope(self, app: str) -> str | None:
        """Which world ``app``'s rounds go to (None: the one world every application shares)."""

    def apps(self, scope: str | None, cluster: LiveCluster) -> list[AppState]:
        """The applications whose executors the nodes of ``scope``'s world are, or host."""

    def stale(self, runner: SparkRunner, scope: str | None, cluster: LiveCluster) -> bool:
        """True if the world whose runner is ``runner`` no longer has the cluster's nodes."""

    def nodes(self, scope: str | None, cluster: LiveCluster, cpus_per_task: int, ledger: Ledger) -> Nodes:
        """The nodes of a new world for ``scope``, whose runner records in the world's ``ledger``."""


class ExecutorNodes:
    """Each application's executors are the nodes of its own world (a :class:`Topology`).

    ``pausing`` is what a ``Suspend`` does to a Spark task (``SparkSlots``): it drains, or it is
    killed (the adapter's parameter ``kill_on_suspend``)."""

    launch_reports = False  # a launch can wait for the next round that has a free slot
    predicts = True         # an executor's freed slot may launch its last stage's next task at once

    def __init__(self, pausing: Pausing = Pausing.SUSPEND) -> None:
        self.pausing = pausing
        self._t0_ms: int | None = None

    def clock(self, rnd: OfferRound) -> float:
        """Seconds since the first round, by the plugin's clock."""
        if self._t0_ms is None:
            self._t0_ms = rnd.now_ms
        return (rnd.now_ms - self._t0_ms) / 1000.0

    def scope(self, app: str) -> str | None:
        return app

    def apps(self, scope: str | None, cluster: LiveCluster) -> list[AppState]:
        return [cluster.app(scope)] if scope is not None and scope in cluster else []

    def stale(self, runner: SparkRunner, scope: str | None, cluster: LiveCluster) -> bool:
        """A new set of executors is a new set of nodes."""
        return runner.names != self._executors(scope, cluster)

    def nodes(self, scope: str | None, cluster: LiveCluster, cpus_per_task: int, ledger: Ledger) -> Nodes:
        added = {f"{a.app}/{e}": x for a in self.apps(scope, cluster) for e, x in a.executors.items()}
        names = self._executors(scope, cluster)
        per_node = [max(added[name].cores // cpus_per_task, 0) for name in names]
        spec = executor_spec([added[name] for name in names], max(per_node + [1]))
        return Nodes(spec, per_node, SparkSlots(names, ledger, self.pausing))

    def _executors(self, scope: str | None, cluster: LiveCluster) -> list[str]:
        """The scope's executors as ``app/executor``, in node order."""
        return [f"{app.app}/{e}" for app in self.apps(scope, cluster) for e in app.executors]
