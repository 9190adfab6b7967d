"""Eagle (thesis Ch. 3): "Divide and Stick to Your Probes".

Long jobs (estimated task duration above ``cutoff``) are placed centrally by Least-Work-Left in
the general partition, exactly as in Hawk; short jobs are scheduled by distributed batch probing
over the whole cluster, with three additions:

* **Succinct State Sharing (SSS).** The central scheduler keeps a bit-vector of the nodes holding
  long work (queued or running) and piggybacks a timestamped copy on every long-task message. A
  node holding long work rejects short probes and returns its copy; the job's scheduler re-sends
  the rejected probe to a node that the freshest copy it has received marks free of long work,
  and after ``rounds`` rounds to the short-only partition. No short probe waits behind a long task.
  A long job's tasks all carry the copy taken once the whole job is placed
  (``bitvector_copy="job"``), and the rejections that reach a job's scheduler at the same instant
  are re-sent together, each from the freshest copy among all of them (``resend="together"``): the
  authors' simulator's choices where the thesis is silent (docs/reproduction.md section 8).
  ``reject_at="scheduler"`` instead decides every round when the probes are sent, from the nodes'
  current long work, re-drawing from the freshest copy held by any probed node (the authors'
  simulator: instantaneous and omniscient; the thesis has the node refuse).
* **Sticky Batch Probing + SRPT (SBP).** A probe stands for its whole job: after a task of J
  finishes, the node asks J's scheduler again instead of moving on, and the node runs the queued
  short probe whose job has the least estimated remaining work (``estimate x tasks not yet
  handed out``), never looking past a long entry, within a bypass budget of
  ``starvation_cap x`` the bypassed probe's task estimate (Algorithm 1). ``queue_pick="last_fit"``
  makes the choice the authors' simulator makes instead (`srpt.pick_last_fit`: its SRPT minimum
  never updates, so the last entry within the bypass budget runs).
* **minProbes.** At least ``min_probes`` probes per short job.

Ablations are config fields turned into strategy objects here: ``sss=false`` accepts every probe,
``sbp_srpt=false`` serves the queue FIFO and drops a probe after one task, ``min_probes=0``.
Eagle does no work stealing.
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np
from librt.vecs import vec
from mypy_extensions import i64

from policies.framework.api import (
    ClusterView, Code, Decision, Decisions, Drop, JobArrival, PolicyEnv, Probe, ProbeArrival,
    Launch, ProbeInfo, ProbeRejected, Reject, Run, SetTimer, SlotFreed, Status, TaskFinished, TaskRequest,
    TaskStarted, Timer,
)
from policies.common import srpt
from policies.common.idtable import IdTable
from policies.common.lwl import TIES, LwlTable, trace_estimate
from policies.framework.bounds import CUTOFF, MIN_PROBES, PERCENT, PROBE_RATIO, STARVATION_CAP, check_bounds, within
from policies.common.partitions import Partition
from policies.common.probing import LateBinder, probe_count, sample
from policies.common.srpt import QueuedProbe
from policies.framework.registry import PolicyEntry
from workloads.model import Job

# Distinct bit-vector copies whose free-node lists are kept (copies are shared by many probes).
_FREE_CACHE = 256


@dataclass(frozen=True)
class EagleConfig:
    """Eagle parameters; defaults are the thesis' Yahoo settings ([X] simulator values), as Hawk's.

    cutoff: estimated task duration (s) above which a job is long (Yahoo 90.5811, Google 1129.532,
        Cloudera 272.783).
    big_partition: % of the nodes, from the highest id, where long tasks may go; the rest is the
        short-only partition (98 Yahoo, 83 Google, 91 Cloudera).
    probe_ratio, min_probes: a short job sends max(min_probes, ceil(probe_ratio x tasks)) probes.
    sss: succinct state sharing (reject short probes at nodes holding long work).
    sbp_srpt: sticky batch probing with SRPT queue reordering (else FIFO, one task per probe).
    starvation_cap: bypass budget, in estimated task durations of the bypassed probe (5).
    rounds: probing rounds before the short-partition fallback (2: random, then bit-vector).
    lwl_idle_first: LWL takes nodes with no long task queued or running first, lowest id first
        (the authors' simulator); False: any node with zero estimated long work left, free longest
        first (our earlier reading).
    lwl_ties: which of several nodes running past their estimate LWL takes first: "reference" (the
        order the authors' simulator's floating-point key gives), "least_estimate" or "id" (lowest
        node id; our previous choice); see policies.common.lwl.
    integer_estimates: the trace's mean truncated to whole seconds for the estimate and the class
        (the authors' simulator); False: the mean as written.
    reject_at: "node" (the thesis: a node holding long work refuses a short probe on arrival and
        returns its copy) or "scheduler" (the authors' simulator: the job's scheduler checks every
        target's long work when sending and re-draws refused ones at once, from the freshest copy
        any probed node holds; no Reject travels, so the run's rejected-probe counter stays 0).
    bitvector_copy: the copy a long task carries: "job" (the bit-vector once all of the job's tasks
        are placed, one copy per job: the authors' simulator) or "task" (as it stood right after
        that task's own placement, so a job's first tasks miss its later nodes; our earlier choice).
    resend: how the job's scheduler re-sends rejected probes: "together" (those reaching it at the
        same instant, a round's, wait for each other and each is drawn from the freshest copy
        among them all: the authors' simulator's rounds) or "each" (at once, from the freshest
        copy received so far; our earlier choice). The thesis says neither.
    queue_pick: which queued probe a node runs next, with sbp_srpt: "srpt" (the thesis' Algorithm
        1: the short probe whose job has the least estimated work left, within the bypass budget,
        never looking past a long entry) or "last_fit" (what the authors' simulator does: its
        running minimum is assigned to a misspelled name, so the last entry within the bypass
        budget runs, a long one included).
    """

    cutoff: float = field(default=90.5811, metadata=CUTOFF)
    big_partition: float = field(default=98.0, metadata=PERCENT)
    probe_ratio: float = field(default=2.0, metadata=PROBE_RATIO)
    min_probes: int = field(default=20, metadata=MIN_PROBES)
    sss: bool = True
    sbp_srpt: bool = True
    starvation_cap: float = field(default=5.0, metadata=STARVATION_CAP)
    rounds: int = field(default=2, metadata=within(1, 100))
    lwl_idle_first: bool = True
    lwl_ties: str = "reference"
    integer_estimates: bool = True
    reject_at: str = "node"
    queue_pick: str = "srpt"
    bitvector_copy: str = "job"
    resend: str = "together"

    def __post_init__(self) -> None:
        check_bounds(self)
        if self.big_partition == 0:
            raise ValueError("big_partition must be > 0: long jobs need a general partition")
        if self.reject_at not in ("node", "scheduler"):
            raise ValueError(f"reject_at must be 'node' or 'scheduler', got {self.reject_at!r}")
        if self.lwl_ties not in TIES:
            raise ValueError(f"lwl_ties must be one of {', '.join(TIES)}, got {self.lwl_ties!r}")
        if self.queue_pick not in ("srpt", "last_fit"):
            raise ValueError(f"queue_pick must be 'srpt' or 'last_fit', got {self.queue_pick!r}")
        if self.bitvector_copy not in ("job", "task"):
            raise ValueError(f"bitvector_copy must be 'job' or 'task', got {self.bitvector_copy!r}")
        if self.resend not in ("together", "each"):
            raise ValueError(f"resend must be 'together' or 'each', got {self.resend!r}")


@dataclass(frozen=True)
class Snapshot:
    """A timestamped copy of the long-work bit-vector (bit i set: node i holds long work)."""

    bits: int
    ts: int

    def marks_free(self, node: int) -> bool:
        return not (self.bits >> node) & 1

    def free_nodes(self, n_nodes: int) -> np.ndarray:
        """The nodes among ``0 .. n_nodes-1`` whose bit is clear, ascending. An array, not a tuple:
        a caller draws one node from it, and at 15,000 nodes converting every copy's list to
        Python ints cost Eagle a tenth of its time."""
        if not self.bits:
            return np.arange(n_nodes)
        raw = self.bits.to_bytes(max(n_nodes + 7, self.bits.bit_length() + 7) // 8, "little")
        marked = np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")[:n_nodes]
        return np.flatnonzero(marked == 0)


class _LongWork:
    """The central scheduler's view of long work: LWL table plus the SSS bit-vector."""

    def __init__(self, n_nodes: int, partition: Partition, idle_first: bool, ties: str, two_delays: float) -> None:
        self.lwl = LwlTable(n_nodes, partition.general, idle_first, ties, two_delays)
        self.bits = 0
        # node i's bit, kept beside it: compiled, testing or setting a flag is a load or a store,
        # where a shift of the bit-vector built a big integer
        self.held = vec[i64]([0] * n_nodes)
        self.ts = 0

    def place(self, now: float, est: float) -> int:
        node = self.lwl.place(now, est)
        if not self.held[node]:
            self.held[node] = 1
            self.bits |= 1 << node
        self.ts += 1
        return node

    def snapshot(self) -> Snapshot:
        return Snapshot(self.bits, self.ts)

    def started(self, node: int, key: Hashable, now: float, est: float) -> None:
        self.lwl.started(node, key, now, est)
        self._clear_if_free(node)      # a zero-length task may have been reported finished first

    def finished(self, node: int, key: Hashable, now: float) -> None:
        self.lwl.finished(node, key, now)
        self._clear_if_free(node)

    def _clear_if_free(self, node: int) -> None:
        if self.held[node] and not self.lwl.has_work(node):
            self.held[node] = 0
            self.bits ^= 1 << node
            self.ts += 1


# The strategies below have base classes, not Protocols: compiled, a call through a base class is
# native, where a call through a Protocol was a Python method lookup and call (one per probe).

class _Acceptance:
    """Whether a node refuses a probe: this base accepts every one (``sss=false``)."""

    def rejects(self, probe: ProbeInfo, long_here: int) -> bool:
        return False


class _SssAcceptance(_Acceptance):
    """SSS: a node holding long work refuses short probes, except last-round ones (they were
    sent to the short-only partition, or anywhere if it is empty, and must stick somewhere)."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    def rejects(self, probe: ProbeInfo, long_here: int) -> bool:
        return not probe.long and long_here > 0 and probe.round < self.rounds


class _Discipline:
    """A node queue's discipline; ``sticky``: a short probe stays queued while its job has tasks;
    ``first_of_one_job``: on a queue holding one job's probes it picks the first free entry."""

    sticky: bool
    first_of_one_job = True

    def pick(self, queue: list[QueuedProbe], tasks_left: IdTable[int]) -> int | None:
        """The entry to run next (a busy one never), or None."""
        raise NotImplementedError


class _StickySrpt(_Discipline):
    """SBP + SRPT with the bypass budget (Algorithm 1)."""

    def __init__(self, cap: float) -> None:
        self.sticky = True
        self.cap = cap

    def pick(self, queue: list[QueuedProbe], tasks_left: IdTable[int]) -> int | None:
        chosen = self._choose(queue, tasks_left)
        if chosen is not None:
            srpt.charge(queue, chosen)
        return chosen

    def _choose(self, queue: list[QueuedProbe], tasks_left: IdTable[int]) -> int | None:
        return srpt.pick(queue, tasks_left, self.cap)


class _StickyLastFit(_StickySrpt):
    """SBP with the authors' simulator's queue choice (``queue_pick="last_fit"``): the last entry
    within the bypass budget, whatever its job has left."""

    first_of_one_job = False

    def _choose(self, queue: list[QueuedProbe], tasks_left: IdTable[int]) -> int | None:
        return srpt.pick_last_fit(queue, self.cap)


class _Fifo(_Discipline):
    """Plain batch probing: the oldest entry first, one task per probe."""

    def __init__(self) -> None:
        self.sticky = False

    def pick(self, queue: list[QueuedProbe], tasks_left: IdTable[int]) -> int | None:
        return next((i for i, entry in enumerate(queue) if not entry.busy), None)


class _Nodes:
    """Node-side state: queues, long work present, the last bit-vector copy, in-flight requests."""

    def __init__(self, n_nodes: int) -> None:
        self.queues: list[list[QueuedProbe]] = [[] for _ in range(n_nodes)]
        self.long_here = vec[i64]([0] * n_nodes)   # compiled: `+= 1` a store, not a boxed addition
        self.snapshot: list[Snapshot | None] = [None] * n_nodes
        self.requesting: list[dict[int, QueuedProbe]] = [{} for _ in range(n_nodes)]  # slot -> entry
        self.long_slots: list[set[int]] = [set() for _ in range(n_nodes)]
        # per node, the count of finished jobs when its queue last held nothing to drop (-1: look)
        self.checked = vec[i64]([-1] * n_nodes)
        # per node, the job of every probe queued since its queue was last empty (-1: several)
        self.solo = vec[i64]([-1] * n_nodes)

    def append(self, node: int, entry: QueuedProbe) -> None:
        """Queue ``entry`` at ``node``, keeping ``solo``."""
        queue = self.queues[node]
        jid = entry.probe.job_id
        if not queue:
            self.solo[node] = jid
        elif self.solo[node] != jid:
            self.solo[node] = -1
        queue.append(entry)


class Eagle:
    name = "eagle"

    def __init__(self, config: EagleConfig, env: PolicyEnv) -> None:
        n = env.cluster.n_nodes
        self.config = config
        self.n = n
        self.partition = Partition.from_percent(n, 100.0, config.big_partition)
        self.short_only = self.partition.short_only
        self.rng = env.rng("eagle-probes")
        self._draw = self.rng.random      # looked up once (compiled: a call, not a method lookup and call)
        self.binder = LateBinder()
        self.long_work = _LongWork(n, self.partition, config.lwl_idle_first, config.lwl_ties,
                                   2 * env.cluster.network_delay)
        # by job id (compiled, a list read, where a dictionary boxed the id)
        self.long_jobs: IdTable[float] = IdTable()               # long job -> estimate
        self.dag_jobs: IdTable[Job] = IdTable()                  # the jobs with a DAG
        self.tasks_left: IdTable[int] = IdTable()                # job -> tasks not handed out
        self.gone = 0                                            # jobs that left tasks_left so far
        self.freshest: dict[int, Snapshot] = {}                  # short job -> freshest copy
        self.rejected: dict[int, list[ProbeInfo]] = {}           # short job -> probes to re-send now
        self._free_nodes: dict[int, np.ndarray] = {}             # copy ts -> nodes it marks free
        self.nodes = _Nodes(n)
        # why an SSS node refuses a short probe: one immutable value shared by every rejection
        self._long_here = Status(Code.UNSCHEDULABLE, "node holds a long task", self.name)
        at_node = config.sss and config.reject_at == "node"
        self.acceptance: _Acceptance = _SssAcceptance(config.rounds) if at_node else _Acceptance()
        self.rounds_at_scheduler = config.sss and config.reject_at == "scheduler"
        self.discipline = self._discipline(config)

    @staticmethod
    def _discipline(config: EagleConfig) -> _Discipline:
        """The node queue's discipline: FIFO without SBP, else SRPT or the reference's choice."""
        if not config.sbp_srpt:
            return _Fifo()
        if config.queue_pick == "last_fit":
            return _StickyLastFit(config.starvation_cap)
        return _StickySrpt(config.starvation_cap)

    # -- scheduler side ------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        self.tasks_left.set(job.job_id, job.n_tasks)
        if job.has_dag:
            self.dag_jobs.set(job.job_id, job)
        return self._schedule(ev.time, job, self.binder.add(job))

    def _schedule(self, now: float, job: Job, available: int) -> Decisions:
        """Long-task placements or short probes for ``available`` tasks of ``job``: all of them on
        arrival; a DAG job's as they become ready, each batch scheduled as a job is (our reading)."""
        if not available:
            return ()
        est = trace_estimate(job.estimate, self.config.integer_estimates)
        if est > self.config.cutoff:
            self.long_jobs.set(job.job_id, est)
            return self._place_long(now, job.job_id, est, available)
        count = probe_count(available, self.config.probe_ratio, self.config.min_probes)
        targets = sample(self.rng, count, 0, self.n)
        if self.rounds_at_scheduler:
            return self._probe_rounds(job.job_id, est, targets)
        return (Probe(targets, ProbeInfo(job.job_id, est=est)),)

    def _probe_rounds(self, job_id: int, est: float, targets: tuple[int, ...]) -> list[Decision]:
        """All SSS rounds at once, when the job arrives (``reject_at="scheduler"``): a target whose
        node holds long work now is refused; refused probes are re-drawn among the nodes that the
        freshest copy held by any node probed so far marks free, then to the short partition."""
        long_here, copies, rounds = self.nodes.long_here, self.nodes.snapshot, self.config.rounds
        freshest: Snapshot | None = None
        out: list[Decision] = []
        for rnd in range(rounds):
            accepted = tuple(node for node in targets if not long_here[node])
            for node in targets:
                copy = copies[node]
                if copy is not None and (freshest is None or copy.ts > freshest.ts):
                    freshest = copy
            if accepted:
                out.append(Probe(accepted, ProbeInfo(job_id, est=est, round=rnd)))
            missing = len(targets) - len(accepted)
            if not missing:
                return out
            first = self._bitvector_target(freshest) if rnd + 1 < rounds else None
            if first is None:           # last round, or the copy marks no node free
                break
            drawn = [first] + [self._bitvector_target(freshest) for _ in range(missing - 1)]
            targets = tuple(t for t in drawn if t is not None)
        fallback = tuple(self._short_partition_target() for _ in range(missing))
        out.append(Probe(fallback, ProbeInfo(job_id, est=est, round=rounds)))
        return out

    def _place_long(self, now: float, job_id: int, est: float, n_tasks: int) -> list[Decision]:
        """LWL places each task; each carries a copy of the bit-vector (``bitvector_copy``)."""
        work = self.long_work
        if self.config.bitvector_copy == "task":
            return [self._long_probe(job_id, est, work.place(now, est), work.snapshot()) for _ in range(n_tasks)]
        nodes = [work.place(now, est) for _ in range(n_tasks)]
        copy = work.snapshot()
        return [self._long_probe(job_id, est, node, copy) for node in nodes]

    @staticmethod
    def _long_probe(job_id: int, est: float, node: int, copy: Snapshot) -> Probe:
        return Probe((node,), ProbeInfo(job_id, est=est, long=True, info=copy))

    def on_task_request(self, ev: TaskRequest, view: ClusterView) -> Decisions:
        out = self.binder.answer(ev)
        if isinstance(out[0], Launch):
            jid = ev.probe.job_id
            left = self.tasks_left[jid] - 1
            if left:
                self.tasks_left.set(jid, left)
            else:
                self.tasks_left.pop(jid)
                self.gone += 1
        return out

    def on_task_started(self, ev: TaskStarted, view: ClusterView) -> Decisions:
        est = self.long_jobs.get(ev.job_id)
        if est is not None:
            self.long_work.started(ev.node, (ev.job_id, ev.task), ev.time, est)
        return ()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        if ev.job_id in self.long_jobs:
            self.long_work.finished(ev.node, (ev.job_id, ev.task), ev.time)
        job = self.dag_jobs.get(ev.job_id)
        return self._schedule(ev.time, job, self.binder.finished(job, ev.task)) if job is not None else ()

    def on_probe_rejected(self, ev: ProbeRejected, view: ClusterView) -> Decisions:
        probe, copy = ev.probe, ev.payload
        if probe.job_id not in self.tasks_left:
            self.freshest.pop(probe.job_id, None)
            return ()
        known = self.freshest.get(probe.job_id)
        if copy is not None and (known is None or copy.ts > known.ts):
            self.freshest[probe.job_id] = known = copy
        if self.config.resend == "each":
            return (self._resend(probe, known),)
        waiting = self.rejected.get(probe.job_id)
        if waiting is not None:
            waiting.append(probe)
            return ()
        self.rejected[probe.job_id] = [probe]
        # fires after every rejection of this instant (timers run last among same-instant events)
        return (SetTimer(ev.time, None, probe.job_id),)

    def on_timer(self, ev: Timer, view: ClusterView) -> Decisions:
        """Re-send a job's probes rejected at this instant, all from the freshest copy among them."""
        job_id = ev.key
        assert isinstance(job_id, int), "Eagle's timers are keyed by job"
        probes = self.rejected.pop(job_id)
        if job_id not in self.tasks_left:
            self.freshest.pop(job_id, None)
            return ()
        known = self.freshest.get(job_id)
        return [self._resend(probe, known) for probe in probes]

    def _resend(self, probe: ProbeInfo, known: Snapshot | None) -> Probe:
        """The next round for a rejected probe: a node the copy marks free, after the last bit-vector
        round (or if it marks none) the short-only partition."""
        next_round = probe.round + 1
        target = self._bitvector_target(known) if next_round < self.config.rounds else None
        if target is None:
            target = self._short_partition_target()
        return Probe((target,), ProbeInfo(probe.job_id, est=probe.est, pid=probe.pid, round=next_round))

    def _bitvector_target(self, snapshot: Snapshot | None) -> int | None:
        """A node drawn uniformly among those the copy marks free of long work (None: none is)."""
        if snapshot is None:
            return int(self._draw() * self.n)
        free = self._free_nodes.get(snapshot.ts)
        if free is None:
            if len(self._free_nodes) >= _FREE_CACHE:
                self._free_nodes.clear()
            free = self._free_nodes[snapshot.ts] = snapshot.free_nodes(self.n)
        # ``item``: the Python int at once (an index gives a NumPy scalar, then converted)
        return int(free.item(int(self._draw() * len(free)))) if len(free) else None

    def _short_partition_target(self) -> int:
        nodes = self.short_only if len(self.short_only) else range(self.n)
        return nodes[int(self._draw() * len(nodes))]

    # -- node side -----------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        node, probe = ev.node, ev.probe
        nodes = self.nodes
        if self.acceptance.rejects(probe, nodes.long_here[node]):
            return (Reject(self._long_here, node=node, probe=probe, payload=nodes.snapshot[node]),)
        if probe.long:
            nodes.long_here[node] += 1
            nodes.snapshot[node] = probe.info
        nodes.append(node, QueuedProbe(probe))
        if probe.job_id not in self.tasks_left:
            nodes.checked[node] = -1
        slot = view.free_slot(node)
        return self._next(node, slot, view) if slot >= 0 else ()

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        node, slot = ev.node, ev.slot
        nodes = self.nodes
        if slot in nodes.long_slots[node]:
            nodes.long_slots[node].discard(slot)
            nodes.long_here[node] -= 1
        requesting = nodes.requesting[node]
        entry = requesting.get(slot)
        if entry is not None:   # (compiled: dict.pop with a default was a Python method call)
            del requesting[slot]
            entry.busy = False
            if entry.probe.job_id not in self.tasks_left:
                nodes.checked[node] = -1
            if ev.job_id < 0:                            # Cancel: the kept probe left the queue
                nodes.queues[node].remove(entry)
        if view.free_slot(node) != slot:
            return ()
        return self._next(node, slot, view)

    def _next(self, node: int, slot: int, view: ClusterView) -> list[Decision]:
        """Drop probes of jobs with no task left, then run what the queue discipline picks."""
        queue = self.nodes.queues[node]
        out: list[Decision] = self._drop_finished(node)
        if self.discipline.first_of_one_job and self.nodes.solo[node] >= 0:
            # one job's entries: each has its work left and none bypasses a free one, so every
            # discipline but the reference's last fit runs the first free entry (no scan, no charge)
            chosen = next((i for i, e in enumerate(queue) if not e.busy), None)
        else:
            chosen = self.discipline.pick(queue, self.tasks_left)
        if chosen is None:
            return out
        entry = queue[chosen]
        probe = entry.probe
        keep = self.discipline.sticky and not probe.long
        if keep:
            self.nodes.requesting[node][slot] = entry
            entry.busy = True
        else:
            del queue[chosen]
            if probe.long:
                self.nodes.long_slots[node].add(slot)
        out.append(Run(node, slot, probe, keep))
        return out

    def _drop_finished(self, node: int) -> list[Decision]:
        """Drop the queued probes of jobs with no task left (not those in flight). A node looks
        only when a job has left since it last found none, or a probe of a gone job queued or
        came back from a request: a queue of thousands costs nothing per event otherwise."""
        if self.nodes.checked[node] == self.gone:
            return []
        self.nodes.checked[node] = self.gone
        queue = self.nodes.queues[node]
        left = self.tasks_left
        for e in queue:   # the usual call finds none: no list is built
            if e.probe.job_id not in left:
                break
        else:
            return []
        dead = [e for e in queue if e.probe.job_id not in left and not e.busy]
        if not dead:
            return []
        drop = {id(e) for e in dead}
        queue[:] = [e for e in queue if id(e) not in drop]
        first = queue[0].probe.job_id if queue else -1   # one job's probes may be all that is left
        self.nodes.solo[node] = first if all(e.probe.job_id == first for e in queue) else -1
        return [Drop(node, e.probe) for e in dead]


ENTRY = PolicyEntry("eagle", EagleConfig, Eagle,
                    "Eagle: Hawk's LWL + partition, SSS probe rejection, sticky batch probing with SRPT, minProbes 20")

__all__ = ["ENTRY", "Eagle", "EagleConfig", "Snapshot"]
