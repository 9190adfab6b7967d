"""How the Spark adapter interprets the cluster state's task effects: a started task is a grant.

Live, each (application, executor) is a node of the one cluster state (``bridge.cluster``). When
the state starts a policy's task on a slot, this runner records a *grant* ("one slot of executor
E for the task's stage"); Spark's launch report then *binds* the grant to a real Spark task id,
and Spark's task-end event is that task's end. Tasks Spark ran on its own (fallback rounds,
barrier stages) hold their slots in the state as foreign tasks.

Spark cannot pause a task. A suspended task *drains*: it runs on to its end on its executor while
the state counts it suspended; the slot the policy frees that way is granted to its next task,
which Spark launches when the executor has a free core, and a resumed draining task takes its new
slot without a new grant (an executor's grants are a count of cores, not particular cores). With
``Pausing.KILL`` a suspended task is killed instead (Spark re-runs it): a preemption of its task,
and, as ``pause`` tells the state, the policy's task is done.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from bridge.cluster.events import SegmentEnd
from bridge.cluster.slots import Running
from bridge.cluster.runner import Pausing, TaskRunner
from bridge.cluster.state import ClusterState
from bridge.protocol.messages import ExecutorAdded, Grant, OfferRound
from policies.framework.api import ProbeInfo

Where = tuple[int, int]  # (node, slot) of the cluster state
StageKey = tuple[str, int, int]  # (app, stage, attempt)


class SparkRunner(TaskRunner, Protocol):
    """What the engine adapter needs of a world's runner besides running tasks: where Spark's
    executors are, which Spark task is which policy task, and what to grant."""

    kind: str                # what a node is, for logs ("executors", "NodeManagers")
    names: list[str]         # the nodes' names, in node order

    def node_of_executor(self, app: str, executor: str) -> int | None:
        """The cluster-state node of one of ``app``'s executors (None: not one of its nodes)."""

    def bind(self, node: int, jobs: list[int], spark_task: int, app: str, executor: str) -> int | None:
        """Attach a task Spark launched for one of ``jobs`` on ``node``; the job, or None if no
        grant matches (Spark placed it itself)."""

    def end(self, spark_task: int, state: ClusterState, now: float) -> list[Any] | None:
        """Spark's task ended: the events and effects to schedule now, or None if it is not a
        policy task here (a task on a slot ends by its ``SegmentEnd``, as in the simulator)."""

    def unlaunched(self) -> list[tuple[Any, int]]:
        """Grants Spark has not launched yet, as (key for ``retire``, policy job), oldest first."""

    def retire(self, key: Any, state: ClusterState, now: float) -> list[Any]:
        """Spark no longer needs that grant's task: it ends, as far as the policy knows."""

    def grants(self, rnd: OfferRound, key_of: Callable[[int], StageKey]) -> tuple[Grant, ...]:
        """This round's grants to ``rnd.app`` (``key_of`` gives a policy job's stage)."""

    def take_preempt(self) -> tuple[int, ...]:
        """Spark task ids to kill this round."""

    def knows(self, spark_task: int) -> bool:
        """True if ``spark_task`` runs a policy task (bound to a grant)."""

    def spark_placed(self, app: str, executor: str) -> None:
        """Spark started a task on ``executor`` that runs no policy task (it placed it itself, or
        no grant matched its launch)."""

    def register(self, app: str, executors: Mapping[str, ExecutorAdded]) -> None:
        """The executors ``app`` has now (a runner whose nodes are not executors places them)."""

    def release(self) -> None:
        """The world is dropped: undo what this runner did to Spark's tasks, since the next world
        assumes none of it (the node driver's shrunk containers go back to full share)."""


class SparkSlots:
    """Executors ``0..n-1`` as nodes; grants waiting for Spark, and Spark tasks on state slots
    (a :class:`SparkRunner`). ``pausing`` is what a ``Suspend`` does: the task drains
    (``Pausing.SUSPEND``) or is killed (``Pausing.KILL``, the parameter ``kill_on_suspend``)."""

    def __init__(self, executors: list[str], pausing: Pausing = Pausing.SUSPEND) -> None:
        self.executors = self.names = executors       # "app/executor id", in node order
        self.kind = "executors"
        self.node_of = {e: i for i, e in enumerate(executors)}
        self.granted: dict[Where, int] = {}           # slot -> policy job id, until Spark launches it
        self.bound: dict[int, Where] = {}             # Spark task id -> slot of a policy task
        self.draining: dict[tuple[int, int], tuple[int, int]] = {}  # suspended task -> (Spark task, node)
        self.kills: list[int] = []                    # Spark task ids to preempt this round
        self.pausing = pausing

    # -- TaskRunner ---------------------------------------------------------------------------
    def run(self, node: int, slot: int, r: Running, until: float, out: list[Any]) -> None:
        """The policy started or resumed a task: Spark gets a grant for its stage on this executor,
        unless it is a draining task, which still runs."""
        draining = self.draining.pop((r.job_id, r.task), None)
        if draining is None:
            self.granted[(node, slot)] = r.job_id
        else:
            self.bound[draining[0]] = (node, slot)

    def pause(self, node: int, slot: int, r: Running, now: float, out: list[Any]) -> Pausing:
        """Suspend: a grant not launched yet is withdrawn; a running task drains, or is killed."""
        self._stop(node, slot, r)
        return self.pausing

    def _stop(self, node: int, slot: int, r: Running) -> None:
        """Withdraw the slot's grant, or drain or kill the Spark task bound to it."""
        if self.granted.pop((node, slot), None) is not None:
            return
        task = next((t for t, w in self.bound.items() if w == (node, slot)), None)
        if task is None:
            return
        del self.bound[task]
        if self.pausing is Pausing.KILL:
            self.kills.append(task)
        else:
            self.draining[(r.job_id, r.task)] = (task, node)

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

    def bind(self, node: int, jobs: list[int], spark_task: int, app: str, executor: str) -> int | None:
        where = next((w for w, j in sorted(self.granted.items()) if w[0] == node and j in jobs), None)
        if where is None:
            return None
        self.bound[spark_task] = where
        return self.granted.pop(where)

    def end(self, spark_task: int, state: ClusterState, now: float) -> list[Any] | None:
        if (where := self.bound.pop(spark_task, None)) is not None:
            return [SegmentEnd(now, *where, state.token(*where))]
        key = next((k for k, (t, _) in self.draining.items() if t == spark_task), None)
        if key is None:
            return None
        _, node = self.draining.pop(key)
        return state.finish_suspended(node, *key, now)

    def unlaunched(self) -> list[tuple[Any, int]]:
        return sorted(self.granted.items())

    def retire(self, key: Where, state: ClusterState, now: float) -> list[Any]:
        del self.granted[key]
        node, slot = key
        return state.finish(node, slot, now)

    def grants(self, rnd: OfferRound, key_of: Callable[[int], StageKey]) -> tuple[Grant, ...]:
        """``rnd.app``'s grants on its own executors (executor ids repeat across applications)."""
        count: Counter[tuple[int, int, str]] = Counter()
        for (node, _), job in self.granted.items():
            app, stage, attempt = key_of(job)
            owner, executor = self.executors[node].split("/", 1)
            if app == rnd.app and owner == app:
                count[(stage, attempt, executor)] += 1
        return tuple(Grant(st, at, ex, n) for (st, at, ex), n in sorted(count.items()))

    def take_preempt(self) -> tuple[int, ...]:
        kills, self.kills = tuple(self.kills), []
        return kills

    def spark_placed(self, app: str, executor: str) -> None:
        pass  # executors as nodes: Spark's own task holds its slot (the engine occupies it)

    def knows(self, spark_task: int) -> bool:
        return spark_task in self.bound or any(t == spark_task for t, _ in self.draining.values())

