"""Psychas–Ghaderi schedulers as engine policies: the slotted model on the event simulator.

Time is slotted (slot length ``slot``, 1 by default; 0.1 s for the Google trace). Instead of
a second, slotted simulator, a scheduling pass runs at a slot boundary through a scheduler
timer: arrivals and departures at instant t are delivered first (lower event tiers), then
the Timer at t runs one pass, exactly the paper's loop "arrivals, decide, serve". A pass is
only needed at boundaries where something arrived or departed; at any other boundary the
queue and the servers are unchanged and every algorithm here would decide nothing. Service
times that are whole numbers of slots keep departures on boundaries.

Each workload task is one of the paper's "jobs"; its size is its largest demand share,
max_h demand_h / capacity_h (the paper's max(CPU, memory) reduction). The four algorithms
differ only in the :class:`Planner` they plug into :class:`SlottedPacker`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, cast

from policies.framework.bounds import DAY, MS, check_bounds, within
from policies.framework.api import (NONE, Assign, ClusterView, Decisions, JobArrival, PolicyEnv, ProbeArrival,
                          ProbeInfo, Run, SetTimer, TaskFinished, Timer)
from policies.psychas.algorithms import (ServerMix, bf_js, fifo_first_fit, vqs_bf_fill, vqs_fill)
from policies.psychas.partition import Configuration, Partition, max_weight, reduced_configurations
from policies.psychas.queues import SizeQueue, VirtualQueues, Waiting
from policies.framework.registry import PolicyEntry
from workloads.model import Job

TaskKey = tuple[int, int]
TICK = "slot"


@dataclass(frozen=True)
class PackerConfig:
    """Slot length in seconds; J for the VQS partition (ignored by BF-J/S and FIFO-FF)."""

    slot: float = field(default=1.0, metadata=within(MS, DAY))
    J: int = field(default=4, metadata=within(2, 64))
    strict_hol: bool = False  # VQS: stop a class scan at the first job that does not fit

    def __post_init__(self) -> None:
        check_bounds(self)


@dataclass
class PassState:
    """Scratch state of one scheduling pass (residuals are normalised to capacity 1)."""

    residuals: list[float]
    departed: list[int]
    arrivals: list[Waiting]
    held: list[list[float]]  # sizes of the tasks each server holds


class Planner(Protocol):
    """One algorithm: keeps its own queue structure and plans a pass."""

    def enqueue(self, job: Waiting) -> None: ...

    def plan(self, state: PassState) -> list[tuple[Hashable, int]]: ...


class SlottedPacker:
    """Shared skeleton: size bookkeeping, slot timers, Assign out, Run on arrival at a node."""

    def __init__(self, name: str, planner: Planner, config: PackerConfig, env: PolicyEnv,
                 partition: Partition | None = None) -> None:
        self.name = name
        self.planner = planner
        self.config = config
        self.capacity = env.cluster.capacity or (1.0,)
        # a server's size: 1, or on unlike nodes its smallest share of the largest (our reading:
        # the paper's servers are alike; sizes stay shares of the largest)
        self.server = [1.0 if (c := env.cluster.capacity_of(n)) is None else
                       min((x / m for x, m in zip(c, self.capacity) if m > 0), default=1.0)
                       for n in range(env.cluster.n_nodes)]
        self.partition = partition
        self.n_nodes = env.cluster.n_nodes
        # a task also takes one of its node's slots (our reading: the paper's servers have none;
        # here a node runs at most slots_per_node tasks however small their demands)
        self.slot_share = 1.0 / env.cluster.slots_per_node
        self.size: dict[TaskKey, float] = {}
        self.held: list[dict[TaskKey, float]] = [{} for _ in range(self.n_nodes)]
        self.departed: list[int] = []
        self.arrivals: list[Waiting] = []
        self.seq = 0
        self.tick_at: float | None = None
        self.unready: dict[int, list[int]] = {}  # DAG tasks waiting for their parents

    # -- scheduler side --------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        """Each task arrives as a paper "job" once ready (DAG tasks when their parents finish)."""
        self._admit(ev.job, range(ev.job.n_tasks), view)
        return self._wake(ev.time)

    def _admit(self, job: Job, tasks: Iterable[int], view: ClusterView) -> None:
        """Queue the ready ones among ``tasks``; remember the others until a parent finishes."""
        waiting = []
        for i in tasks:
            if view.is_ready(job.job_id, i):
                self._arrive(job, i)
            else:
                waiting.append(i)
        if waiting:
            self.unready[job.job_id] = waiting

    def _arrive(self, job: Job, i: int) -> None:
        share = 1.0 if job.demands is None else max(
            self.slot_share, *(d / c for d, c in zip(job.demands[i], self.capacity, strict=True)))
        size = self.partition.effective_size(share) if self.partition else share
        self.size[(job.job_id, i)] = size
        w = Waiting(size, self.seq, (job.job_id, i))
        self.seq += 1
        self.planner.enqueue(w)
        self.arrivals.append(w)

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        del self.held[ev.node][(ev.job_id, ev.task)]
        if ev.node not in self.departed:
            self.departed.append(ev.node)
        if ev.job_id in self.unready:
            self._admit(view.job(ev.job_id), self.unready.pop(ev.job_id), view)
        return self._wake(ev.time)

    def on_timer(self, ev: Timer, view: ClusterView) -> Decisions:
        self.tick_at = None
        held = [list(h.values()) for h in self.held]
        state = PassState([size - sum(h) for size, h in zip(self.server, held)], sorted(self.departed),
                          self.arrivals, held)
        self.departed, self.arrivals = [], []
        out: list[Assign] = []
        for placed, node in self.planner.plan(state):
            key = cast(TaskKey, placed)                  # the queues hold the keys on_job_arrival made
            self.held[node][key] = self.size.pop(key)
            out.append(Assign(node, ProbeInfo(key[0], key[1])))
        return out

    def _wake(self, now: float) -> Decisions:
        """Ask for a pass at the first slot boundary at or after ``now`` (once)."""
        at = math.ceil(now / self.config.slot - 1e-9) * self.config.slot
        if self.tick_at is not None and self.tick_at <= at:
            return NONE
        self.tick_at = at
        return (SetTimer(at, None, TICK),)

    # -- node side -------------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        """A placed task reached its server: start it (the pass already checked the fit)."""
        return (Run(ev.node, view.free_slot(ev.node), ev.probe),)


class BfJsPlanner:
    """BF-J/S: BF-S on servers with departures, then BF-J on the slot's arrivals."""

    def __init__(self) -> None:
        self.queue = SizeQueue()

    def enqueue(self, job: Waiting) -> None:
        self.queue.add(job)

    def plan(self, state: PassState) -> list[tuple[Hashable, int]]:
        return bf_js(state.residuals, state.departed, self.queue, state.arrivals)


class FifoFirstFitPlanner(BfJsPlanner):
    """FIFO with first fit (the paper's packing version of Hadoop's FIFO)."""

    def plan(self, state: PassState) -> list[tuple[Hashable, int]]:
        return fifo_first_fit(state.residuals, self.queue)


class VqsPlanner:
    """VQS (``best_fit=False``) or VQS-BF: per-server active configurations renewed only
    when a server is empty, by max weight over the 4J−4 reduced configurations."""

    def __init__(self, partition: Partition, best_fit: bool, strict_hol: bool) -> None:
        self.vqs = VirtualQueues(partition)
        self.configs = reduced_configurations(partition.J)
        self.active: dict[int, Configuration] = {}
        self.best_fit = best_fit
        self.strict_hol = strict_hol
        self.classes: dict[float, int] = {}  # size -> class, for jobs in service

    def enqueue(self, job: Waiting) -> None:
        self.vqs.add(job)

    def mix(self, sizes: list[float]) -> ServerMix:
        counts = [0] * self.vqs.partition.classes
        others = 0.0
        for s in sizes:
            j = self.classes.get(s)
            if j is None:
                j = self.classes[s] = self.vqs.partition.classify(s)
            counts[j] += 1
            others += s if j != 1 else 0.0
        return ServerMix(counts[1] > 0, tuple(counts), others)

    def plan(self, state: PassState) -> list[tuple[Hashable, int]]:
        out: list[tuple[Hashable, int]] = []
        for node, sizes in enumerate(state.held):
            if not self.vqs:
                break
            if not sizes or node not in self.active:  # renewed only when the server is empty
                self.active[node] = max_weight(self.configs, self.vqs.lengths())
            mix = self.mix(sizes)
            if self.best_fit:
                vqs_bf_fill(node, self.active[node], mix, state.residuals, self.vqs, out)
            else:
                vqs_fill(node, self.active[node], mix, state.residuals, self.vqs, out, self.strict_hol)
        return out


def _packer(name: str, make_planner: Callable[[PackerConfig], Planner],
            vqs_partition: bool) -> Callable[[PackerConfig, PolicyEnv], SlottedPacker]:
    def factory(config: PackerConfig, env: PolicyEnv) -> SlottedPacker:
        partition = Partition(config.J) if vqs_partition else None
        return SlottedPacker(name, make_planner(config), config, env, partition)
    return factory


ENTRIES = (
    PolicyEntry("bf-js", PackerConfig, _packer("bf-js", lambda c: BfJsPlanner(), False),
                "Psychas-Ghaderi BF-J/S: best fit from the server and the job side (1/2 of rho*)"),
    PolicyEntry("fifo-ff", PackerConfig, _packer("fifo-ff", lambda c: FifoFirstFitPlanner(), False),
                "FIFO with first fit, head-of-line blocking (Psychas-Ghaderi baseline)"),
    PolicyEntry("vqs", PackerConfig,
                _packer("vqs", lambda c: VqsPlanner(Partition(c.J), False, c.strict_hol), True),
                "Psychas-Ghaderi VQS: 2J virtual queues, max weight over 4J-4 configurations (2/3)"),
    PolicyEntry("vqs-bf", PackerConfig,
                _packer("vqs-bf", lambda c: VqsPlanner(Partition(c.J), True, c.strict_hol), True),
                "Psychas-Ghaderi VQS-BF: VQS configurations then best fit (2/3, lower delay)"),
)
BF_JS, FIFO_FF, VQS, VQS_BF = ENTRIES
