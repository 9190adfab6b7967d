"""How the Spark adapter interprets the cluster state's task effects: a started task is a grant.

Live, each (application, executor) is a node of the one cluster state (``bridge.cluster``). When
the state starts a policy's task on a slot, this runner records a *grant* ("one slot of executor
E for the task's stage") in the world's ledger (``bridge.drivers.ledger``); the planner binds it to
the Spark task Spark launches for it, and Spark's task-end event is that task's end. Tasks Spark
ran on its own (fallback rounds, barrier stages) hold their slots in the state as foreign tasks.

Spark cannot pause a task. A suspended task *drains*: it runs on to its end on its executor while
the state counts it suspended; the slot the policy frees that way is granted to its next task,
which Spark launches when the executor has a free core, and a resumed draining task takes its new
slot without a new grant (an executor's grants are a count of cores, not particular cores). With
``Pausing.KILL`` a suspended task is killed instead (Spark re-runs it): a preemption of its task,
and, as ``pause`` tells the state, the policy's task is done.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

from bridge.cluster.slots import Running
from bridge.cluster.runner import Pausing, TaskRunner
from bridge.drivers.ledger import Ledger, TaskKey
from bridge.protocol.messages import ExecutorAdded, Grant, OfferRound
from policies.framework.api import ProbeInfo


class SparkRunner(TaskRunner, Protocol):
    """A world's runner as the engine planner sees it besides running tasks: where Spark's
    executors are, which waiting task a launch is, and what to grant. It records what the state's
    effects mean for Spark in the world's ledger and calls neither the state nor the planner."""

    kind: str                # what a node is, for logs ("executors", "NodeManagers")
    names: list[str]         # the nodes' names, in node order

    def node_of_executor(self, app: str, executor: str) -> int | None:
        """The cluster-state node of one of ``app``'s executors (None: not one of its nodes)."""

    def bind(self, node: int, jobs: list[int], spark_task: int, app: str, executor: str) -> TaskKey | None:
        """Spark launched ``spark_task`` for one of ``jobs`` on ``node``: the waiting task it runs,
        bound in the ledger, or None if none matches (Spark placed it itself)."""

    def grants(self, rnd: OfferRound) -> tuple[Grant, ...]:
        """This round's grants to ``rnd.app``, for the ledger's waiting tasks."""

    def spark_placed(self, app: str, executor: str) -> None:
        """Spark started a task on ``executor`` that runs no policy task (it placed it itself, or
        no grant matched its launch)."""

    def spark_ended(self, container: object) -> None:
        """A Spark task that ran a policy task in ``container`` ended."""

    def register(self, app: str, executors: Mapping[str, ExecutorAdded]) -> None:
        """The executors ``app`` has now (a runner whose nodes are not executors places them)."""

    def release(self) -> None:
        """The world is dropped: undo what this runner did to Spark's tasks, since the next world
        assumes none of it (the node driver's shrunk containers go back to full share)."""


class SparkSlots:
    """Executors ``0..n-1`` as nodes whose started tasks are grants (a :class:`SparkRunner`).
    ``pausing`` is what a ``Suspend`` does: the task drains (``Pausing.SUSPEND``) or is killed
    (``Pausing.KILL``, the parameter ``kill_on_suspend``)."""

    def __init__(self, executors: list[str], ledger: Ledger, pausing: Pausing = Pausing.SUSPEND) -> None:
        self.executors = self.names = executors       # "app/executor id", in node order
        self.kind = "executors"
        self.node_of = {e: i for i, e in enumerate(executors)}
        self.ledger = ledger
        self.pausing = pausing

    # -- TaskRunner ---------------------------------------------------------------------------
    def run(self, node: int, slot: int, r: Running, until: float, out: list[Any]) -> None:
        """The policy started or resumed a task: Spark gets a grant for its stage on this executor,
        unless it is a draining task, which still runs."""
        key = (r.job_id, r.task)
        e = self.ledger.entry(key)
        if e is not None and e.spark is not None and e.at is None:
            self.ledger.place(key, node, slot)
        else:
            self.ledger.grant(key, node, slot)

    def pause(self, node: int, slot: int, r: Running, now: float, out: list[Any]) -> Pausing:
        """Suspend: a grant not launched yet is withdrawn; a running task drains, or is killed."""
        key = (r.job_id, r.task)
        e = self.ledger.entry(key)
        if e is None or e.at != (node, slot):
            return self.pausing
        if e.spark is None:
            self.ledger.drop(key)
        elif self.pausing is Pausing.KILL:
            self.ledger.kill(key)
        else:
            self.ledger.unplace(key, node)
        return self.pausing

    @property
    def notices_queues(self) -> bool:
        return False

    def queued(self, node: int, probe: ProbeInfo) -> None:
        """Nothing to do: Spark starts a task when its grant is launched."""

    # -- Spark's side ---------------------------------------------------------------------------
    def node_of_executor(self, app: str, executor: str) -> int | None:
        return self.node_of.get(f"{app}/{executor}")

    def register(self, app: str, executors: Mapping[str, ExecutorAdded]) -> None:
        """Nothing to do: the executors are the nodes (a new set rebuilds the world)."""

    def release(self) -> None:
        """Nothing to undo: a draining task runs on, a killed one is gone."""

    def bind(self, node: int, jobs: list[int], spark_task: int, app: str, executor: str) -> TaskKey | None:
        """The grant of the lowest slot of ``node`` for one of ``jobs``."""
        key = next(iter(self.ledger.waiting_at(node, jobs)), None)
        if key is not None:
            self.ledger.bind(key, spark_task)
        return key

    def grants(self, rnd: OfferRound) -> tuple[Grant, ...]:
        """``rnd.app``'s grants on its own executors (executor ids repeat across applications)."""
        count: Counter[tuple[int, int, str]] = Counter()
        for (job, _), e in self.ledger.waiting():
            app, stage, attempt = self.ledger.job(job).key
            owner, executor = self.executors[e.node].split("/", 1)
            if app == rnd.app and owner == app:
                count[(stage, attempt, executor)] += 1
        return tuple(Grant(st, at, ex, n) for (st, at, ex), n in sorted(count.items()))

    def spark_placed(self, app: str, executor: str) -> None:
        pass  # executors as nodes: Spark's own task holds its slot (the engine occupies it)

    def spark_ended(self, container: object) -> None:
        pass  # an executor's cores are the state's slots: nothing else to do
