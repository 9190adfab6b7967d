"""Sparrow: batch sampling with late binding (Ousterhout et al., SOSP 2013; thesis §1.2).

Each job sends ``ceil(probe_ratio * t)`` probes (at least ``min_probes``) to nodes drawn uniformly
at random, with replacement, from the whole cluster. A node queues probes FIFO; when one reaches a
free slot the node asks the job's scheduler for a task, which hands out the job's next unlaunched
task or cancels the probe.
"""
from __future__ import annotations

from dataclasses import dataclass

from policies.api import ClusterView, Decisions, JobArrival, PolicyEnv, Probe, ProbeInfo, TaskRequest
from policies.common.nodefifo import FifoNodes
from policies.common.probing import LateBinder, probe_count, sample
from policies.common.queues import NodeQueues
from policies.registry import PolicyEntry


@dataclass(frozen=True)
class SparrowConfig:
    probe_ratio: float = 2.0   # probes per task (d)
    min_probes: int = 0        # at least this many probes per job

    def __post_init__(self) -> None:
        if not self.probe_ratio > 0:
            raise ValueError(f"probe_ratio must be > 0, got {self.probe_ratio}")
        if self.min_probes < 0:
            raise ValueError(f"min_probes must be >= 0, got {self.min_probes}")


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
        self.binder.add(job)
        k = probe_count(job.n_tasks, self.cfg.probe_ratio, self.cfg.min_probes)
        return (Probe(sample(self.rng, k, 0, self.n), ProbeInfo(job.job_id, est=job.estimate)),)

    def on_task_request(self, ev: TaskRequest, view: ClusterView) -> Decisions:
        return self.binder.answer(ev, view)


ENTRY = PolicyEntry("sparrow", SparrowConfig, Sparrow, "batch sampling, probe ratio 2, late binding")
