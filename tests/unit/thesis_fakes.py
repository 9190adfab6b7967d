"""A hand-built ClusterView for stepping the thesis policies' hooks in unit tests."""
from __future__ import annotations

from dataclasses import dataclass, field

from policies.framework.api import ClusterSpec, PolicyEnv, RunningTask
from workloads.model import Job


@dataclass
class FakeView:
    """Physical state set by the test: running tasks per node (by slot), suspended tasks,
    queued-entry counts and jobs. Only what the thesis policies read is implemented."""

    spec: ClusterSpec
    now: float = 0.0
    jobs: dict[int, Job] = field(default_factory=dict)
    run: dict[int, list[RunningTask]] = field(default_factory=dict)
    susp: dict[int, list[RunningTask]] = field(default_factory=dict)
    queue_len: dict[int, int] = field(default_factory=dict)

    def job(self, job_id: int) -> Job:
        return self.jobs[job_id]

    def running(self, node: int) -> tuple[RunningTask, ...]:
        return tuple(self.run.get(node, ()))

    def suspended(self, node: int) -> tuple[RunningTask, ...]:
        return tuple(self.susp.get(node, ()))

    def free_slot(self, node: int) -> int:
        busy = {t.slot for t in self.running(node)}
        return next((s for s in range(self.spec.slots_per_node) if s not in busy), -1)

    def free_slots(self, node: int) -> int:
        return self.spec.slots_per_node - len(self.running(node))

    def free_slot_ids(self, node: int) -> tuple[int, ...]:
        busy = {t.slot for t in self.running(node)}
        return tuple(s for s in range(self.spec.slots_per_node) if s not in busy)

    def queued(self, node: int) -> int:
        return self.queue_len.get(node, 0)

    def attained(self, node: int, job_id: int, task: int) -> float:
        for t in self.running(node):
            if (t.job_id, t.task) == (job_id, task):
                return t.attained + self.now - t.started
        for t in self.suspended(node):
            if (t.job_id, t.task) == (job_id, task):
                return t.attained
        raise KeyError((node, job_id, task))

    def free_capacity(self, node: int) -> None:
        return None

    def is_ready(self, job_id: int, task: int) -> bool:
        return True


def env(n_nodes: int, slots: int = 1, seed: int = 1) -> PolicyEnv:
    return PolicyEnv(ClusterSpec(n_nodes, slots), seed)
