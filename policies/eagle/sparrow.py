"""Sparrow: batch sampling with late binding (Ousterhout et al., SOSP 2013; thesis §1.2).

Each job sends ``ceil(probe_ratio * t)`` probes (at least ``min_probes``) to nodes drawn uniformly
at random, with replacement, from the whole cluster. A node queues probes FIFO; when one reaches a
free slot the node asks the job's scheduler for a task, which hands out the job's next unlaunched
task or cancels the probe.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from policies.framework.bounds import MIN_PROBES, PROBE_RATIO, check_bounds
from policies.framework.api import (
    ClusterView, Decisions, JobArrival, PolicyEnv, Probe, ProbeInfo, TaskFinished, TaskRequest,
)
from policies.common.nodefifo import FifoNodes
from policies.common.probing import LateBinder, probe_count, sample
from policies.common.queues import NodeQueues
from policies.framework.registry import PolicyEntry
from workloads.model import Job


@dataclass(frozen=True)
class SparrowConfig:
    probe_ratio: float = field(default=2.0, metadata=PROBE_RATIO)   # probes per task (d)
    min_probes: int = field(default=0, metadata=MIN_PROBES)          # at least this many probes per job

    def __post_init__(self) -> None:
        check_bounds(self)


class Sparrow(FifoNodes):
    name = "sparrow"

    def __init__(self, config: SparrowConfig, env: PolicyEnv) -> None:
        self.cfg = config
        self.n = env.cluster.n_nodes
        self.rng = env.rng("probes")
        self.queues = NodeQueues(self.n)
        self.binder = LateBinder()

    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        job = ev.job
        return self._probe(job, self.binder.add(job))

    def _probe(self, job: Job, available: int) -> Decisions:
        if not available:
            return ()
        k = probe_count(available, self.cfg.probe_ratio, self.cfg.min_probes)
        # a DAG job's scheduler needs to hear of finished tasks to probe for the next stage
        probe = ProbeInfo(job.job_id, est=job.estimate, notify=job.has_dag)
        return (Probe(sample(self.rng, k, 0, self.n), probe),)

    def on_task_request(self, ev: TaskRequest, view: ClusterView) -> Decisions:
        return self.binder.answer(ev)

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        job = view.job(ev.job_id)
        return self._probe(job, self.binder.finished(job, ev.task))


ENTRY = PolicyEntry("sparrow", SparrowConfig, Sparrow, "batch sampling, probe ratio 2, late binding")
