"""Multi-resource measures of one simulation (Falcon, Psychas–Ghaderi, Ursa; :func:`measure`),
computed from its segment log:

* makespan: when the last job finishes (jobs are submitted from time 0);
* throughput: tasks per millisecond of makespan (the Falcon paper's plotted unit);
* preemptions (the Falcon paper's "overhead"), dependency disorders;
* per resource r, Ursa's efficiencies (§5): X = allocated resource-time (demand × time a
  task holds its slot), Y = capacity × nodes × makespan, Z = resource-time that made
  progress (held time minus context switches and waiting for DAG parents):
  SE_r = X / Y, UE_r = Z / X, utilisation_r = SE_r · UE_r;
* average allocation (the Falcon spec's reading of utilisation: allocated over capacity,
  time-averaged, averaged over resources: the mean SE) and average utilisation (the mean of
  SE_r · UE_r). They differ when tasks hold resources without progress (a dependency-
  oblivious task started before its parents, a context switch); we rank by utilisation;
* average queue size over a window (Psychas–Ghaderi): tasks that arrived and had not
  started, time-averaged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge.sim.engine import SimResult


@dataclass(frozen=True)
class ResourceMetrics:
    policy: str
    jobs: int
    tasks: int
    makespan: float
    mean_jct: float
    throughput_tasks_per_ms: float
    preemptions: int
    disorders: int
    se: tuple[float, ...]
    ue: tuple[float, ...]
    avg_allocation: float
    avg_utilization: float

    def row(self, resources: tuple[str, ...]) -> dict[str, object]:
        """A flat table row (one SE and one UE column per resource)."""
        out: dict[str, object] = {k: getattr(self, k) for k in (
            "policy", "jobs", "tasks", "makespan", "mean_jct", "throughput_tasks_per_ms",
            "preemptions", "disorders", "avg_allocation", "avg_utilization")}
        for name, se, ue in zip(resources, self.se, self.ue):
            out[f"SE_{name}"] = se
            out[f"UE_{name}"] = ue
        return out


def _segments(result: SimResult) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    lg = result.log
    return (np.asarray(lg.seg_job), np.asarray(lg.seg_task),
            np.asarray(lg.seg_end) - np.asarray(lg.seg_start), np.asarray(lg.seg_idle))


def measure(result: SimResult) -> ResourceMetrics:
    """All metrics of one run (unfinished jobs are an error: the run is incomplete)."""
    if result.unfinished:
        raise ValueError(f"{result.policy}: {len(result.unfinished)} jobs did not finish, "
                         f"e.g. job {result.unfinished[0]}")
    lg, spec = result.log, result.spec
    finish = lg.job_finish
    makespan = max(finish.values())
    jobs = {j.job_id: j for j in result.jobs}
    n_tasks = sum(j.n_tasks for j in result.jobs)
    dims = len(spec.capacity or ())
    seg_job, seg_task, held, idle = _segments(result)
    demand = np.zeros((len(seg_job), dims))
    for i, (j, t) in enumerate(zip(seg_job, seg_task)):
        d = jobs[int(j)].demands
        if d is not None:
            demand[i] = d[int(t)]
    x = (demand * held[:, None]).sum(axis=0)
    z = (demand * (held - idle)[:, None]).sum(axis=0)
    y = np.asarray(spec.capacity or (), dtype=float) * spec.n_nodes * makespan
    se = tuple(float(v) for v in np.divide(x, y, out=np.zeros(dims), where=y > 0))
    ue = tuple(float(v) for v in np.divide(z, x, out=np.ones(dims), where=x > 0))
    return ResourceMetrics(
        result.policy, len(finish), n_tasks, makespan,
        float(np.mean([finish[j] - jobs[j].submit for j in finish])),
        n_tasks / (makespan * 1000.0) if makespan > 0 else 0.0,
        lg.counters.get("suspends", 0), lg.counters.get("disorders", 0),
        se, ue, float(np.mean(se)) if se else 0.0,
        float(np.mean([a * b for a, b in zip(se, ue)])) if se else 0.0)


def _first_starts(result: SimResult) -> dict[tuple[int, int], float]:
    """(job, task) -> when the task first started (a preempted task restarts later)."""
    first: dict[tuple[int, int], float] = {}
    for j, t, s in zip(result.log.seg_job, result.log.seg_task, result.log.seg_start):
        first.setdefault((j, t), s)
    return first


def mean_queue(result: SimResult, start: float, end: float) -> float:
    """Time-averaged number of tasks waiting to start during [start, end)."""
    first = _first_starts(result)
    waited = 0.0
    for job in result.jobs:
        for t in range(job.n_tasks):
            lo, hi = max(job.submit, start), min(first.get((job.job_id, t), end), end)
            waited += max(0.0, hi - lo)
    return waited / (end - start)


def queue_at(result: SimResult, times: list[float]) -> list[int]:
    """Number of tasks waiting to start at each instant (a queue trajectory)."""
    first = _first_starts(result)
    submits = np.array([job.submit for job in result.jobs for _ in range(job.n_tasks)])
    starts = np.array([first[(job.job_id, t)] for job in result.jobs for t in range(job.n_tasks)])
    return [int(((submits <= x) & (starts > x)).sum()) for x in times]
