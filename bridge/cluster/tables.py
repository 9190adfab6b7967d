"""The cluster state's tables: what each slot holds, the node queues, suspended tasks, capacity in
use, the known jobs, and the queries and checks that read only them.

:class:`ClusterTables` is the base of :class:`~bridge.cluster.state.ClusterState`, which applies a
policy's decisions to these tables; :class:`~bridge.cluster.view.StateView` reads them for the
policy. The tables are private to ``bridge/cluster``: drivers use the methods.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from librt.vecs import vec
from mypy_extensions import i64

from bridge.cluster.kernel import Kernel
from bridge.cluster.measure import SegmentLog
from bridge.cluster.offslot import OffSlotWork
from bridge.cluster.slots import Foreign, Reserved, Running
from bridge.cluster.view import StateView
from policies.common.idtable import IdTable
from policies.framework.api import ClusterSpec, Code, DecisionError, ProbeInfo, Status
from workloads.model import Job, Readiness


class Queued:
    """One entry of a node's queue: the ``ProbeInfo`` sent, how many copies of it the node holds,
    how many of those arrived behind a long task (the head-of-line flag, reporting only) and
    whether its job is long (reporting only). A native class when compiled: its fields are
    struct accesses on the hot path."""

    __slots__ = ("entry", "copies", "flagged", "long")

    def __init__(self, entry: ProbeInfo, copies: int, flagged: int, long: bool) -> None:
        self.entry = entry
        self.copies = copies
        self.flagged = flagged
        self.long = long


class JobRun:
    """What the state tracks of one known job: which tasks were launched (``None`` once every
    task ended, or the job was rejected), how many are left, its DAG readiness, and whether it is
    long by the reporting classification. One record per job: one lookup where a task starts or
    ends, instead of one per dictionary (compiled: native fields)."""

    __slots__ = ("job", "durations", "demands", "launched", "left", "long", "readiness")

    def __init__(self, job: Job, long: bool) -> None:
        self.job = job
        # native fields (the job is an interpreted class); compiled, a tuple and a list are indexed
        # by a native integer, where a Sequence and a bytearray boxed it
        self.durations: tuple[float, ...] = tuple(job.durations)
        self.demands = job.demands
        self.launched: list[bool] | None = [False] * job.n_tasks
        self.left: int = job.n_tasks
        self.long = long
        self.readiness: Readiness | None = Readiness(job) if job.has_dag else None


class ClusterTables:
    """The tables of one cluster of ``spec``'s nodes, on ``kernel``'s clock. ``report_long(job)``
    (optional) is the *reporting* classification behind the head-of-line counts; ``log`` is where
    the state measures, and what :meth:`forget_finished` prunes."""

    def __init__(self, spec: ClusterSpec, kernel: Kernel, report_long: Callable[[Job], bool] | None,
                 log: SegmentLog, keep_log: bool, offslot_share: float) -> None:
        self.spec, self.kernel, self.report_long, self.log = spec, kernel, report_long, log
        self.keep_log, self.offslot_share = keep_log, offslot_share
        self._counters = log.counts
        self._offslot_work = OffSlotWork(offslot_share)
        self._token = 0   # the last run segment's (or off-slot stretch's) token
        self._jobs_by_id: dict[int, Job] = {}
        n, s = spec.n_nodes, spec.slots_per_node
        self._n_nodes = n   # a native field (compiled; the spec is an interpreted class)
        self._slots: list[list[Any]] = [[None] * s for _ in range(n)]
        # per-node counts in flat native arrays (librt.vecs): compiled, `+= 1` is a store, where a
        # list's was a generic in-place addition and a boxed integer
        self._nfree = vec[i64]([s] * n)
        # node -> id(entry) -> record; the key typed object: compiled, an id is then boxed once per
        # update, where an int is boxed at each use (a get and a del or set)
        self._queues: list[dict[object, Queued]] = [{} for _ in range(n)]
        self._qlen = vec[i64]([0] * n)
        self._suspended: list[dict[tuple[int, int], Running]] = [{} for _ in range(n)]
        # capacity per node (heterogeneous nodes differ) and in use, flat: node i's dimension d at
        # i * dims + d (compiled, an update is a store, where a list of lists' boxed a float)
        self._capacities = spec.capacity is not None
        self._dims = len(spec.capacity) if spec.capacity is not None else 0
        self._capacity_used = vec[float]([0.0] * (n * self._dims))
        self._capacity = vec[float]([x for node in range(n) for x in spec.capacity_of(node) or ()])
        self._long_at = vec[i64]([0] * n)
        self._runs: IdTable[JobRun] = IdTable()   # by job id: a trace's ids are dense
        self._blocked: dict[tuple[int, int], tuple[int, int]] = {}  # started early -> (node, slot)
        self.view = StateView(self)

    def _fail(self, reason: str, decision: object) -> DecisionError:
        return DecisionError(Status(Code.ERROR, reason, "cluster-state"), decision)

    # ------------------------------------------------------------------------------- changes
    def _end_segment(self, r: Running, node: int, slot: int, end: float, done: int) -> float:
        """``r`` leaves its slot at ``end`` (finished if ``done``, else suspended): the segment is
        logged, the slot and the task's demand are free. Returns the segment's idle seconds."""
        idle = min(r.hold, end - r.start)
        if self.keep_log:
            self.log.add(r.job_id, r.task, node, slot, r.start, end, done, idle)
        if r.demand is not None and self._capacities:
            self._release(node, r.demand)
        self._slots[node][slot] = None
        self._nfree[node] += 1
        self.view.running_changed(node)
        return idle

    def _dequeue(self, node: int, probe: ProbeInfo, d: object) -> bool:
        """Remove one occurrence of ``probe`` from ``node``'s queue; return its HOL flag."""
        q = self._queues[node]
        key: object = id(probe)
        rec = q.get(key)
        if rec is None:
            raise self._fail(f"entry {probe!r} is not queued at node {node}", d)
        flag = rec.flagged > 0
        if rec.copies == 1:
            del q[key]
        else:
            rec.copies -= 1
            if flag:
                rec.flagged -= 1
        self._qlen[node] -= 1
        if rec.long:
            self._long_at[node] -= 1
        if self.offslot_share and probe.task is not None:
            self._offslot_work.stop(probe.job_id, probe.task, self.kernel.now)
        return flag

    def _offslot_start(self, node: int, jid: int, task: int, attained: float, now: float, out: list[Any]) -> None:
        """The task progresses off its slot at ``node`` from ``now``: its end is scheduled."""
        self._token += 1
        work = self._runs[jid].durations[task] - attained
        out.append(self._offslot_work.start(node, jid, task, work, now, self._token))

    def _block(self, r: Running, node: int, slot: int, first: bool = True) -> None:
        """``r`` holds its slot but cannot progress until its DAG parents finish; its first
        start like that is a disorder."""
        r.hold = math.inf
        self._blocked[(r.job_id, r.task)] = (node, slot)
        self._counters.disorders += first

    def occupy(self, node: int, ref: object, demand: tuple[float, ...] | None = None) -> int:
        """Hold a free slot of ``node`` (and ``demand`` of its capacity) for a task the policy did
        not place; returns the slot (-1: none free, or the demand does not fit)."""
        slot = self.view.free_slot(node)
        if slot < 0:
            return -1
        if demand is not None and self._capacities:
            free = self.view.free_capacity(node) or ()
            if any(x > f + 1e-9 for x, f in zip(demand, free)):
                return -1
            u, base = self._capacity_used, node * self._dims
            for i in range(min(len(demand), self._dims)):   # entries beyond the resources: ignored
                u[base + i] += demand[i]
        self._slots[node][slot] = Foreign(ref, demand)
        self._nfree[node] -= 1
        return slot

    # ------------------------------------------------------------------------------- checks
    def _take(self, node: int, demand: tuple[float, ...], d: object) -> None:
        if len(demand) > self._dims:   # in the flat arrays, it would reach the next node's capacity
            raise self._fail(f"demand {demand} has more entries than the cluster's {self._dims} resources", d)
        u, cap, base = self._capacity_used, self._capacity, node * self._dims
        for i, x in enumerate(demand):
            if u[base + i] + x > cap[base + i] + 1e-9:
                used = tuple(u[base + j] for j in range(self._dims))
                raise self._fail(f"demand {demand} does not fit node {node} (used {used}, capacity "
                                 f"{tuple(cap[base + j] for j in range(self._dims))})", d)
        for i, x in enumerate(demand):
            u[base + i] += x

    def _release(self, node: int, demand: tuple[float, ...]) -> None:
        """``demand`` of ``node``'s capacity is free again (as :meth:`occupy`, within the resources)."""
        u, base = self._capacity_used, node * self._dims
        for i in range(min(len(demand), self._dims)):
            u[base + i] -= demand[i]

    def _flag_of(self, node: int, probe: ProbeInfo, d: object) -> bool:
        rec = self._queues[node].get(id(probe))
        if rec is None:
            raise self._fail(f"entry {probe!r} is not queued at node {node}", d)
        return rec.flagged > 0

    def _reservation(self, node: int, slot: int, d: object) -> Reserved:
        res = self._slots[node][slot]
        if not isinstance(res, Reserved):
            raise self._fail(f"slot {slot} of node {node} has no pending task request", d)
        return res

    # ------------------------------------------------------------------------------- queries
    def entries(self, node: int) -> Sequence[ProbeInfo]:
        """The entries queued at ``node`` (one per occurrence), in arrival order."""
        return [rec.entry for rec in self._queues[node].values() for _ in range(rec.copies)]

    def known_jobs(self) -> Mapping[int, Job]:
        """The jobs the state knows, by id, read-only (a live driver's are those not yet forgotten)."""
        return MappingProxyType(self._jobs_by_id)

    def token(self, node: int, slot: int) -> int:
        """The token of the run segment on ``node``/``slot``: a driver that ends the task there
        schedules a ``SegmentEnd`` with it (stale if the task is suspended first)."""
        r = self._slots[node][slot]
        if r.__class__ is not Running:
            raise ValueError(f"slot {slot} of node {node} runs no task")
        token: int = r.token
        return token

    def free_or_reserved(self, node: int) -> int:
        """How many of ``node``'s slots no task holds: free, or reserved for a late-binding probe
        whose task request is in flight (the policy can still give them a task of its choice)."""
        return sum(1 for x in self._slots[node] if x is None or x.__class__ is Reserved)

    def _ended(self, job_id: int) -> bool:
        """Whether job ``job_id`` is unknown, finished (every task ended) or rejected."""
        run = self._runs.get(job_id)
        return run is None or run.launched is None

    def forget_finished(self, job_ids: Iterable[int]) -> list[int]:
        """Forget those of ``job_ids`` that finished (every task ended) or were rejected and that no
        queue entry or reservation still names (a late-binding probe asks for its job), so a live
        state serving for weeks keeps only live jobs; returns the ids forgotten."""
        done = [j for j in job_ids if self._ended(j)]
        if not done:  # the usual round: spare the scan of every queue
            return []
        held = {rec.entry.job_id for q in self._queues for rec in q.values()}
        held.update(x.probe.job_id for row in self._slots for x in row if x.__class__ is Reserved)
        gone = [j for j in done if j not in held]
        for j in gone:
            self._jobs_by_id.pop(j, None)
            self._runs.pop(j)
            self.log.job_finish.pop(j, None)
            self.log.rejected_jobs.pop(j, None)
        return gone
