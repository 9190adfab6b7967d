"""Per-run measures for the report, computed from a results directory's tables.

* JCT (job completion time) = end_s - submit_s, over jobs that succeeded (thesis §3.2).
* Slowdown = JCT / the job's runtime alone (Kairos): `duration_alone_s` when the workload
  gives it, else estimated as the shortest JCT of any job with the same parameters across all
  runs in the report (the closest observation of that job running alone).
* Makespan = last end - first submission.
* Ursa's efficiencies over the makespan, with vcores as the resource: X = allocated vcore-time
  (RM samples, a step function), Y = total vcores x makespan, Z = task run time (Spark's
  executorRunTime; a task holds one core). SE = X / Y, UE = Z / X, utilization = SE x UE.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from bridge.report.load import Run


def completion_times(jobs: pd.DataFrame) -> pd.Series:
    done = jobs[jobs["status"] == "succeeded"]
    return (done["end_s"] - done["submit_s"]).rename("jct_s")


def _job_key(jobs: pd.DataFrame) -> pd.Series:
    """What identifies "the same job" across runs: its parameters, else its category."""
    column = "params" if "params" in jobs.columns else "category"
    return jobs[column].astype(str)


def alone_estimates(runs: Iterable[Run]) -> dict[str, float]:
    """Job key -> shortest observed JCT over all runs."""
    best: dict[str, float] = {}
    for run in runs:
        done = run.jobs[run.jobs["status"] == "succeeded"]
        for key, jct in zip(_job_key(done), completion_times(run.jobs)):
            best[key] = min(best.get(key, math.inf), jct)
    return best


def slowdowns(jobs: pd.DataFrame, estimates: Mapping[str, float]) -> pd.Series:
    done = jobs[jobs["status"] == "succeeded"]
    given = done.get("duration_alone_s", pd.Series(np.nan, index=done.index)).astype(float)
    alone = given.fillna(_job_key(done).map(estimates).astype(float))
    return (completion_times(jobs) / alone).rename("slowdown")


def makespan(jobs: pd.DataFrame) -> float:
    ended = jobs["end_s"].dropna()
    if ended.empty:
        return math.nan
    return float(ended.max() - jobs["submit_s"].min())


def allocated_core_seconds(utilization: pd.DataFrame, start: float, end: float) -> float:
    """Integral of allocated vcores over [start, end]; each sample holds until the next one."""
    times = utilization["time_s"].to_numpy(dtype=float)
    values = utilization["vcores_allocated"].to_numpy(dtype=float)
    edges = np.clip(np.append(times, end), start, end)
    return float(np.sum(values * np.diff(edges)))


def efficiencies(run: Run) -> tuple[float, float]:
    """(SE, UE) of the vcores over the makespan; NaN where the run lacks the data."""
    util, span = run.utilization, makespan(run.jobs)
    if util is None or util.empty or not span > 0:
        return math.nan, math.nan
    start = float(run.jobs["submit_s"].min())
    allocated = allocated_core_seconds(util, start, start + span)
    se = allocated / (float(util["vcores_total"].max()) * span)
    if run.tasks is None or allocated <= 0:
        return se, math.nan
    return se, float(run.tasks["run_time_s"].sum()) / allocated


def utilization_series(run: Run) -> pd.Series | None:
    """Allocated share of the cluster's vcores over time (None without samples)."""
    util = run.utilization
    if util is None or util.empty:
        return None
    return pd.Series((util["vcores_allocated"] / util["vcores_total"]).to_numpy(),
                     index=util["time_s"].to_numpy(), name=run.label)
