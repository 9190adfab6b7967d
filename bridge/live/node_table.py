"""The live node side's physical truth, and the read-only `ClusterView` policies get from it.

With one-core executors an executor container runs one task at a time, so a task *is* a container
for as long as it runs. Every task Spark started on a node is in exactly one place: on one of the
node's N policy slots (running at full share), suspended by the policy, or queued (started by Spark
but never given a slot by the policy, so held at the minimum share). Time is whatever the driver
says it is (wall clock in seconds since it started); nothing here reads a clock.
"""
from __future__ import annotations

from dataclasses import dataclass

from bridge.live.preemption import ContainerRef
from policies.api import ClusterSpec, ProbeInfo, RunningTask
from workloads.model import Job

TaskKey = tuple[int, int]   # (policy job id, Spark task id)


@dataclass
class LiveTask:
    """One started Spark task and where it stands on its node."""

    node: int
    probe: ProbeInfo
    ref: ContainerRef
    slot: int = -1          # -1: suspended or queued
    started: float = 0.0    # start of the current run segment
    attained: float = 0.0   # service before the current segment
    throttled: bool = False

    @property
    def key(self) -> TaskKey:
        return self.probe.job_id, int(self.probe.task)

    def view(self) -> RunningTask:
        return RunningTask(self.slot, self.probe.job_id, int(self.probe.task), self.started, self.attained,
                           self.probe)


class NodeTable:
    """Where every live task is; implements the `policies.api.ClusterView` protocol."""

    def __init__(self, n_nodes: int, slots_per_node: int) -> None:
        self.spec = ClusterSpec(n_nodes, slots_per_node)
        self.slots: list[dict[int, LiveTask]] = [{} for _ in range(n_nodes)]
        self.suspended_: list[list[LiveTask]] = [[] for _ in range(n_nodes)]
        self.queued_: list[list[LiveTask]] = [[] for _ in range(n_nodes)]
        self.tasks: dict[TaskKey, LiveTask] = {}
        self.clock = 0.0

    # -- changes (the driver's) -------------------------------------------------------------------
    def add_queued(self, task: LiveTask) -> None:
        self.tasks[task.key] = task
        self.queued_[task.node].append(task)

    def place(self, task: LiveTask, slot: int, now: float) -> None:
        """Put a queued or suspended task on a free slot, starting a run segment now."""
        self._unlist(task)
        task.slot, task.started = slot, now
        self.slots[task.node][slot] = task

    def suspend(self, task: LiveTask, now: float) -> None:
        del self.slots[task.node][task.slot]
        task.attained += now - task.started
        task.slot = -1
        self.suspended_[task.node].append(task)

    def remove(self, task: LiveTask) -> None:
        if task.slot >= 0:
            del self.slots[task.node][task.slot]
        else:
            self._unlist(task)
        del self.tasks[task.key]

    def _unlist(self, task: LiveTask) -> None:
        for bucket in (self.queued_[task.node], self.suspended_[task.node]):
            if task in bucket:
                bucket.remove(task)

    def on_slot(self, node: int, slot: int) -> LiveTask | None:
        return self.slots[node].get(slot)

    def waiting(self, node: int, key: TaskKey) -> LiveTask | None:
        """The queued or suspended task ``key`` of ``node``."""
        return next((t for t in self.queued_[node] + self.suspended_[node] if t.key == key), None)

    # -- ClusterView -------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.clock

    def job(self, job_id: int) -> Job:
        raise KeyError(f"live job {job_id}: Spark jobs have no workload spec (the live node side needs none)")

    def free_slot(self, node: int) -> int:
        return next((s for s in range(self.spec.slots_per_node) if s not in self.slots[node]), -1)

    def free_slots(self, node: int) -> int:
        return self.spec.slots_per_node - len(self.slots[node])

    def running(self, node: int) -> tuple[RunningTask, ...]:
        return tuple(t.view() for _, t in sorted(self.slots[node].items()))

    def suspended(self, node: int) -> tuple[RunningTask, ...]:
        return tuple(t.view() for t in self.suspended_[node])

    def queued(self, node: int) -> int:
        return len(self.queued_[node])

    def free_capacity(self, node: int) -> tuple[float, ...] | None:
        return None

    def attained(self, node: int, job_id: int, task: int) -> float:
        live = self.tasks.get((job_id, task))
        if live is None:
            return 0.0
        return live.attained + (self.clock - live.started if live.slot >= 0 else 0.0)

    def is_ready(self, job_id: int, task: int) -> bool:
        return True
