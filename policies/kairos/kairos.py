"""Kairos (thesis Ch. 4): node-level Least Attained Service plus central task-count balancing.

No runtime estimates, no long/short classes, no partitions.

* **Node scheduler** (Algorithm 2). Each node runs its tasks LAS-style on its ``N`` slots: a new
  task is the youngest, so it runs at once, suspending the *oldest* running task when no slot is
  free; a finishing task hands its slot to the youngest idle task; every quantum ``W`` a running
  task is swapped for the youngest idle task if that one is not older (``<=``: equal ages
  alternate every W, approximating processor sharing). Starvation prevention, two readings:
  ``starvation = preempted`` ([X] YARN code, the default): a task preempted more than
  ``starvation_preemptions`` times next runs unpreemptible for ``starvation_quanta x W``, and its
  counter resets; ``starvation = waited`` (the thesis' words, "a task that cannot run for a given
  number of consecutive quanta"): a task idle for ``starvation_preemptions`` quanta in a row runs
  next, unpreemptible for ``starvation_quanta x W``. They differ where short tasks come in quick
  succession: a query's 12-18 stages each preempt the batch task on their node for a fraction of
  a second, which the YARN count turns into a protected run that holds the query's later stages
  for 2 W, while the batch task never went a quantum without running.
* **Central scheduler** (Algorithm 3). A queue of pending tasks, first come first served; each goes to a node with the
  fewest tasks, never above ``N + Q`` tasks per node (admission control). Ties go to the node
  whose tasks have the lowest attained-service variance ("var"), or a random one ("random"), or
  the one with the lowest attained-service sum ("sum").
* **A task that ends off its slot** (``QueuedTaskEnded``: live, an idle task runs in a container
  shrunk to the minimum share and may finish there) leaves its node's count at once, by a heartbeat.
* **Heartbeats** carry ``(task count, variance, sum, tasks received)``. The central scheduler
  adds the tasks it sent that the node had not yet received, so counts are never stale low
  (thesis gap §6.3: counts must be updated locally on assignment).

Our reading where the thesis is silent: heartbeats are sent whenever a node's task set changes
(``heartbeat_interval = 0``) or every ``heartbeat_interval`` seconds; quantum timers are armed
only while a node has idle tasks (a timer that finds no idle task would only restart itself).
A DAG job's task (Spark stages) joins the central queue only once its parents have finished (the
central scheduler hears its tasks finish), as YARN sees a stage's requests only when Spark
submits the stage: a node only ever holds tasks that can run. It joins at its user job's place
(``order = job``), as the prototype's CapacityScheduler serves applications in submission order
whenever their requests come, not at the tail (``order = fifo``), where each of a query's
12-18 stages would wait behind every task queued since the query began (measured on the
interactive/batch mix: docs/sim-to-real.md).

Quantum ends at which nothing can happen are skipped, not simulated: a timer that keeps its task
running is re-armed at the first quantum end where the swap test could pass (the task has aged
past the youngest idle one and its starvation protection has run out), and an arrival, the only
event that can make a node's youngest idle task younger, pulls skipped timers back to their next
quantum end. The swaps are those of a timer firing every W; only the no-op firings are gone.
"""
from __future__ import annotations

import enum
import math
import operator
from dataclasses import dataclass, field
from typing import cast

from mypy_extensions import mypyc_attr

from policies.framework.api import (
    Assign, ClusterView, value, Decision, Decisions, Heartbeat, JobArrival, PolicyEnv, ProbeArrival, ProbeInfo,
    QueuedTaskEnded, Resume, Run, RunningTask, SendHeartbeat, SetTimer, SlotFreed, Suspend, TaskFinished, Timer,
)
from policies.framework.bounds import DAY, MS, check_bounds, within
from policies.common.heap import MinHeap, split_versioned, versioned, versioned_tie
from policies.framework.registry import PolicyEntry, Preempts
from workloads.model import Job, Readiness

# A quantum timer's key: ("quantum", slot, epoch); a later arm of the slot bumps the epoch.
QuantumKey = tuple[str, int, int]


class CentralOrder(enum.Enum):
    """Which pending task the central scheduler places next."""

    FIFO = "fifo"   # tasks in the order they became ready (Algorithm 3 as written)
    JOB = "job"     # a ready task takes its user job's arrival place (YARN's and Spark's FIFO)


class Age(enum.Enum):
    """What a node's LAS counts as a task's attained service."""

    TASK = "task"   # the task's own (Algorithm 2)
    JOB = "job"     # its user job's tasks' on the node, together (our extension for multi-stage jobs)


class Starvation(enum.Enum):
    """What makes a task starving, to be given a protected run."""

    PREEMPTED = "preempted"   # preempted more than N times ([X] the YARN prototype's counter)
    WAITED = "waited"         # idle for N quanta in a row (the thesis' text; our reading of it)


class TieBreak(enum.Enum):
    """How the central scheduler picks among nodes holding equally many tasks."""

    VAR = "var"
    RANDOM = "random"
    SUM = "sum"


@dataclass(frozen=True)
class KairosConfig:
    """Kairos parameters; defaults are the thesis' simulation settings (Yahoo trace).

    q: extra tasks admitted per node beyond its slots (simulation 2; YARN prototype 4).
    w: LAS quantum in seconds (simulation 100 Yahoo / 10000 Google; YARN prototype 50).
    starvation_preemptions: the starvation counter's limit N ([X] 3; thesis simulation 3):
        preemptions tolerated (``starvation = preempted``) or quanta idle in a row (``waited``).
    starvation_quanta: length of the protected run, in quanta ([X] 2).
    starvation: preempted (default: the YARN prototype's count) or waited (the thesis' text: a
        task that has not run for N quanta in a row runs next, at a quantum end or a freed slot,
        whatever its age; our reading).
    tie_break: var (default), random or sum.
    swap_margin: a running task is swapped out at a quantum end only if it is older than the
        youngest idle task by at least ``swap_margin x w`` (thesis: 0; YARN prototype: 0.5).
    heartbeat_interval: seconds between node heartbeats; 0 = on every change (our reading).
    order: job (default: a ready task queues at its user job's arrival place, as the prototype's
        CapacityScheduler keeps an application's place for its later container requests; our
        reading for multi-stage jobs) or fifo (a task queues when it becomes ready: Algorithm 3's
        FIFO over tasks taken literally). The same for one-stage jobs, the thesis' only kind.
    age: task (default, Algorithm 2: a task's own attained service) or job (our extension, not the
        thesis': the attained service of the task's user job's tasks on the node, running and
        suspended, together; a task never preempts or swaps with one of its own job, and quantum
        ends are not skipped). A batch job's next map then no longer counts as younger than a
        query that has run a few seconds.
    """

    q: int = field(default=2, metadata=within(0, 1024))
    w: float = field(default=100.0, metadata=within(MS, 1e7))
    starvation_preemptions: int = field(default=3, metadata=within(0, 1_000_000))
    starvation_quanta: int = field(default=2, metadata=within(0, 1_000_000))
    tie_break: TieBreak = TieBreak.VAR
    swap_margin: float = field(default=0.0, metadata=within(0, 1e6))
    heartbeat_interval: float = field(default=0.0, metadata=within(MS, DAY, zero_off=True))
    order: CentralOrder = CentralOrder.JOB
    age: Age = Age.TASK
    starvation: Starvation = Starvation.PREEMPTED

    def __post_init__(self) -> None:
        check_bounds(self)


@value
class KairosHeartbeat:
    """Node -> central state: tasks present, variance and sum of their attained service, and
    how many tasks the node has received in total (to count tasks still in flight)."""

    n_tasks: int
    variance: float
    total: float
    received: int


_attained = operator.attrgetter("attained")


def _key(task: RunningTask | ProbeInfo) -> tuple[int, int]:
    """A task's (job, task) identity, running, suspended or never run (Kairos binds every task)."""
    return task.job_id, cast(int, task.task)


def _age(task: RunningTask, now: float) -> float:
    """Attained service, counting the current run segment of a running task."""
    return task.attained + (now - task.started) if task.slot >= 0 else task.attained


class _LevelQueue:
    """Nodes bucketed by task count; within a bucket the lowest tie-break key wins.

    One heap per count level with lazy deletion: an entry is valid while its version is the
    node's current one, so updates are O(log n) pushes and never searches. A heap that grows
    past twice the node count (plus slack) is rebuilt from its valid entries, which leaves
    ``best`` unchanged and keeps memory bounded on long traces."""

    def __init__(self, keys: list[float], cap: int) -> None:
        self.cap = cap
        self.limit = 2 * len(keys) + 1024
        self.count = [0] * len(keys)
        self.key = list(keys)
        self.version = [0] * len(keys)
        self.heaps: list[MinHeap] = [MinHeap() for _ in range(cap)]
        if cap:
            self.heaps[0] = MinHeap([versioned(key, node, 0) for node, key in enumerate(keys)])

    def update(self, node: int, count: int, key: float) -> None:
        self.count[node], self.key[node] = count, key
        v = self.version[node] = self.version[node] + 1
        if count < self.cap:
            heap = self.heaps[count]
            heap.push(key, versioned_tie(node, v), None)
            if len(heap) > self.limit:
                self._compact(count)

    def _compact(self, level: int) -> None:
        """Keep only the valid entries of one level (each node has exactly one, its latest)."""
        level %= self.cap   # a negative count indexes its heap from the end, as in `update`
        count, key, version = self.count, self.key, self.version
        self.heaps[level] = MinHeap([versioned(key[n], n, version[n]) for n in range(len(count)) if count[n] == level])

    def best(self) -> int | None:
        """The admissible node with the fewest tasks and the lowest key, or None."""
        for level, heap in enumerate(self.heaps):
            while heap:
                node, version = split_versioned(heap.top().tie)
                if version == self.version[node] and self.count[node] == level:
                    return node
                heap.pop()
        return None


class _Central:
    """Algorithm 3: pending tasks in arrival order, placement on the least-loaded node."""

    def __init__(self, config: KairosConfig, env: PolicyEnv) -> None:
        n_nodes = env.cluster.n_nodes
        self.config = config
        self.rng = env.rng("kairos-tiebreak")
        keys = [self._fresh_key(0.0, 0.0) for _ in range(n_nodes)]
        self.levels = _LevelQueue(keys, env.cluster.slots_per_node + config.q)
        self.sent = [0] * n_nodes
        # pending tasks as [job_id, next task, end] runs of consecutive tasks (a job's tasks become
        # entries only when dispatched: a backlog of large jobs costs no memory per task), in a heap
        # by (place, queueing order); a run's place is its queueing order (fifo) or the arrival
        # rank of its user job (job)
        self.pending = MinHeap()
        self.queued = 0                         # runs queued so far: the heap's tie
        self.last: list[int] = [-1, 0, 0]       # the run queued last, extended while it can be
        self.unit_rank: dict[int, int] = {}     # user job -> its arrival rank (order = job)
        self.dags: dict[int, Readiness] = {}   # unfinished DAG jobs: their tasks queue once ready

    def add_job(self, ev: JobArrival) -> None:
        job = ev.job
        if self.config.order is CentralOrder.JOB:
            self.unit_rank.setdefault(job.unit_id, len(self.unit_rank))
        if job.has_dag:
            rd = self.dags[job.job_id] = Readiness(job)
            self._add_ready(job, sorted(rd.ready or ()))
        else:
            self._queue(job, 0, job.n_tasks)

    def task_finished(self, job_id: int, task: int) -> None:
        """A DAG job's task finished: the tasks it made ready join the FIFO."""
        rd = self.dags.get(job_id)
        if rd is None:
            return
        self._add_ready(rd.job, rd.finish(task))
        if not rd.ready:            # nothing ready and unfinished: the job is done
            del self.dags[job_id]

    def _add_ready(self, job: Job, tasks: list[int]) -> None:
        """Queue ``tasks`` (ascending) as runs of consecutive ids."""
        for task in tasks:
            last = self.last
            if last[0] == job.job_id and last[2] == task and last[1] < last[2]:   # still queued
                last[2] = task + 1
            else:
                self._queue(job, task, task + 1)

    def _queue(self, job: Job, first: int, end: int) -> None:
        run = self.last = [job.job_id, first, end]
        self.queued += 1
        place = self.queued if self.config.order is CentralOrder.FIFO else self.unit_rank[job.unit_id]
        self.pending.push(float(place), self.queued, run)

    def heartbeat(self, node: int, hb: KairosHeartbeat) -> None:
        in_flight = self.sent[node] - hb.received
        self.levels.update(node, hb.n_tasks + in_flight, self._fresh_key(hb.variance, hb.total))

    def _fresh_key(self, variance: float, total: float) -> float:
        tie_break = self.config.tie_break
        if tie_break is TieBreak.VAR:
            return variance
        if tie_break is TieBreak.SUM:
            return total
        return self.rng.random()

    def dispatch(self) -> list[Decision]:
        out: list[Decision] = []
        pending = self.pending
        while pending:
            node = self.levels.best()
            if node is None:
                break
            run = cast(list[int], pending.top().item)
            # a DAG job's scheduler hears its tasks finish, to queue the tasks they make ready
            out.append(Assign(node, ProbeInfo(run[0], run[1], notify=run[0] in self.dags)))
            run[1] += 1
            if run[1] == run[2]:
                pending.pop()
            self.claim(node)
        return out

    def claim(self, node: int) -> None:
        """A task was sent to ``node``: count it there at once (thesis gap §6.3); the node's
        heartbeats count it as in flight until they report having received it."""
        self.sent[node] += 1
        levels = self.levels
        key = self.rng.random() if self.config.tie_break is TieBreak.RANDOM else levels.key[node]
        levels.update(node, levels.count[node] + 1, key)


class _Node:
    """Algorithm 2 for every node: LAS with preemption, quantum timers, starvation guard."""

    def __init__(self, config: KairosConfig, n_nodes: int) -> None:
        self.config = config
        self.waiting: list[list[ProbeInfo]] = [[] for _ in range(n_nodes)]   # arrived, never run
        self.received = [0] * n_nodes
        self.preemptions: dict[tuple[int, int], int] = {}
        self.protected_until: dict[tuple[int, int], float] = {}
        # slot -> (epoch, at, the last quantum end it fired at or was set at)
        self.armed: list[dict[int, tuple[int, float, float]]] = [{} for _ in range(n_nodes)]
        self.epoch = 0
        self.heartbeat_armed = [False] * n_nodes
        self.by_job = config.age is Age.JOB
        self.waited = config.starvation is Starvation.WAITED
        self.starve_after = config.starvation_preemptions * config.w     # waited: idle this long
        self.idle_since: dict[tuple[int, int], float] = {}   # waited: when each idle task last ran

    # -- events --------------------------------------------------------------------------
    def arrive(self, ev: ProbeArrival, view: ClusterView) -> list[Decision]:
        node, now = ev.node, ev.time
        self.received[node] += 1
        slot = free = view.free_slot(node)
        if free >= 0:
            out: list[Decision] = [Run(node, slot, ev.probe)]
        else:
            victim = self._oldest_preemptible(node, view, now)
            if victim is None or (self.by_job and not self._younger(node, ev.probe, victim, view, now)):
                self.waiting[node].append(ev.probe)
                if self.waited:
                    self.idle_since[_key(ev.probe)] = now
                out = []
            else:
                self._preempted(victim, now)
                slot = victim.slot
                out = [Suspend(node, slot), Run(node, slot, ev.probe)]
        idle_after = self._idle_after(node, view, out)
        return out + self._arm_quanta(node, view, now, idle_after, slot if out else -1, became_idle=free < 0)

    def slot_freed(self, ev: SlotFreed, view: ClusterView) -> list[Decision]:
        node, now = ev.node, ev.time
        if ev.job_id >= 0:                     # a task finished: its quantum timer is stale
            self._forget((ev.job_id, ev.task))
            self.armed[node].pop(ev.slot, None)
        slot = view.free_slot(node)
        if slot < 0:
            return []
        chosen = self._next_idle(node, view, now)
        if chosen is None:
            return []
        out = self._start(node, slot, chosen, now)
        resumed = 1 if isinstance(chosen, RunningTask) else 0
        idle_left = len(self.waiting[node]) + len(view.suspended(node)) - resumed
        return out + self._arm_quanta(node, view, now, idle_left > 0, slot)

    def queued_ended(self, ev: QueuedTaskEnded) -> None:
        """A task idle on ``ev.node`` (never run, or suspended) ended off its slot: it is no longer
        one of the node's tasks."""
        if ev.probe is not None:
            self.waiting[ev.node].remove(ev.probe)
        self._forget((ev.job_id, ev.task))

    def quantum(self, node: int, key: QuantumKey, now: float, view: ClusterView) -> list[Decision]:
        _, slot, epoch = key
        armed = self.armed[node].get(slot)
        if armed is None or armed[0] != epoch:
            return []                                            # stale: the slot changed hands
        del self.armed[node][slot]
        current = None
        for t in view.running(node):
            if t.slot == slot:
                current = t
                break
        chosen = self._next_idle(node, view, now)
        if current is None or chosen is None:
            return []
        if self._may_swap(node, current, chosen, view, now):
            self._preempted(current, now)
            out = [Suspend(node, slot), *self._start(node, slot, chosen, now)]
            return out + [self._arm(node, slot, now + self.config.w)]
        if self.by_job:     # ages move while tasks are idle too: no end can be skipped
            return [self._arm(node, slot, now + self.config.w)]
        return [self._arm(node, slot, self._next_chance(current, chosen, now, self._starves_at(node, view)), now)]

    def heartbeat(self, node: int, view: ClusterView, now: float, extra_new: int = 0) -> KairosHeartbeat:
        ages = [t.attained + (now - t.started) for t in view.running(node)]   # _age of running tasks
        ages += [t.attained for t in view.suspended(node)]
        fresh = len(self.waiting[node]) + extra_new
        if fresh:
            ages += [0.0] * fresh
        n = len(ages)
        if not n:
            return KairosHeartbeat(0, 0.0, 0.0, self.received[node])
        total = sum(ages)
        mean = total / n
        variance = sum([(a - mean) ** 2 for a in ages]) / n
        return KairosHeartbeat(n, variance, total, self.received[node])

    # -- LAS helpers ---------------------------------------------------------------------
    def _protected(self, task: RunningTask, now: float) -> bool:
        return self.protected_until.get((task.job_id, task.task), -1.0) > now

    def _oldest_preemptible(self, node: int, view: ClusterView, now: float) -> RunningTask | None:
        candidates = [t for t in view.running(node) if not self._protected(t, now)]
        if self.by_job:
            return max(candidates, key=lambda t: (self._job_age(node, t.job_id, view, now), -t.slot), default=None)
        return max(candidates, key=lambda t: (_age(t, now), -t.slot), default=None)

    def _next_idle(self, node: int, view: ClusterView, now: float) -> RunningTask | ProbeInfo | None:
        """The idle task a slot takes next: the longest-starved one (``waited``), else the youngest."""
        if self.waited:
            since = self.idle_since
            idle: list[RunningTask | ProbeInfo] = [*self.waiting[node], *view.suspended(node)]
            first = min(idle, key=lambda t: since.get(_key(t), now), default=None)
            if first is not None and self._starving(first, now):
                return first
        return self._youngest_idle(node, view, now)

    def _starving(self, task: RunningTask | ProbeInfo, now: float) -> bool:
        """``waited``: whether idle ``task`` has not run for N quanta in a row."""
        return self.waited and now - self.idle_since.get(_key(task), now) >= self.starve_after

    def _starves_at(self, node: int, view: ClusterView) -> float:
        """When the node's longest-idle task starts starving (``waited``), else infinity."""
        if not self.waited:
            return math.inf
        since = self.idle_since
        keys = [_key(t) for t in self.waiting[node]] + [_key(t) for t in view.suspended(node)]
        return min([since[k] for k in keys if k in since], default=math.inf) + self.starve_after

    def _youngest_idle(self, node: int, view: ClusterView, now: float) -> RunningTask | ProbeInfo | None:
        """Least attained idle task: a never-run task (age 0, FIFO) or a suspended one (by job: the
        idle task whose job has the least attained service here, never-run ones first on ties)."""
        if self.by_job:
            idle: list[RunningTask | ProbeInfo] = [*self.waiting[node], *view.suspended(node)]
            return min(idle, key=lambda t: self._job_age(node, t.job_id, view, now), default=None)
        suspended = min(view.suspended(node), key=_attained, default=None)
        if self.waiting[node] and (suspended is None or suspended.attained > 0):
            return self.waiting[node][0]
        return suspended

    def _may_swap(self, node: int, current: RunningTask, youngest: RunningTask | ProbeInfo,
                  view: ClusterView, now: float) -> bool:
        if self._protected(current, now):
            return False
        if self._starving(youngest, now):
            return not self.by_job or view.job(youngest.job_id).unit_id != view.job(current.job_id).unit_id
        if self.by_job:
            return self._younger(node, youngest, current, view, now)
        return self._swap_age(youngest) <= _age(current, now)

    def _younger(self, node: int, idle: RunningTask | ProbeInfo, running: RunningTask, view: ClusterView,
                 now: float) -> bool:
        """By job: whether ``idle``'s job, another than ``running``'s, has attained at most
        ``running``'s job's service on the node less the swap margin."""
        if view.job(idle.job_id).unit_id == view.job(running.job_id).unit_id:
            return False
        margin = self.config.swap_margin * self.config.w
        return self._job_age(node, idle.job_id, view, now) + margin <= self._job_age(node, running.job_id, view, now)

    @staticmethod
    def _job_age(node: int, job_id: int, view: ClusterView, now: float) -> float:
        """The attained service of ``job_id``'s user job on ``node``: its tasks running or suspended there."""
        unit = view.job(job_id).unit_id
        total = 0.0
        for t in view.running(node):
            if view.job(t.job_id).unit_id == unit:
                total += t.attained + (now - t.started)
        for t in view.suspended(node):
            if view.job(t.job_id).unit_id == unit:
                total += t.attained
        return total

    def _swap_age(self, youngest: RunningTask | ProbeInfo) -> float:
        """The age a running task must reach to be swapped for the idle task ``youngest``."""
        idle_age = youngest.attained if isinstance(youngest, RunningTask) else 0.0
        return idle_age + self.config.swap_margin * self.config.w

    def _next_chance(self, current: RunningTask, youngest: RunningTask | ProbeInfo, now: float,
                     starves_at: float) -> float:
        """The first quantum end after ``now`` at which ``current`` may be swapped for ``youngest``
        or for a task starving from ``starves_at`` (the quantum ends before it would find the swap
        test failing, if no younger task arrives)."""
        w = self.config.w
        need = self._swap_age(youngest)
        until = self.protected_until.get((current.job_id, current.task), -1.0)
        attained, started = current.attained, current.started
        at = now + w        # stepped as a timer re-armed every W would be, so the swaps are the same
        while until > at or (need > attained + (at - started) and at < starves_at):   # not _may_swap
            at += w
        return at

    def _start(self, node: int, slot: int, task: RunningTask | ProbeInfo, now: float) -> list[Decision]:
        key = _key(task)
        if self.waited:
            if self._starving(task, now):
                self._protect(key, now)
            self.idle_since.pop(key, None)
        elif self.preemptions.get(key, 0) > self.config.starvation_preemptions:
            self._protect(key, now)
            self.preemptions[key] = 0
        if isinstance(task, ProbeInfo):
            self.waiting[node].remove(task)
            return [Run(node, slot, task)]
        return [Resume(node, slot, task.job_id, task.task)]

    def _protect(self, key: tuple[int, int], now: float) -> None:
        self.protected_until[key] = now + self.config.starvation_quanta * self.config.w

    def _preempted(self, task: RunningTask, now: float) -> None:
        """``task`` is suspended now: count it (``preempted``) or note when it went idle (``waited``)."""
        key = (task.job_id, task.task)
        if self.waited:
            self.idle_since[key] = now
        else:
            self.preemptions[key] = self.preemptions.get(key, 0) + 1

    def _forget(self, key: tuple[int, int]) -> None:
        self.preemptions.pop(key, None)
        self.protected_until.pop(key, None)
        self.idle_since.pop(key, None)

    # -- timers --------------------------------------------------------------------------
    def _idle_after(self, node: int, view: ClusterView, out: list[Decision]) -> bool:
        """Whether the node holds an idle task once ``out`` (from an arrival) is applied."""
        preempted = any(isinstance(d, Suspend) for d in out)
        return bool(self.waiting[node] or view.suspended(node) or preempted)

    def _arm_quanta(self, node: int, view: ClusterView, now: float, idle_after: bool,
                    started_slot: int, became_idle: bool = False) -> list[Decision]:
        """While idle tasks exist, every running slot needs a timer at its next quantum end.

        `started_slot` (or -1) just got a task starting now, which `view` does not show yet.
        `became_idle`: a task joined the idle ones, so timers skipped ahead are pulled back."""
        if not idle_after:
            return []
        w = self.config.w
        armed = self.armed[node]
        out: list[Decision] = []
        if started_slot >= 0:
            out.append(self._arm(node, started_slot, now + w))
        for task in view.running(node):
            if task.slot == started_slot:
                continue
            timer = armed.get(task.slot)
            if timer is None:
                periods = int((now - task.started) // w) + 1
                out.append(self._arm(node, task.slot, task.started + periods * w))
            elif became_idle:
                due = timer[2] + w          # the quantum ends it skipped, from the last one it saw
                while due < now:           # (a quantum end at now counts: timers fire last)
                    due += w
                if due < timer[1]:
                    out.append(self._arm(node, task.slot, due, timer[2]))
        return out

    def _arm(self, node: int, slot: int, at: float, seen: float | None = None) -> SetTimer:
        """A quantum timer at ``at``; ``seen`` is the quantum end that skipped to it, if any."""
        self.epoch += 1
        self.armed[node][slot] = (self.epoch, at, at if seen is None else seen)
        key: QuantumKey = ("quantum", slot, self.epoch)
        return SetTimer(at, node, key)


@mypyc_attr(allow_interpreted_subclasses=True)  # others may extend it (tests do)
class Kairos:
    """The Kairos policy: `_Central` on the scheduler side, `_Node` on every node."""

    name = "kairos"

    def __init__(self, config: KairosConfig, env: PolicyEnv) -> None:
        self.config = config
        self.central = _Central(config, env)
        self.nodes = _Node(config, env.cluster.n_nodes)

    # scheduler side
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        self.central.add_job(ev)
        return self.central.dispatch()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        """Only DAG jobs' tasks report finishing (``ProbeInfo.notify``)."""
        central = self.central
        central.task_finished(ev.job_id, ev.task)
        return central.dispatch() if central.pending else ()

    def on_heartbeat(self, ev: Heartbeat, view: ClusterView) -> Decisions:
        central = self.central
        central.heartbeat(ev.node, ev.payload)
        return central.dispatch() if central.pending else ()

    # node side
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        out = self.nodes.arrive(ev, view)
        return out + self._report(ev.node, view, ev.time, extra_new=self._unplaced(out))

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        out = self.nodes.slot_freed(ev, view)
        if ev.job_id < 0:
            return out
        return out + self._report(ev.node, view, ev.time, extra_new=self._unplaced(out))

    def on_queued_task_ended(self, ev: QueuedTaskEnded, view: ClusterView) -> Decisions:
        """The node's count drops at once (its heartbeat says so), so the central scheduler may
        send it another task: live, a short task that finished at the minimum share on the node's
        extra executor no longer holds the node at N + Q until its turn on a slot."""
        self.nodes.queued_ended(ev)
        return self._report(ev.node, view, ev.time)

    def on_node_timer(self, ev: Timer, view: ClusterView) -> Decisions:
        assert ev.node is not None, "node timers carry their node"
        if ev.key == "heartbeat":
            return self._periodic_heartbeat(ev.node, view, ev.time)
        return self.nodes.quantum(ev.node, cast(QuantumKey, ev.key), ev.time, view)  # as _arm sets it

    # heartbeats
    @staticmethod
    def _unplaced(out: list[Decision]) -> int:
        """1 if `out` starts a never-run task (`view` lists it nowhere yet), else 0."""
        return 1 if any(isinstance(d, Run) for d in out) else 0

    def _report(self, node: int, view: ClusterView, now: float, extra_new: int = 0) -> list[Decision]:
        if self.config.heartbeat_interval == 0:
            return [SendHeartbeat(node, self.nodes.heartbeat(node, view, now, extra_new))]
        if self.nodes.heartbeat_armed[node]:
            return []
        self.nodes.heartbeat_armed[node] = True
        return [SetTimer(now + self.config.heartbeat_interval, node, "heartbeat")]

    def _periodic_heartbeat(self, node: int, view: ClusterView, now: float) -> Decisions:
        hb = self.nodes.heartbeat(node, view, now)
        self.nodes.heartbeat_armed[node] = hb.n_tasks > 0
        out: list[Decision] = [SendHeartbeat(node, hb)]
        if hb.n_tasks:
            out.append(SetTimer(now + self.config.heartbeat_interval, node, "heartbeat"))
        return out


def _factory(config: KairosConfig, env: PolicyEnv) -> Kairos:
    return Kairos(config, env)


def _extra_tasks(config: KairosConfig) -> int:
    return config.q


ENTRY = PolicyEntry("kairos", KairosConfig, _factory,
                    "Kairos: node-level LAS with quantum W + central fewest-tasks placement capped at N+Q",
                    # live: the prototype's W = 50 s for jobs of 85-1,175 s, scaled to jobs of seconds
                    # (our reading for a 2-core testbed), and Q = 1 extra executor per node
                    preempts=Preempts(_extra_tasks, live={"q": "1", "w": "5"}, admits_within=True))

__all__ = ["ENTRY", "Kairos", "KairosConfig", "KairosHeartbeat", "Starvation", "TieBreak"]
