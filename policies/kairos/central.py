"""Kairos' central scheduler (thesis Algorithm 3): pending tasks in order, each placed on a node
with the fewest tasks, never above N + Q; ties by the nodes' heartbeats (`policies.kairos.kairos`)."""
from __future__ import annotations

from typing import cast

from policies.framework.api import Assign, Decision, JobArrival, PolicyEnv, ProbeInfo
from policies.common.heap import MinHeap, split_versioned, versioned, versioned_tie
from policies.kairos.config import CentralOrder, KairosConfig, KairosHeartbeat, TieBreak
from workloads.model import Job, Readiness


class LevelQueue:
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
            heap.push(key, 0.0, versioned_tie(node, v), None)
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
                node, version = split_versioned(heap.top_tie())
                if version == self.version[node] and self.count[node] == level:
                    return node
                heap.pop()
        return None


class Central:
    """Algorithm 3: pending tasks in arrival order, placement on the least-loaded node."""

    def __init__(self, config: KairosConfig, env: PolicyEnv) -> None:
        n_nodes = env.cluster.n_nodes
        self.config = config
        self.rng = env.rng("kairos-tiebreak")
        keys = [self._fresh_key(0.0, 0.0) for _ in range(n_nodes)]
        self.levels = LevelQueue(keys, env.cluster.slots_per_node + config.q)
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
        self.pending.push(float(place), 0.0, self.queued, run)

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
            run = cast(list[int], pending.top_item())
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
