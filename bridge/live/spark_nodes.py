"""The physical truth a live policy decides over: executors as nodes, their slots and queues.

The simulator moves tasks through node queues and slots with network delays; live, the same
moves happen instantly inside one offer round, and a slot a policy *reserves* for a task becomes
a grant to Spark ("one slot of executor E for stage S"). Spark's launch report then binds the
reservation to a real Spark task id; Spark's task-end event frees the slot. Tasks Spark ran on
its own (fallback rounds) occupy slots as *foreign* tasks so free-slot counts stay true.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from policies.api import ProbeInfo, RunningTask


@dataclass(slots=True)
class SlotState:
    """One task slot. ``job_id == -1`` means free; ``spark_task is None`` with a job: reserved."""

    job_id: int = -1
    task: int = -1
    probe: ProbeInfo | None = None
    spark_task: int | None = None
    started: float = 0.0
    bound: bool = False   # reserved for a known task (else waiting for the scheduler's answer)

    @property
    def free(self) -> bool:
        return self.job_id == -1 and self.probe is None

    def clear(self) -> None:
        self.job_id, self.task, self.probe, self.spark_task, self.bound = -1, -1, None, None, False


FOREIGN = -2  # job id of a task Spark placed itself


class LiveNodes:
    """Executors ``0..n-1`` (in registration order) with ``slots`` slots each, and node queues."""

    def __init__(self, executors: list[str], slots: int) -> None:
        self.executors = executors
        self.node_of = {e: i for i, e in enumerate(executors)}
        self.slots = [[SlotState() for _ in range(slots)] for _ in executors]
        self.queues: list[list[ProbeInfo]] = [[] for _ in executors]
        self.by_spark_task: dict[int, tuple[int, int]] = {}

    def free_slot(self, node: int) -> int:
        return next((i for i, s in enumerate(self.slots[node]) if s.free), -1)

    def free_count(self, node: int) -> int:
        return sum(s.free for s in self.slots[node])

    def running(self, node: int) -> tuple[RunningTask, ...]:
        return tuple(RunningTask(i, s.job_id, s.task, s.started, 0.0, s.probe)
                     for i, s in enumerate(self.slots[node]) if s.spark_task is not None and s.job_id >= 0)

    def reserve(self, node: int, slot: int, probe: ProbeInfo, job_id: int, task: int, bound: bool) -> int:
        """Reserve ``slot``, or another free slot of ``node`` if it is taken: a policy cannot see the
        slots held by foreign tasks or by reservations Spark has not launched yet, so live a
        decision's slot index only names its node. Returns the slot reserved; -1 for an unknown
        slot or a node with none free (a decision contradicting the truth)."""
        if not (0 <= node < len(self.slots) and 0 <= slot < len(self.slots[node])):
            return -1
        if not self.slots[node][slot].free:
            slot = self.free_slot(node)
            if slot < 0:
                return -1
        s = self.slots[node][slot]
        s.job_id, s.task, s.probe, s.bound = job_id, task, probe, bound
        return slot

    def unstarted(self) -> Iterator[tuple[int, int, SlotState]]:
        """Reserved slots bound to a task that Spark has not launched yet (the grants)."""
        for n, slots in enumerate(self.slots):
            for i, s in enumerate(slots):
                if s.bound and s.spark_task is None and s.job_id >= 0:
                    yield n, i, s

    def bind(self, node: int, job_id: int, spark_task: int, now: float) -> bool:
        """Attach a task Spark launched for ``job_id`` on ``node`` to one of its reservations."""
        for i, s in enumerate(self.slots[node]):
            if s.bound and s.job_id == job_id and s.spark_task is None:
                s.spark_task, s.started = spark_task, now
                self.by_spark_task[spark_task] = (node, i)
                return True
        return False

    def occupy_foreign(self, node: int, spark_task: int, now: float) -> None:
        slot = self.free_slot(node)
        if slot >= 0:
            s = self.slots[node][slot]
            s.job_id, s.spark_task, s.started = FOREIGN, spark_task, now
            self.by_spark_task[spark_task] = (node, slot)

    def release(self, spark_task: int) -> tuple[int, int, SlotState] | None:
        """Frees the slot of an ended Spark task; returns (node, slot, state before)."""
        where = self.by_spark_task.pop(spark_task, None)
        if where is None:
            return None
        node, slot = where
        s = self.slots[node][slot]
        before = SlotState(s.job_id, s.task, s.probe, s.spark_task, s.started, s.bound)
        s.clear()
        return node, slot, before

    def dequeue(self, node: int, probe: ProbeInfo) -> bool:
        q = self.queues[node]
        if probe in q:
            q.remove(probe)
            return True
        return False
