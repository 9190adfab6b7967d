"""The one read-only :class:`~policies.framework.api.ClusterView`, over the cluster state's tables
(:class:`~bridge.cluster.tables.ClusterTables`).

Every driver hands policies this view, so a policy sees the same truth in the simulator and live:
free slots exclude reservations and tasks the policy did not place; ``running`` lists only the
policy's own tasks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bridge.cluster.slots import Running
from policies.framework.api import RunningTask
from workloads.model import Job

if TYPE_CHECKING:
    from bridge.cluster.tables import ClusterTables


class StateView:
    """Read-only queries on the cluster state. The view owns its cache of each node's running and
    suspended tasks (built on first read); the state says when a node's tasks change."""

    __slots__ = ("_s", "spec", "_running_cache", "_suspended_cache")

    def __init__(self, state: ClusterTables) -> None:
        self._s = state
        self.spec = state.spec
        # per node, None until read (a list: clearing one is a store, not a dictionary's removal)
        n = state.spec.n_nodes
        self._running_cache: list[tuple[Any, ...] | None] = [None] * n
        self._suspended_cache: list[tuple[Any, ...] | None] = [None] * n

    def running_changed(self, node: int) -> None:
        """A task started on, or left, one of ``node``'s slots."""
        self._running_cache[node] = None

    def suspended_changed(self, node: int) -> None:
        """A task joined or left ``node``'s suspended tasks."""
        self._suspended_cache[node] = None

    @property
    def now(self) -> float:
        return self._s.kernel.now

    def job(self, job_id: int) -> Job:
        return self._s._runs[job_id].job   # (compiled: a list read where ids are dense)

    def free_slot(self, node: int) -> int:
        s = self._s
        if not s._nfree[node]:
            return -1
        row = s._slots[node]
        if row[0] is None:
            return 0
        for i, x in enumerate(row):
            if x is None:
                return i
        return -1  # pragma: no cover

    def free_slots(self, node: int) -> int:
        return self._s._nfree[node]

    def free_slot_ids(self, node: int) -> tuple[int, ...]:
        return tuple([i for i, x in enumerate(self._s._slots[node]) if x is None])

    def running(self, node: int) -> tuple[RunningTask, ...]:
        cache = self._running_cache
        out = cache[node]
        if out is None:
            out = cache[node] = tuple([RunningTask(i, r.job_id, r.task, r.start, r.attained, r.probe)
                                       for i, r in enumerate(self._s._slots[node]) if r.__class__ is Running])
        return out

    def suspended(self, node: int) -> tuple[RunningTask, ...]:
        cache = self._suspended_cache
        out = cache[node]
        if out is None:
            out = cache[node] = tuple([RunningTask(-1, r.job_id, r.task, r.start, r.attained, r.probe)
                                       for r in self._s._suspended[node].values()])
        return out

    def queued(self, node: int) -> int:
        return self._s._qlen[node]

    def free_capacity(self, node: int) -> tuple[float, ...] | None:
        s = self._s
        if not s._capacities:
            return None
        cap, used, base = s._capacity, s._capacity_used, node * s._dims
        return tuple([cap[base + i] - used[base + i] for i in range(s._dims)])

    def attained(self, node: int, job_id: int, task: int) -> float:
        s = self._s
        held = s._suspended[node].get((job_id, task))
        if held is not None:
            return held.attained
        # a slot may hold Running, Reserved, Foreign or None: a variable of its own (compiled, a
        # variable keeps the type of its first assignment, here Running | None)
        for slot in s._slots[node]:
            if slot.__class__ is Running and slot.job_id == job_id and slot.task == task:
                return slot.attained + max(0.0, s.kernel.now - slot.start - slot.hold)
        raise KeyError(f"task {job_id}.{task} is not on node {node}")

    def is_ready(self, job_id: int, task: int) -> bool:
        run = self._s._runs.get(job_id)
        return run is None or run.readiness is None or run.readiness.is_ready(task)
