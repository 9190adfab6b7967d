"""How the node driver interprets the cluster state's task effects: tasks are containers to resize.

Live preemption (Kairos' prototype, and every policy whose registry entry declares ``Preempts``):
a node of the one cluster state is a NodeManager with N slots, running up to N + extra one-core
executors. An entry bound to a task that reaches a node's queue gets a grant on a free executor
of that node, so its Spark task starts in a container there; while the policy has not given it a
slot (queued) or has suspended it, the container is shrunk to the agent's minimum share; on a
slot it runs at full share. An executor running none of the policy's tasks waits shrunk, and a
grant sets its container to the granted task's share, so a queued task never starts at full
share. A task that ends off a slot (it still made progress at the minimum share) is finished as
it ends for a policy that hears it (an ``OffSlotEnd`` event, which the state applies by
``ClusterState.end_off_slot``: the hook ``on_queued_task_ended``); for any other, it is finished
when the policy next gives it a slot: the policy's queues and the state's stay the same, and the
task ends at once. Which task waits, runs or ended is the world's ledger's
(``bridge.drivers.ledger``); this runner keeps only the executors' containers and their shares.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bridge.cluster.events import SegmentEnd
from bridge.cluster.slots import Running
from bridge.cluster.runner import Pausing
from bridge.drivers.ledger import Ledger, TaskKey
from bridge.nodes.container_commands import ContainerCommands
from bridge.nodes.preemption import ContainerRef
from bridge.protocol.messages import ExecutorAdded, Grant, OfferRound
from policies.framework.api import ProbeInfo

log = logging.getLogger(__name__)


class NodeContainers:
    """NodeManagers ``0..n-1`` as nodes; Spark tasks in containers on them (a ``SparkRunner``)."""

    def __init__(self, nodes: Sequence[str], commands: ContainerCommands, slots: int, ledger: Ledger) -> None:
        """``nodes``: the NodeManagers' web addresses as YARN reports them (``host:port``);
        ``slots``: N, each node's slots (its executors beyond N are the extra ones)."""
        self.slots = slots
        self.node_of = {address: i for i, address in enumerate(nodes)}
        self.names, self.kind = list(nodes), "NodeManagers"
        self.commands = commands
        self.ledger = ledger
        self.executors: dict[tuple[str, str], tuple[int, ContainerRef]] = {}  # (app, executor) ->
        self.shrunk: set[ContainerRef] = set()               # containers we asked to shrink

    # -- TaskRunner ---------------------------------------------------------------------------
    @property
    def notices_queues(self) -> bool:
        return True

    def queued(self, node: int, probe: ProbeInfo) -> None:
        """A bound entry reached ``node``: its task gets an executor there (granted each round)."""
        if probe.task is not None:
            self.ledger.queue((probe.job_id, probe.task), node)

    def run(self, node: int, slot: int, r: Running, until: float, out: list[Any]) -> None:
        """On a slot: full share, or, if it already ended, it finishes now."""
        key = (r.job_id, r.task)
        e = self.ledger.place(key, node, slot)
        if e.ended:
            self.ledger.drop(key)
            out.append(SegmentEnd(r.start, node, slot, r.token))
        elif isinstance(e.container, ContainerRef):
            self._want(e.container, "resume")

    def pause(self, node: int, slot: int, r: Running, now: float, out: list[Any]) -> Pausing:
        """Off its slot the task's container shrinks: it keeps its progress and can resume."""
        e = self.ledger.unplace((r.job_id, r.task))
        if e is not None and isinstance(e.container, ContainerRef):
            self._want(e.container, "suspend")
        return Pausing.SUSPEND

    # -- SparkRunner ----------------------------------------------------------------------------
    def register(self, app: str, executors: Mapping[str, ExecutorAdded]) -> None:
        """Places ``app``'s executors on their NodeManagers by the container and node they report."""
        for executor, ev in executors.items():
            if (app, executor) in self.executors:
                continue
            if ev.nm not in self.node_of or not ev.container:
                raise ValueError(f"executor {executor} of {app}: no YARN container on a known NodeManager "
                                 f"(container {ev.container!r}, nm {ev.nm!r}; known {sorted(self.node_of)})")
            self.executors[(app, executor)] = (self.node_of[ev.nm], ContainerRef(ev.nm, ev.container))
            self._shrink_idle(self.executors[(app, executor)][1])
        for key in [k for k in self.executors if k[0] == app and k[1] not in executors]:
            del self.executors[key]

    def node_of_executor(self, app: str, executor: str) -> int | None:
        where = self.executors.get((app, executor))
        return None if where is None else where[0]

    def bind(self, node: int, jobs: list[int], spark_task: int, app: str, executor: str) -> TaskKey | None:
        where = self.executors.get((app, executor))
        mine = self.ledger.waiting_at(node, jobs)
        if where is None or not mine:
            return None     # the engine tells ``spark_placed`` of it
        ref = where[1]
        # the task its grant shrank (or left at full share) the executor for, if Spark launched another
        key = next((k for k in mine if self._on_slot(k) != (ref in self.shrunk)), mine[0])
        self.ledger.bind(key, spark_task, ref)
        log.info("node driver: Spark task %d runs policy task %s in %s (%s)", spark_task, key, ref.container,
                 "full share" if self._on_slot(key) else "waiting: minimum share")
        self._share_for(key, ref)
        return key

    def spark_placed(self, app: str, executor: str) -> None:
        """Spark's own task (a fallback round's, or a launch no waiting task matched) in an idle
        executor, which waits shrunk: full share."""
        where = self.executors.get((app, executor))
        if where is not None:
            self._unshrink_idle(where[1])

    def spark_ended(self, container: object) -> None:
        """The executor that ran a policy task waits shrunk if it runs none now."""
        if isinstance(container, ContainerRef):
            self._shrink_idle(container)

    def grants(self, rnd: OfferRound) -> tuple[Grant, ...]:
        """Each waiting task of ``rnd.app`` gets a free executor of its node, oldest first; the
        executor's container is set to the task's share now, so that a task queued at the node
        starts at the minimum share rather than running at full share until its launch is
        reported (its first tenth of a second, measured: docs/sim-to-real.md). Tasks off their
        slots hold at most a node's extra executors (those beyond N), so a task its node gives a
        slot always finds one free: Kairos never sends a node more, Falcon's workers queue
        without bound, and the rest of their queue waits without an executor."""
        free = {s.executor: s.free // max(rnd.cpus_per_task, 1) for s in rnd.slots}
        count: Counter[tuple[int, int, str]] = Counter()
        held = Counter(e.node for _, e in self.ledger.bound() if e.at is None)
        for key, e in self.ledger.waiting():
            node = e.node
            mine = [(x, ref) for (app, x), (n, ref) in sorted(self.executors.items()) if app == rnd.app and n == node]
            extra = sum(1 for n, _ in self.executors.values() if n == node) - self.slots
            app, stage, attempt = self.ledger.job(key[0]).key
            off_slot = e.at is None
            if app != rnd.app or (off_slot and held[node] >= extra):
                continue
            chosen = next(((x, ref) for x, ref in mine if free.get(x, 0) > 0), None)
            if chosen is not None:
                free[chosen[0]] -= 1
                count[(stage, attempt, chosen[0])] += 1
                held[node] += off_slot
                self._share_for(key, chosen[1])
        return tuple(Grant(st, at, ex, n) for (st, at, ex), n in sorted(count.items()))

    def release(self) -> None:
        """Every container this runner shrank goes back to full share (the commands are sent by
        the driver thread)."""
        for ref in sorted(self.shrunk):
            self._want(ref, "resume")

    def _on_slot(self, key: TaskKey) -> bool:
        e = self.ledger.entry(key)
        return e is not None and e.at is not None

    def _share_for(self, key: TaskKey, ref: ContainerRef) -> None:
        """``ref`` at the share policy task ``key`` runs at: full on a slot, else the minimum."""
        on_slot = self._on_slot(key)
        if on_slot == (ref in self.shrunk):
            self._want(ref, "resume" if on_slot else "suspend")

    def _shrink_idle(self, ref: ContainerRef) -> None:
        """An executor running none of the policy's tasks waits at the minimum share, so that a
        task queued at its node starts there at that share; a task given a slot restores the
        full share with its grant (:meth:`_share_for`). Either way the few milliseconds until
        the agent applies it cost a task little, where a queued task that ran its first ones at
        full share made a tenth of that time ten times longer in a simulation that plays it at
        the minimum share (docs/sim-to-real.md)."""
        if ref not in self.shrunk and self._idle(ref):
            self._want(ref, "suspend")

    def _unshrink_idle(self, ref: ContainerRef) -> None:
        """Full share for ``ref`` if it is shrunk and runs none of the policy's tasks (Spark's
        own task launched there)."""
        if ref in self.shrunk and self._idle(ref):
            self._want(ref, "resume")

    def _idle(self, ref: ContainerRef) -> bool:
        return all(e.container != ref for _, e in self.ledger.bound())

    def _want(self, ref: ContainerRef, action: str) -> None:
        (self.shrunk.add if action == "suspend" else self.shrunk.discard)(ref)
        self.commands.want(ref, action)
