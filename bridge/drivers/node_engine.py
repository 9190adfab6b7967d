"""A preempting policy on a real YARN cluster: the engine adapter with NodeManagers as nodes.

Any policy whose registry entry declares ``Preempts`` (Kairos, Big-C, Falcon and its baselines)
runs here unchanged: its central side places tasks on NodeManagers through the offer rounds, and
whatever its node side decides (``Run``, ``Suspend``, ``Resume``) reaches real containers through
``bridge.drivers.node_containers``: the node agents shrink a container's CPU to the minimum share and
restore it. The NodeManagers advertise ``extra_tasks(config)`` more vcores for the span of the run,
so YARN grants N + extra one-core executors per N-core node. A driver thread fires the policy's
timers (Kairos' quanta) between offer rounds and sends the container commands, so a hung agent
delays no offer round. Executors must report their YARN container and NodeManager
(``executor_added`` fields ``container`` and ``nm``).
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bridge.drivers.ledger import Ledger
from bridge.drivers.node_containers import NodeContainers
from bridge.drivers.spark.engine import EngineParams, EnginePlanner
from bridge.drivers.spark.slots import SparkRunner
from bridge.drivers.spark.state import AppState, LiveCluster
from bridge.drivers.topology import Nodes, slot_spec
from bridge.nodes.container_commands import ContainerCommands
from bridge.nodes.leases import LeaseRenewal
from bridge.nodes.node_capacity import Guard, NodeResources, RaisedVcores
from bridge.nodes.preemption import ContainerPreemptor, ContainerRef
from bridge.protocol.messages import ContainerChange, LiveEvent, OfferRound, Placement
from policies.framework import registry

log = logging.getLogger(__name__)
NODE_CORES = "node_cores"  # N, a node's slots: a parameter of the node driver, not of the policy


def node_cores(value: str) -> int:
    """A ``node_cores`` parameter's value as N; ValueError naming the key if it is not a whole
    number of at least 1."""
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{NODE_CORES} must be a whole number of at least 1, got {value!r}")
    return int(value)


def preempting_policies() -> list[str]:
    """Registered policies whose entry declares ``Preempts``."""
    reg = registry.default_registry()
    return [name for name in reg.names() if reg.get(name).preempts is not None]


def preempts(name: str) -> registry.Preempts:
    """Policy ``name``'s preemption capability; ValueError naming the ones that have it."""
    entry = registry.default_registry().get(name)
    if entry.preempts is None:
        raise ValueError(f"policy {name!r} does not preempt (its registry entry declares no Preempts); "
                         f"preempting policies: {', '.join(preempting_policies())}")
    return entry.preempts


def live_params(name: str, params: Mapping[str, str]) -> dict[str, str]:
    """``params`` over the policy's live defaults (``Preempts.live``)."""
    return {**preempts(name).live, **params}


class NodeManagerNodes:
    """NodeManagers as the nodes of one world that every application shares (a ``Topology``):
    executors come and go on them, the node agents resize their containers (``NodeContainers``),
    and the policy's time is the node driver's clock."""

    launch_reports = True  # a task queued on a node runs shrunk: its container must be known at once
    predicts = False       # a task's container is the policy's to pick: no launch before it decides

    def __init__(self, nodes: Sequence[str], cores: int, commands: ContainerCommands,
                 clock: Callable[[], float]) -> None:
        self.names, self.cores, self.commands, self.wall = list(nodes), cores, commands, clock

    def clock(self, rnd: OfferRound) -> float:
        return self.wall()

    def scope(self, app: str) -> str | None:
        return None  # one world: every application's executors run on the same NodeManagers

    def apps(self, scope: str | None, cluster: LiveCluster) -> list[AppState]:
        return list(cluster)

    def stale(self, runner: SparkRunner, scope: str | None, cluster: LiveCluster) -> bool:
        return False  # the nodes are the NodeManagers; executors come and go on them

    def nodes(self, scope: str | None, cluster: LiveCluster, cpus_per_task: int, ledger: Ledger) -> Nodes:
        return Nodes(slot_spec(len(self.names), self.cores), [self.cores] * len(self.names),
                     NodeContainers(self.names, self.commands, self.cores, ledger))


class NodePlanner:
    """The plugin's `RoundPlanner` for a preempting policy on NodeManagers (thread-safe): an
    engine planner on :class:`NodeManagerNodes`, called only under a lock shared with the driver
    thread that fires the policy's timers and sends the container commands."""

    def __init__(self, name: str, params: Mapping[str, str], nodes: Sequence[str], cores: int,
                 preemptor: ContainerPreemptor, clock: Callable[[], float]) -> None:
        """``nodes``: the NodeManagers' web addresses as YARN reports them; ``cores``: N, the
        slots of each; ``clock``: seconds (the policy's time; timers fire by it). ``params`` are
        taken over the policy's live defaults (``live_params``)."""
        self.lock = threading.RLock()
        self.commands = ContainerCommands(preemptor, clock, self.lock)
        self.managers = NodeManagerNodes(nodes, cores, self.commands, clock)
        self.engine = EnginePlanner(name, live_params(name, params), self.managers)
        self.name, self.settings, self.launch_reports = name, self.engine.settings, self.engine.launch_reports
        self.extra = preempts(name).extra_tasks(self.engine.config)
        self.wake = threading.Event()

    @property
    def nodes(self) -> list[str]:
        """The NodeManagers' web addresses, in node order."""
        return self.managers.names

    @property
    def cores(self) -> int:
        """N: each NodeManager's slots for the policy."""
        return self.managers.cores

    @property
    def counters(self) -> Mapping[str, int]:
        """The cluster state's counters (launches, suspends, kills, ...) since the last rebuild."""
        with self.lock:
            return self.engine.counters

    def settings_for(self, params: Mapping[str, str]) -> tuple[EngineParams, Any]:
        """An application asking for ``params`` runs with the live defaults under them, as this does;
        a ``node_cores`` other than this planner's N is refused."""
        params = dict(params)
        cores = params.pop(NODE_CORES, None)
        if cores is not None and cores != str(self.cores):
            raise ValueError(f"{NODE_CORES}: this host runs N = {self.cores}, the application asked for {cores}")
        return self.engine.settings_for(live_params(self.name, params))

    def estimates_used(self) -> list[dict[str, object]]:
        with self.lock:
            return self.engine.estimates_used()

    def demand_faults(self) -> Mapping[str, int]:
        with self.lock:
            return self.engine.demand_faults()

    def rebuild(self, state: AppState) -> None:
        with self.lock:  # the world's containers go back to full share (``NodeContainers.release``)
            self.engine.rebuild(state)

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        """The round's placement, with the application's containers suspended or resumed since its
        previous reply (for Spark's event log and UI)."""
        with self.lock:
            placement = self.engine.plan(rnd, events, cluster)
            own = cluster.app(rnd.app).executors if rnd.app in cluster else {}
            sent = self.commands.take_sent({ContainerRef(ev.nm, ev.container): executor
                                            for executor, ev in own.items() if ev.container})
        self.wake.set()  # the driver thread sends the round's container commands
        if not sent:
            return placement
        return dataclasses.replace(placement, containers=tuple(
            ContainerChange(executor, ref.container, action, ok) for executor, ref, action, ok in sent))

    def forget(self, app: str) -> None:
        with self.lock:  # the world's containers go back to full share (``NodeContainers.release``)
            self.engine.forget(app)

    def tick(self) -> None:
        """Fire the timers that are due, then send the container commands (never under the lock)."""
        with self.lock:
            self.engine.settle(None, self.managers.wall())
        self.commands.flush()

    def run(self, stop: threading.Event, period_s: float = 0.1) -> None:
        """The driver thread: tick at least every ``period_s`` and after every round, until ``stop``."""
        while not stop.is_set():
            self.wake.wait(period_s)
            self.wake.clear()
            try:
                self.tick()
            except Exception:  # a dead driver thread would freeze every quantum
                log.exception("node driver: a timer or a container command failed")


@contextmanager
def node_preemption(rm: NodeResources, preemptor: ContainerPreemptor, nodes: Sequence[str], cores: int,
                    name: str, params: Mapping[str, str], vcores_record: Path,
                    tick_s: float = 0.1, guard: Callable[[Path], Guard] | None = None) -> Iterator[NodePlanner]:
    """Policy ``name`` live on ``nodes`` for the span of the block: they advertise ``cores + extra``
    vcores, the driver thread runs, the suspends' leases are renewed, and on exit every throttled
    container and every node is restored.

    ``preemptor.agents`` maps each NodeManager address to its node agent (it may be filled in
    later, before the first task starts); ``guard`` restores the vcores if this process dies
    (``RaisedVcores``)."""
    start = time.monotonic()
    planner = NodePlanner(name, params, nodes, cores, preemptor, lambda: time.monotonic() - start)
    stop = threading.Event()
    thread = threading.Thread(target=planner.run, args=(stop, tick_s), name="node-driver", daemon=True)
    with RaisedVcores(rm, planner.extra, vcores_record, guard), LeaseRenewal(preemptor):
        thread.start()
        try:
            yield planner
        finally:
            stop.set()
            planner.wake.set()
            thread.join(timeout=10)
            planner.commands.restore()

