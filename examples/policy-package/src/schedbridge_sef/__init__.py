"""Shortest estimate first: an example of a policy in its own package (see README.md).

One central queue of jobs ordered by ``Job.estimate`` (the mean task duration a scheduler may
believe, not the truth), ties broken by arrival or by size; each task goes, bound, to the slot
that has been free longest. The scheduler keeps its own count of free slots: it learns that a
slot freed from ``TaskFinished``, one network delay after the fact, so it never sends two tasks
to one slot. A node runs what it is given and queues, in arrival order, what finds no free slot.
Jobs whose tasks depend on each other (DAGs) are refused: this policy orders jobs, not tasks.
"""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from policies.framework.api import (
    Assign, ClusterView, Code, Decisions, JobArrival, PolicyEnv, ProbeArrival, ProbeInfo, Reject, Run,
    SlotFreed, Status, TaskFinished,
)
from policies.framework.registry import PolicyEntry

NAME = "shortest-estimate-first"


@dataclass(frozen=True)
class SefConfig:
    """``tie_break``: among jobs of equal estimate, the earliest (``arrival``) or the one with
    fewer tasks (``size``) goes first."""

    tie_break: Literal["arrival", "size"] = "arrival"


class ShortestEstimateFirst:
    """The policy object: scheduler side (job queue, free slots) and node side (local queues)."""

    name = NAME

    def __init__(self, config: SefConfig, env: PolicyEnv) -> None:
        spec = env.cluster
        self.by_size = config.tie_break == "size"
        # one token per free slot, the longest free first
        self.free: deque[int] = deque(n for _ in range(spec.slots_per_node) for n in range(spec.n_nodes))
        self.queue: list[tuple[float, int, int, int]] = []  # (estimate, tie, arrival, job_id)
        self.tasks: dict[int, Iterator[int]] = {}           # job_id -> its tasks not yet sent
        self.arrivals = itertools.count()
        self.local: dict[int, deque[ProbeInfo]] = {}

    # scheduler side ---------------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        if job.has_dag:
            return (Reject(Status(Code.ERROR, f"{NAME} orders jobs, not a DAG's tasks", NAME), job.job_id),)
        tie = job.n_tasks if self.by_size else 0
        heapq.heappush(self.queue, (job.estimate, tie, next(self.arrivals), job.job_id))
        self.tasks[job.job_id] = iter(range(job.n_tasks))
        return self._dispatch()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        self.free.append(ev.node)
        return self._dispatch()

    def _dispatch(self) -> Decisions:
        """Bind the shortest job's next tasks to free slots while both last."""
        out = []
        while self.free and self.queue:
            estimate, _, _, job_id = self.queue[0]
            task = next(self.tasks[job_id], None)
            if task is None:  # all of its tasks are sent
                heapq.heappop(self.queue)
                del self.tasks[job_id]
                continue
            out.append(Assign(self.free.popleft(), ProbeInfo(job_id, task, estimate)))
        return out

    # node side ------------------------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        slot = view.free_slot(ev.node)
        if slot >= 0 and not self.local.get(ev.node):
            return (Run(ev.node, slot, ev.probe),)
        self.local.setdefault(ev.node, deque()).append(ev.probe)
        return ()

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        queued = self.local.get(ev.node)
        return (Run(ev.node, ev.slot, queued.popleft()),) if queued else ()


ENTRY = PolicyEntry(NAME, SefConfig, ShortestEstimateFirst, "shortest estimate first (an example package)")
