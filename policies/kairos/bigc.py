"""Big-C (Chen et al., ATC 2017), the preemptive baseline of Kairos' prototype evaluation (thesis §3.5).

Two classes by runtime estimate: a job is *long* iff its estimated task duration is above
``cutoff``. The central scheduler (a YARN CapacityScheduler with two queues) gives short jobs
priority and a ``short_share`` of the slots (95% by default); either class may use free slots
opportunistically. A ready short task that finds no free slot preempts a running long task
(container shrinking = suspension) while the long class holds more than its own share; a short
task never preempts a short task. A suspended long task resumes on its own node (no migration)
when a slot there frees and no short task is waiting.

Our reading where the thesis is silent: the victim is the most recently started long task (YARN
preempts the youngest containers of the over-capacity queue), and the central scheduler checks
the victim is still running before suspending it (its TaskFinished may be in flight). A DAG job
(Spark stages) queues a task only once its parents have finished, at the tail of its class's
queue, as YARN sees a stage's container requests only when Spark submits the stage.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from policies.framework.api import (
    Assign, ClusterView, Decision, Decisions, JobArrival, PolicyEnv, ProbeArrival, ProbeInfo, Resume, Run,
    SlotFreed, Suspend, TaskFinished, TaskStarted,
)
from policies.framework.bounds import CUTOFF, FRACTION, check_bounds
from policies.framework.registry import PolicyEntry, Preempts
from workloads.model import Job, Readiness

_Key = tuple[int, int]  # (job id, task index)


@dataclass(frozen=True)
class BigCConfig:
    """cutoff: estimated task duration (s) above which a job is long. The default puts Kairos'
    Table 4.1 categories 1-3 in the short class, as the thesis does.
    short_share: fraction of the slots guaranteed to short jobs (Big-C default 0.95)."""

    cutoff: float = field(default=270.0, metadata=CUTOFF)
    short_share: float = field(default=0.95, metadata=FRACTION)

    def __post_init__(self) -> None:
        check_bounds(self)


class _FreeSlots:
    """The central scheduler's count of free slots per node, plus a FIFO of free-slot tokens.

    A token is consumed lazily: it is skipped when its node's count is already zero because a
    slot of that node was taken directly (a resumption)."""

    def __init__(self, n_nodes: int, slots: int) -> None:
        self.count = [slots] * n_nodes
        self.tokens: deque[int] = deque(n for _ in range(slots) for n in range(n_nodes))

    def release(self, node: int) -> None:
        self.count[node] += 1
        self.tokens.append(node)

    def take_any(self) -> int | None:
        while self.tokens:
            node = self.tokens.popleft()
            if self.count[node] > 0:
                self.count[node] -= 1
                return node
        return None

    def take(self, node: int) -> None:
        self.count[node] -= 1


class BigC:
    name = "bigc"

    def __init__(self, config: BigCConfig, env: PolicyEnv) -> None:
        spec = env.cluster
        self.config = config
        self.free = _FreeSlots(spec.n_nodes, spec.slots_per_node)
        self.long_guarantee = round((1.0 - config.short_share) * spec.n_nodes * spec.slots_per_node)
        self.short_queue: deque[ProbeInfo] = deque()
        self.long_queue: deque[ProbeInfo] = deque()
        self.long_running: dict[_Key, tuple[int, int]] = {}      # -> (node, slot), in start order
        self.suspended: dict[int, deque[_Key]] = {}               # node -> suspended long tasks
        self.local: dict[int, deque[ProbeInfo]] = {}              # node-side overflow queue
        self.dags: dict[int, Readiness] = {}                      # unfinished DAG jobs

    # scheduler side ---------------------------------------------------------------------------
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        if job.has_dag:
            rd = self.dags[job.job_id] = Readiness(job)
            self._enqueue(job, sorted(rd.ready or ()))
        else:
            self._enqueue(job, range(job.n_tasks))
        return self._dispatch(view)

    def _enqueue(self, job: Job, tasks: Iterable[int]) -> None:
        """Queue ``tasks`` of ``job`` in its class's queue."""
        long = job.estimate > self.config.cutoff
        queue = self.long_queue if long else self.short_queue
        queue.extend(ProbeInfo(job.job_id, task, job.estimate, long) for task in tasks)

    def on_task_started(self, ev: TaskStarted, view: ClusterView) -> Decisions:
        if view.job(ev.job_id).estimate > self.config.cutoff:
            self.long_running[(ev.job_id, ev.task)] = (ev.node, ev.slot)
        return ()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        self.long_running.pop((ev.job_id, ev.task), None)
        self.free.release(ev.node)
        rd = self.dags.get(ev.job_id)
        if rd is not None:
            self._enqueue(rd.job, rd.finish(ev.task))
            if not rd.ready:        # nothing ready and unfinished: the job is done
                del self.dags[ev.job_id]
        return self._dispatch(view)

    def _dispatch(self, view: ClusterView) -> list[Decision]:
        out: list[Decision] = []
        self._place(self.short_queue, out)
        while self.short_queue and len(self.long_running) > self.long_guarantee:
            if not self._preempt_for_short(view, out):
                break
        if not self.short_queue:
            self._resume_suspended(view, out)
            self._place(self.long_queue, out)
        return out

    def _place(self, queue: deque[ProbeInfo], out: list[Decision]) -> None:
        while queue:
            node = self.free.take_any()
            if node is None:
                return
            out.append(Assign(node, queue.popleft()))

    def _preempt_for_short(self, view: ClusterView, out: list[Decision]) -> bool:
        """Suspend the most recently started long task and give its slot to a short task."""
        while self.long_running:
            key, (node, slot) = self.long_running.popitem()
            if any(t.slot == slot and (t.job_id, t.task) == key for t in view.running(node)):
                self.suspended.setdefault(node, deque()).append(key)
                out.append(Suspend(node, slot))
                out.append(Assign(node, self.short_queue.popleft()))
                return True
        return False

    def _resume_suspended(self, view: ClusterView, out: list[Decision]) -> None:
        for node in sorted(self.suspended):
            waiting = self.suspended[node]
            while waiting and self.free.count[node] > 0:
                job_id, task = waiting.popleft()
                slot = view.free_slot(node)
                self.free.take(node)
                self.long_running[(job_id, task)] = (node, slot)
                out.append(Resume(node, slot, job_id, task))
            if not waiting:
                del self.suspended[node]

    # node side --------------------------------------------------------------------------------
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        slot = view.free_slot(ev.node)
        if slot >= 0 and not self.local.get(ev.node):
            return (Run(ev.node, slot, ev.probe),)
        self.local.setdefault(ev.node, deque()).append(ev.probe)
        return ()

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        waiting = self.local.get(ev.node)
        if waiting and view.free_slot(ev.node) == ev.slot:
            return (Run(ev.node, ev.slot, waiting.popleft()),)
        return ()


ENTRY = PolicyEntry("bigc", BigCConfig, BigC,
                    "Big-C: two classes, 95% short share, long tasks preempted (suspended) by short ones",
                    preempts=Preempts())
