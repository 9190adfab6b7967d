"""A workload -> the immutable, seeded tuple of job submissions a replay performs.

Arrival times, categories and TPC-H queries are drawn from three independent streams spawned
from the workload's seed, so changing the category menu does not move the arrivals (and the
same file and seed always give the same submissions, whatever policy is replayed).
"""
from __future__ import annotations

import itertools

import numpy as np

from workloads.spec import (
    Category,
    JobParams,
    Mix,
    Submission,
    TasksJob,
    TpchJob,
    TraceSource,
    Workload,
    WordCountJob,
)
from workloads.synthetic.base import poisson_submit_times
from workloads.trace import iter_trace


def _arrivals(mix: Mix, rng: np.random.Generator) -> np.ndarray:
    if mix.arrival == "fixed":
        return np.arange(mix.jobs) * mix.mean_interarrival_s
    return poisson_submit_times(rng, mix.jobs, mix.mean_interarrival_s)


def _params(category: Category, rng: np.random.Generator) -> JobParams:
    if category.kind == "wordcount":
        return WordCountJob(category.input, category.reduces, category.extra_flops, category.demands)
    return TpchJob(category.input, int(rng.choice(category.queries)), category.demands)


def _from_mix(mix: Mix, seed: int) -> tuple[Submission, ...]:
    arrival_rng, category_rng, query_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    times = _arrivals(mix, arrival_rng)
    weights = np.array([c.probability for c in mix.categories])
    picks = category_rng.choice(len(mix.categories), size=mix.jobs, p=weights / weights.sum())
    return tuple(
        Submission(job_id=i, time_s=round(float(t), 6), category=mix.categories[c].name,
                   params=_params(mix.categories[c], query_rng),
                   duration_alone_s=mix.categories[c].duration_alone_s)
        for i, (t, c) in enumerate(zip(times.tolist(), picks.tolist())))


def _from_trace(trace: TraceSource) -> tuple[Submission, ...]:
    """Trace jobs with every time multiplied by `time_scale`, re-based to start at 0, and the
    demands a `.jsonl` trace gives its tasks."""
    jobs = list(itertools.islice(iter_trace(trace.path), trace.max_jobs))
    start = jobs[0].submit if jobs else 0.0
    scale = trace.time_scale
    return tuple(
        Submission(job_id=i, time_s=(job.submit - start) * scale, category="trace",
                   params=TasksJob(tuple(d * scale for d in job.durations), trace.task_mode, job.demands),
                   duration_alone_s=max(job.durations) * scale)
        for i, job in enumerate(jobs))


def expand(workload: Workload) -> tuple[Submission, ...]:
    """Every job of the workload, in arrival order."""
    if workload.trace is not None:
        return _from_trace(workload.trace)
    assert workload.mix is not None, "load_workload guarantees a mix or a trace"
    return _from_mix(workload.mix, workload.seed)
