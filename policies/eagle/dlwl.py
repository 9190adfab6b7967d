"""Distributed Least-Work-Left with heartbeats, plus SRPT queues (Eagle's "DLWL+SRPT" baseline,
thesis §2.5, a Yaq-D-like design).

* Nodes estimate their queueing delay: the estimates of their queued tasks plus the estimated
  remaining time of the running ones. Every ``heartbeat`` seconds the schedulers receive these
  figures, each padded with a uniform random integer in ``[0, heartbeat]`` (as in Apollo, to
  avoid herding; [X] the authors' simulator draws it inclusive).
* A job's scheduler binds each task early, greedily on that stale snapshot: the task goes to the
  node with the least advertised wait, which is then charged the task's estimate (so one job's
  tasks spread). Jobs whose estimate is above ``cutoff`` may use only the general partition; the
  others use the short-allowed nodes (the whole cluster by default).
* Nodes order their queues by SRPT (the job with the fewest unstarted tasks x estimate first),
  never reordering past a long task, with Eagle's starvation bound: no queued task may be
  bypassed by more than ``starvation_cap`` x its own estimate. ``srpt=false`` gives plain FIFO.

The heartbeat is one scheduler-side timer that snapshots every node at once (all nodes
heartbeat in phase); it runs only while tasks are outstanding and restarts on the grid
``k * heartbeat`` when work arrives again.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from policies.framework.api import (
    Assign, ClusterView, Decision, Decisions, JobArrival, PolicyEnv, ProbeArrival, ProbeInfo, Run, SetTimer,
    SlotFreed, TaskFinished, Timer,
)
from policies.common import srpt
from policies.common.idtable import IdTable
from policies.framework.bounds import CUTOFF, DAY, MS, PERCENT, STARVATION_CAP, check_bounds, within
from policies.common.partitions import Partition
from policies.framework.registry import PolicyEntry
from workloads.model import Job, Readiness

HEARTBEAT = "heartbeat"


@dataclass(frozen=True)
class DlwlConfig:
    """Defaults: Yahoo settings (cutoff 90.5811 s, 2% short-only partition, 7 s heartbeat)."""

    cutoff: float = field(default=90.5811, metadata=CUTOFF)
    small_partition: float = field(default=100.0, metadata=PERCENT)
    big_partition: float = field(default=98.0, metadata=PERCENT)
    # seconds between heartbeats (Google 3, Yahoo 7, Cloudera 12)
    heartbeat: float = field(default=7.0, metadata=within(MS, DAY))
    noise: bool = True               # pad advertised waits with U{0..heartbeat}
    srpt: bool = True                # SRPT queue order (False: FIFO)
    # bypass budget, in multiples of the bypassed task's estimate
    starvation_cap: float = field(default=5.0, metadata=STARVATION_CAP)

    def __post_init__(self) -> None:
        check_bounds(self)
        if self.small_partition == 0 or self.big_partition == 0:
            raise ValueError("small_partition and big_partition must be > 0")


class Dlwl:
    name = "dlwl"

    def __init__(self, config: DlwlConfig, env: PolicyEnv) -> None:
        self.cfg = config
        spec = env.cluster
        n, s = spec.n_nodes, spec.slots_per_node
        self.n = n
        self.part = Partition.from_percent(n, config.small_partition, config.big_partition)
        self.np_rng = np.random.default_rng(env.rng("noise").getrandbits(63))
        # node side: what each node knows about itself
        self.qsum = np.zeros(n)                 # estimates of queued tasks
        self.run_end = np.zeros((n, s))         # estimated end of the running task per slot
        self.queues: list[list[srpt.QueuedProbe]] = [[] for _ in range(n)]
        self.unstarted: IdTable[int] = IdTable()   # job -> tasks not started yet (SRPT key)
        self.outstanding = 0                    # tasks assigned and not finished, cluster-wide
        self.dags: dict[int, Readiness] = {}    # DAG jobs: readiness (tasks bound when ready)
        # scheduler side: the last heartbeat snapshot, charged with our own placements since
        self.snap = self._noise()
        self.timer_armed = False

    def _noise(self) -> np.ndarray:
        if not self.cfg.noise:
            return np.zeros(self.n)
        return self.np_rng.integers(0, int(self.cfg.heartbeat) + 1, self.n).astype(float)

    # scheduler side ---------------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        self.unstarted.set(job.job_id, job.n_tasks)
        self.outstanding += job.n_tasks
        out: list[Decision] = []
        if not self.timer_armed:
            self.timer_armed = True
            hb = self.cfg.heartbeat
            out.append(SetTimer((math.floor(ev.time / hb) + 1) * hb, None, HEARTBEAT))
        if job.has_dag:  # bind only ready tasks; the rest when their parents finish
            rd = self.dags[job.job_id] = Readiness(job)
            tasks: Sequence[int] = sorted(rd.ready or ())
        else:
            tasks = range(job.n_tasks)
        self._assign(job, tasks, out)
        return out

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        rd = self.dags.get(ev.job_id)
        if rd is None:
            return ()
        out: list[Decision] = []
        self._assign(rd.job, rd.finish(ev.task), out)
        return out

    def _assign(self, job: Job, tasks: Sequence[int], out: list[Decision]) -> None:
        """Bind ``tasks`` greedily to the nodes with the least advertised wait."""
        t = len(tasks)
        if not t:
            return
        jid, est = job.job_id, job.estimate
        long = est > self.cfg.cutoff
        lo, hi = (self.part.long_lo, self.part.long_hi) if long else (self.part.short_lo, self.part.short_hi)
        snap = self.snap[lo:hi]
        k = min(t, hi - lo)
        cand = np.argpartition(snap, k - 1)[:k] if k < hi - lo else np.arange(hi - lo)
        heap = sorted(zip(snap[cand].tolist(), (cand + lo).tolist()))
        notify = job.has_dag
        chosen = []
        for task in tasks:
            w, node = heap[0]
            heapq.heapreplace(heap, (w + est, node))
            chosen.append(node)
            out.append(Assign(node, ProbeInfo(jid, task, est, long, notify=notify)))
        np.add.at(self.snap, chosen, est)  # charge our own placements until the next heartbeat

    def on_timer(self, ev: Timer, view: ClusterView) -> Decisions:
        waits = self.qsum + np.clip(self.run_end - ev.time, 0.0, None).sum(axis=1)
        self.snap = waits + self._noise()
        if self.outstanding > 0:
            return (SetTimer(ev.time + self.cfg.heartbeat, None, HEARTBEAT),)
        self.timer_armed = False
        return ()

    # node side --------------------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        node, p = ev.node, ev.probe
        q = self.queues[node]
        if not q:
            slot = view.free_slot(node)
            if slot >= 0:
                return self._start(node, slot, p, ev.time)
        q.append(srpt.QueuedProbe(p))
        self.qsum[node] += p.est
        return ()

    def _start(self, node: int, slot: int, p: ProbeInfo, now: float) -> Decisions:
        self.run_end[node, slot] = now + p.est
        self.unstarted.set(p.job_id, self.unstarted[p.job_id] - 1)
        return (Run(node, slot, p),)

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        node = ev.node
        self.run_end[node, ev.slot] = 0.0
        if ev.job_id >= 0:
            self.outstanding -= 1
        q = self.queues[node]
        if not q:
            return ()
        if self.cfg.srpt:
            i = srpt.pick(q, self.unstarted, self.cfg.starvation_cap)
            if i is None:  # pragma: no cover - pick returns an index for a non-empty queue
                return ()
            if i:
                srpt.charge(q, i)
            entry = q[i]
            del q[i]
        else:
            entry = q.pop(0)
        p = entry.probe
        self.qsum[node] -= p.est
        if self.qsum[node] < 1e-9:
            self.qsum[node] = 0.0
        return self._start(node, ev.slot, p, ev.time)


ENTRY = PolicyEntry("dlwl", DlwlConfig, Dlwl, "distributed LWL on heartbeat snapshots, SRPT node queues")
