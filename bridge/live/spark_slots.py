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
``Pausing.KILL`` a suspended task is killed instead (Spark re-runs it): a preemption of its task.
"""
from __future__ import annotations

from typing import Any

from bridge.cluster.slots import Running

Where = tuple[int, int]  # (node, slot) of the cluster state


class SparkSlots:
    """Executors ``0..n-1`` as nodes; grants waiting for Spark, and Spark tasks on state slots.

    Implements :class:`~bridge.cluster.state.TaskRunner` for the Spark adapter."""

    def __init__(self, executors: list[str]) -> None:
        self.executors = executors                    # "app/executor id", in node order
        self.node_of = {e: i for i, e in enumerate(executors)}
        self.granted: dict[Where, int] = {}           # slot -> policy job id, until Spark launches it
        self.bound: dict[int, Where] = {}             # Spark task id -> slot of a policy task
        self.foreign: dict[int, Where] = {}           # Spark task id -> slot of a task Spark placed
        self.draining: dict[tuple[int, int], int] = {}  # suspended policy task -> its Spark task
        self.kills: list[int] = []                    # Spark task ids to preempt this round
        self.kill = False                             # Pausing.KILL: a suspended task is killed

    # -- TaskRunner ---------------------------------------------------------------------------
    def run(self, node: int, slot: int, r: Running, until: float, out: list[Any]) -> None:
        """The policy started or resumed a task: Spark gets a grant for its stage on this executor,
        unless it is a draining task, which still runs."""
        task = self.draining.pop((r.job_id, r.task), None)
        if task is None:
            self.granted[(node, slot)] = r.job_id
        else:
            self.bound[task] = (node, slot)

    def pause(self, node: int, slot: int, r: Running, now: float, out: list[Any]) -> None:
        """Suspend: a grant not launched yet is withdrawn; a running task drains, or is killed."""
        if self.granted.pop((node, slot), None) is not None:
            return
        task = next((t for t, w in self.bound.items() if w == (node, slot)), None)
        if task is None:
            return
        del self.bound[task]
        if self.kill:
            self.kills.append(task)
        else:
            self.draining[(r.job_id, r.task)] = task

    # -- Spark's side ---------------------------------------------------------------------------
    def bind(self, node: int, jobs: list[int], spark_task: int) -> int | None:
        """Attach a task Spark launched on ``node`` for one of ``jobs`` (a stage's policy jobs) to
        a grant; returns the job it ran for (None: no such grant, Spark placed it itself)."""
        where = next((w for w, j in sorted(self.granted.items()) if w[0] == node and j in jobs), None)
        if where is None:
            return None
        self.bound[spark_task] = where
        return self.granted.pop(where)

    def drained(self, spark_task: int) -> tuple[int, int] | None:
        """The policy task (job id, task) of a draining Spark task that ended, if it was one."""
        key = next((k for k, t in self.draining.items() if t == spark_task), None)
        if key is not None:
            del self.draining[key]
        return key

    def app_of(self, node: int) -> str:
        return self.executors[node].split("/", 1)[0]

    def executor_of(self, node: int) -> str:
        return self.executors[node].split("/", 1)[1]
