"""Hawk: hybrid scheduling (thesis Ch. 2; Delgado et al., USENIX ATC 2015).

* A job is **long** if its estimated task duration (``Job.estimate``, the trace's mean, truncated
  to whole seconds unless ``integer_estimates=false``) is above ``cutoff``, otherwise **short**.
* **Short jobs** are scheduled distributedly, Sparrow-style: ``ceil(probe_ratio * t)`` probes to
  nodes drawn uniformly at random from the short-allowed nodes (the whole cluster by default),
  late binding.
* **Long jobs** go to one centralized scheduler that places each task on the general-partition
  node with the least (long) work left (:class:`~policies.common.lwl.LwlTable`; nodes with no
  long task at all first, lowest id first, then nodes running past their estimate in the order
  the authors' simulator gives them, ``lwl_ties``). Each long task
  travels as a probe and gets its task when it reaches the head of the queue (as in the
  authors' simulator).
* **Partition**: long tasks may only use the top ``big_partition`` % of the nodes; the rest is
  reserved for short tasks.
* **Randomized stealing**: a node whose queue is empty when a slot frees contacts up to
  ``steal_attempts`` random general-partition nodes and takes, from the first that has one,
  the first consecutive group of short entries behind a long one (at most ``steal_cap``). A draw
  may hit the thief itself, a wasted attempt, as in the authors' simulator (``steal_self``).

Ablations are config fields: ``stealing=false``, ``big_partition=100`` (no partition),
``centralized=false`` (long jobs probe like short ones, within the general partition).
"""
from __future__ import annotations


from dataclasses import dataclass, field

from librt.vecs import vec
from mypy_extensions import i64

from policies.framework.api import (
    ClusterView, Decisions, Give, JobArrival, PolicyEnv, Probe, ProbeArrival, ProbeInfo, Run, SlotFreed,
    Steal, StealAttempt, TaskFinished, TaskRequest, TaskStarted,
)
from policies.common.idtable import IdTable
from policies.common.lwl import TIES, LwlTable, trace_estimate
from policies.common.nodefifo import FifoNodes
from policies.framework.bounds import CUTOFF, PERCENT, PROBE_RATIO, check_bounds, within
from policies.common.partitions import Partition
from policies.common.probing import LateBinder, probe_count, sample
from policies.common.queues import NodeQueues
from policies.common.stealing import first_short_group_after_long, pick_victims
from policies.framework.registry import PolicyEntry
from workloads.model import Job


@dataclass(frozen=True)
class HawkConfig:
    """Defaults are the thesis' Yahoo settings ([X] cutoff 90.5811 s, big partition 98%)."""

    cutoff: float = field(default=90.5811, metadata=CUTOFF)  # scheduling cutoff on the estimated task duration (s)
    probe_ratio: float = field(default=2.0, metadata=PROBE_RATIO)  # probes per task for short jobs
    small_partition: float = field(default=100.0, metadata=PERCENT)  # % of nodes, from id 0, where short tasks may go
    big_partition: float = field(default=98.0, metadata=PERCENT)  # % of nodes, from the highest id, for long tasks
    stealing: bool = True
    steal_attempts: int = field(default=10, metadata=within(0, 10_000))  # victims contacted per idle event
    steal_cap: int = field(default=10_000, metadata=within(1, 10_000_000))  # most entries taken per steal
    centralized: bool = True         # long jobs placed by central LWL (False: probed)
    # LWL takes nodes with no long task queued or running first, lowest id first (the authors'
    # simulator); False: any node whose estimated long work left is zero, free longest first
    lwl_idle_first: bool = True
    # which of several nodes running past their estimate LWL takes first (policies.common.lwl):
    # "reference" (the order the authors' simulator's floating-point key gives), "least_estimate"
    # or "id" (lowest node id; our previous choice)
    lwl_ties: str = "reference"
    # the trace's mean truncated to whole seconds for the estimate and the class (the authors'
    # simulator); False: the mean as written
    integer_estimates: bool = True
    # a victim draw may hit the thief itself, a wasted attempt (the authors' simulator); False: redrawn
    steal_self: bool = True

    def __post_init__(self) -> None:
        check_bounds(self)
        if self.small_partition == 0 or self.big_partition == 0:
            raise ValueError("small_partition and big_partition must be > 0")
        if self.lwl_ties not in TIES:
            raise ValueError(f"lwl_ties must be one of {', '.join(TIES)}, got {self.lwl_ties!r}")


class Hawk(FifoNodes):
    name = "hawk"

    def __init__(self, config: HawkConfig, env: PolicyEnv) -> None:
        self.cfg = config
        n = env.cluster.n_nodes
        self.part = Partition.from_percent(n, config.small_partition, config.big_partition)
        self.queues = NodeQueues(n)
        self.binder = LateBinder()
        self.lwl = (LwlTable(n, self.part.general, config.lwl_idle_first, config.lwl_ties,
                             2 * env.cluster.network_delay) if config.centralized else None)
        self.probe_rng = env.rng("probes")
        self.steal_draw = env.rng("steal").random      # the victims' draws (looked up once)
        self.steal = config.stealing and config.steal_attempts > 0
        # node-side bookkeeping that makes a hopeless steal request O(1)
        self.long_queued = vec[i64]([0] * n)           # long entries waiting in each queue
        self.long_running = vec[i64]([0] * n)          # slots running (or fetching) a long task
        # those slots, per node (compiled, a set of small ints: no tuple built and hashed per freed slot)
        self.long_slots: list[set[int]] = [set() for _ in range(n)]
        # what the task hooks need of a job, kept here: compiled, a list read where ``view.job`` was
        # a Python call and its fields interpreted reads
        self.estimates: IdTable[float] = IdTable()    # job -> the estimate its tasks are placed with
        self.dag_jobs: IdTable[Job] = IdTable()       # the jobs with a DAG, by id

    # scheduler side ---------------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        if job.has_dag:
            self.dag_jobs.set(job.job_id, job)
        return self._schedule(job, self.binder.add(job), ev.time)

    def _schedule(self, job: Job, available: int, now: float) -> Decisions:
        """Probes for ``available`` tasks of ``job`` (all of them, or a DAG job's ready ones)."""
        if not available:
            return ()
        p = self.part
        est = trace_estimate(job.estimate, self.cfg.integer_estimates)
        self.estimates.set(job.job_id, est)
        if est > self.cfg.cutoff:
            if self.lwl is not None:
                nodes = tuple(self.lwl.place(now, est) for _ in range(available))
            else:
                nodes = sample(self.probe_rng, probe_count(available, self.cfg.probe_ratio), p.long_lo, p.long_hi)
            return (Probe(nodes, ProbeInfo(job.job_id, est=est, long=True)),)
        nodes = sample(self.probe_rng, probe_count(available, self.cfg.probe_ratio), p.short_lo, p.short_hi)
        return (Probe(nodes, ProbeInfo(job.job_id, est=est, notify=job.has_dag)),)

    def on_task_request(self, ev: TaskRequest, view: ClusterView) -> Decisions:
        return self.binder.answer(ev)

    def on_task_started(self, ev: TaskStarted, view: ClusterView) -> Decisions:
        if self.lwl is not None:
            self.lwl.started(ev.node, (ev.job_id, ev.task), ev.time, self.estimates[ev.job_id])
        return ()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        if self.lwl is not None:
            self.lwl.finished(ev.node, (ev.job_id, ev.task), ev.time)
        job = self.dag_jobs.get(ev.job_id)
        return self._schedule(job, self.binder.finished(job, ev.task), ev.time) if job is not None else ()

    # node side --------------------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> tuple[Run, ...]:
        out = super().on_probe_arrival(ev, view)
        if ev.probe.long:
            if out:
                self._running(ev.node, out[0].slot)
            else:
                self.long_queued[ev.node] += 1
        return out

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        node = ev.node
        if self.long_running[node] and ev.slot in self.long_slots[node]:
            self.long_slots[node].discard(ev.slot)
            self.long_running[node] -= 1
        out = super().on_slot_freed(ev, view)
        if out and out[0].__class__ is Run and out[0].probe.long:
            self.long_queued[node] -= 1
            self._running(node, ev.slot)
        return out

    def _running(self, node: int, slot: int) -> None:
        self.long_slots[node].add(slot)
        self.long_running[node] += 1

    def after_idle(self, node: int, slot: int, view: ClusterView) -> Decisions:
        if not self.steal:
            return ()
        p = self.part
        victims = pick_victims(self.steal_draw, self.cfg.steal_attempts, p.long_lo, p.long_hi, node,
                               self.cfg.steal_self)
        return (Steal(node, victims),) if victims else ()

    def on_steal_attempt(self, ev: StealAttempt, view: ClusterView) -> Decisions:
        """The first of the victims, in order, with short entries blocked behind a long task
        gives them. A draw of the thief itself (``steal_self``) is a wasted attempt: its own
        queue was empty when it asked."""
        thief = ev.thief
        queues, long_running, long_queued = self.queues, self.long_running, self.long_queued
        for v in ev.victims:
            # no long task there (running or queued): no short entry is blocked behind one
            if v != thief and (long_running[v] or long_queued[v]) and queues[v]:
                taken = self._take_stealable(v)
                if taken:
                    return (Give(v, thief, taken),)
        return ()

    def _take_stealable(self, v: int) -> tuple[ProbeInfo, ...]:
        """Take out of victim ``v``'s queue its first group of short entries behind a long one."""
        q = self.queues[v]
        running_long = self.long_running[v] > 0
        # what the victim runs matters only when its queue starts with short entries
        running_short = q[0].long or not running_long
        i, j = first_short_group_after_long(q, _is_long, running_short, self.cfg.steal_cap)
        if i == j:
            return ()
        # cut [i, j) out of the deque in O(j), not O(len(q)): queues behind long tasks get long
        q.rotate(-i)
        taken = tuple([q.popleft() for _ in range(j - i)])
        q.rotate(i)
        return taken


def _is_long(p: ProbeInfo) -> bool:
    return p.long


ENTRY = PolicyEntry("hawk", HawkConfig, Hawk,
                    "hybrid: central LWL for long jobs, probing for short, partition, stealing")
