"""The report's measures: `bridge.common.metrics` (shared with the simulator) plus what only a live run
has, the allocation sampled from the ResourceManager.

* short and long jobs: a job is long iff its mean task duration is above the reporting cutoff
  (`resolve_cutoff`): the one given, else the one the simulator's files recorded, else every
  command's default over the runs' jobs (`bridge.common.metrics.reporting_cutoff`).
* JCT = finish - submit; slowdown = JCT / runtime alone (`ideal`): the workload's
  `duration_alone_s` or the simulator's ideal runtime where known, else estimated as the
  shortest JCT of a job with the same parameters across every run in the report.
* utilization = busy task-slot time / (slots x span) (`bridge.common.metrics.mean_utilization`): Ursa's
  SE x UE with vcores as the resource. A simulator per-job file has no task table: its busy time
  is its finished jobs' task-seconds (the same figure where every job finished and no task was
  suspended), its slots the cluster's it recorded.
* SE (vcores) = allocated vcore-seconds (RM samples, a step function; the run's own
  applications where recorded, else the whole cluster) / (total vcores x makespan);
  UE = utilization / SE.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TypedDict

import numpy as np
import pandas as pd

from bridge.apps.report.run import ResultsError, Run
from bridge.common import metrics

CLASSES = metrics.CLASSES


def resolve_cutoff(runs: Iterable[Run], given: float | None) -> tuple[float, str]:
    """The reporting cutoff and how it was chosen: `given`, else the one the runs' files recorded
    (refused if they recorded different ones: their classes would not compare), else the default
    rule over every distinct job (by key) of the runs."""
    runs = list(runs)
    if given is not None:
        return given, metrics.cutoff_origin(True, False)
    recorded = {run.cutoff for run in runs if run.cutoff is not None}
    if len(recorded) > 1:
        raise ResultsError("the runs were split with different reporting cutoffs ("
                           + ", ".join(f"{run.label}: {run.cutoff:g} s" for run in runs if run.cutoff is not None)
                           + "): pass --cutoff to report them with one")
    if recorded:
        return recorded.pop(), "recorded by simulate"
    jobs = pd.concat([run.jobs[["key", "mean_duration"]] for run in runs]).dropna().drop_duplicates("key")
    if jobs.empty:
        return math.inf, "no job has a task duration: every job is short"
    return metrics.reporting_cutoff(jobs["mean_duration"]), metrics.cutoff_origin(False, False)


def alone_estimates(runs: Iterable[Run]) -> dict[str, float]:
    """Job key -> shortest observed JCT over all runs."""
    best: dict[str, float] = {}
    for run in runs:
        jct = run.jobs["finish"] - run.jobs["submit"]
        for key, value in zip(run.jobs["key"], jct):
            if not math.isnan(value):
                best[key] = min(best.get(key, math.inf), value)
    return best


def with_ideal(run: Run, estimates: dict[str, float]) -> pd.DataFrame:
    """Jobs with `ideal` filled in from the estimates where the run does not know it."""
    jobs = run.jobs.copy()
    jobs["ideal"] = jobs["ideal"].fillna(jobs["key"].map(estimates)) if "ideal" in jobs else \
        jobs["key"].map(estimates)
    return jobs


def completed(jobs: pd.DataFrame, cutoff: float) -> pd.DataFrame:
    """Jobs with `jct`, `slowdown` and `cls` columns (`bridge.common.metrics.with_completion`); a job
    without a mean task duration (no task recorded) is short."""
    return metrics.with_completion(jobs.fillna({"mean_duration": 0.0}), cutoff)


class Summary(TypedDict):
    """One run's measures: JCT and slowdown by class (short, long) and statistic (count, mean,
    p50, ...), the rest scalars."""

    jct: Mapping[str, Mapping[str, float]]
    slowdown: Mapping[str, Mapping[str, float]]
    makespan: float
    utilization: float
    se: float
    ue: float


def summary(run: Run, jobs: pd.DataFrame, cutoff: float) -> Summary:
    """`bridge.common.metrics.summarize` by class, plus SE and UE where allocation is known."""
    found = metrics.summarize(jobs.fillna({"mean_duration": 0.0}), run.tasks, cutoff=cutoff,
                              n_slots=run.n_slots or 1)
    if not run.n_slots:
        utilization = math.nan
    elif len(run.tasks):
        utilization = found["utilization"]
    else:
        utilization = job_utilization(jobs, run.n_slots)
    se = allocation_efficiency(run, found["makespan"])
    return {"jct": found["jct"], "slowdown": found["slowdown"],
            "makespan": found["makespan"], "utilization": utilization,
            "se": se, "ue": utilization / se if se > 0 else math.nan}


def job_utilization(jobs: pd.DataFrame, n_slots: int) -> float:
    """Utilization from a per-job table alone: the finished jobs' task-seconds over (slots x the
    span from the first submission to the last finish); NaN without a finished job."""
    done = jobs[jobs["finish"].notna()]
    span = float(done["finish"].max() - jobs["submit"].min()) if len(done) else math.nan
    work = float((done["n_tasks"] * done["mean_duration"]).sum())
    return work / (n_slots * span) if span > 0 else math.nan


def allocated_vcores(allocation: pd.DataFrame) -> pd.Series:
    """The run's own allocation where the samples have it, else the cluster's."""
    column = "run_vcores_allocated" if "run_vcores_allocated" in allocation else "vcores_allocated"
    return allocation[column]


def allocated_core_seconds(allocation: pd.DataFrame, start: float, end: float) -> float:
    """Integral of allocated vcores over [start, end]; each sample holds until the next one."""
    times = allocation["time_s"].to_numpy(dtype=float)
    values = allocated_vcores(allocation).to_numpy(dtype=float)
    edges = np.clip(np.append(times, end), start, end)
    return float(np.sum(values * np.diff(edges)))


def allocation_efficiency(run: Run, makespan: float) -> float:
    """SE over the makespan from the RM samples; NaN without them."""
    if run.allocation is None or run.allocation.empty or not run.n_slots or not makespan > 0:
        return math.nan
    start = float(run.jobs["submit"].min())
    return allocated_core_seconds(run.allocation, start, start + makespan) / (run.n_slots * makespan)


SAMPLES = 2000  # at most, on a run's utilization curve: a long simulated run is sampled more coarsely


def busy_series(run: Run) -> pd.DataFrame | None:
    """Share of busy task slots over time (`bridge.common.metrics.utilization_series`), sampled
    every second, or more coarsely where that would be over `SAMPLES` points."""
    if not run.n_slots or run.tasks.empty:
        return None
    span = float(run.tasks["end"].max())
    return metrics.utilization_series(run.tasks, run.n_slots, interval=max(1.0, span / SAMPLES))
