"""Every measure of every command and benchmark: the one metrics module.

**Percentiles** (:func:`percentile`) are one definition everywhere: linear interpolation
between the closest ranks (Hyndman & Fan's type 7; numpy's default, Excel's
``PERCENTILE.INC``). Of ``n`` values sorted ``x[0] <= ... <= x[n-1]``, the p-th percentile is
``x[k] + (h - k) * (x[k+1] - x[k])`` with ``h = (n - 1) * p / 100`` and ``k = floor(h)``: so p50
of 1, 2, 3, 4 is 2.5 and p90 of 15, 20, 35, 40, 50 is 46. This is the definition of the
simulators the thesis' evaluation ran on: Hawk and Eagle extend Sparrow's event simulator,
whose ``get_percentile`` interpolates exactly so (index ``(n - 1) * percent``), and the
thesis' CDFs and p50/p90/p99 tables come from it. A nearest-rank percentile differs from it by
up to one gap between neighbouring values, which matters at p99 of a few hundred samples.

**Job measures** (thesis §0.3) take plain pandas tables, so the simulator and the live cluster
share them:

* **jobs**: one row per job with ``job_id``, ``submit``, ``finish`` (NaN if the job never
  finished), ``n_tasks``, ``mean_duration`` (actual mean task duration, the thesis' job size)
  and optionally ``ideal`` (runtime when alone in the cluster, for slowdown; defaults to
  ``max_duration`` or ``mean_duration``) and ``rejected``.
* **tasks**: one row per run segment with ``job_id``, ``task``, ``node``, ``slot``, ``start``,
  ``end`` and ``done`` (True on the segment that completed the task; False when it was
  suspended).

Short/long is decided by a **reporting** cutoff on the actual mean task duration, separate from
any scheduling cutoff, so every system is compared on the same job sets.

**Multi-resource measures** of one simulation (Falcon, Psychas–Ghaderi, Ursa; :func:`measure`)
are computed from its segment log:

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

# pandas is imported where a table is made, not here: the simulator benchmark's child uses
# class_stats and measures its own peak memory, which pandas alone raises by ~50 MB.

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from bridge.sim.engine import SimResult

PERCENTILES: tuple[int, ...] = (50, 90, 99)
CLASSES = ("short", "long")


def percentile(values: Iterable[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values`` by the module's one definition (linear
    interpolation between closest ranks, see the module docstring). NaNs are left out (a job
    that never finished has no completion time); no values give NaN."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {p}")
    v = np.asarray(values if hasattr(values, "__array__") else list(values), dtype=float)
    v = v[~np.isnan(v)]
    return float(np.percentile(v, p, method="linear")) if len(v) else math.nan


def median(values: Iterable[float]) -> float:
    """The 50th :func:`percentile` (the mean of the two middle values for an even count)."""
    return percentile(values, 50)


def with_completion(jobs: pd.DataFrame, cutoff: float) -> pd.DataFrame:
    """``jobs`` plus ``jct`` (finish - submit), ``slowdown`` (jct / ideal) and ``cls``
    ("long" iff mean_duration > cutoff)."""
    out = jobs.copy()
    out["jct"] = out["finish"] - out["submit"]
    if "ideal" in out:
        ideal = out["ideal"]
    elif "max_duration" in out:
        ideal = out["max_duration"]
    else:
        ideal = out["mean_duration"]
    out["slowdown"] = out["jct"] / ideal.where(ideal > 0)
    out["cls"] = np.where(out["mean_duration"] > cutoff, "long", "short")
    return out


def _stats(values: np.ndarray, percentiles: Sequence[int]) -> dict[str, float]:
    v = values[~np.isnan(values)]
    res: dict[str, float] = {"count": int(len(v))}
    for p in percentiles:
        res[f"p{p}"] = percentile(v, p)
    res["mean"] = float(v.mean()) if len(v) else math.nan
    res["max"] = float(v.max()) if len(v) else math.nan
    return res


def completion_summary(jobs: pd.DataFrame, cutoff: float, percentiles: Sequence[int] = PERCENTILES,
                       column: str = "jct") -> dict[str, dict[str, float]]:
    """Per class: count, p50/p90/p99, mean and max of ``column`` (jct or slowdown) over the
    jobs that finished. ``jobs`` may be raw (classified here) or from :func:`with_completion`."""
    if "cls" not in jobs:
        jobs = with_completion(jobs, cutoff)
    return class_stats(jobs[column].to_numpy(dtype=float), (jobs["cls"] == "long").to_numpy(), percentiles)


def class_stats(values: np.ndarray, long: np.ndarray,
                percentiles: Sequence[int] = PERCENTILES) -> dict[str, dict[str, float]]:
    """:func:`completion_summary` on plain arrays (a value per job, NaN if it did not finish, and
    whether the job is long): numpy only, so a process that measures its own memory (the
    simulator benchmark's child) need not import pandas."""
    return {c: _stats(values[long if c == "long" else ~long], percentiles) for c in CLASSES}


def normalized(summary: Mapping[str, Mapping[str, float]], baseline: Mapping[str, Mapping[str, float]],
               keys: Iterable[str] = ("p50", "p90", "p99", "mean")) -> dict[str, dict[str, float]]:
    """Ratio system/baseline per class and statistic (lower is better; 1 = same)."""
    out: dict[str, dict[str, float]] = {}
    for c in CLASSES:
        out[c] = {}
        for k in keys:
            a, b = summary.get(c, {}).get(k, math.nan), baseline.get(c, {}).get(k, math.nan)
            out[c][k] = a / b if b and not math.isnan(b) else math.nan
    return out


def fraction_at_least_as_good(jobs: pd.DataFrame, baseline_jobs: pd.DataFrame, cutoff: float,
                              tol: float = 1e-9) -> dict[str, float]:
    """Per class, the fraction of jobs whose JCT is <= the baseline's (Hawk's "Hawk >= Sparrow")."""
    a = with_completion(jobs, cutoff).set_index("job_id")
    b = with_completion(baseline_jobs, cutoff).set_index("job_id")["jct"]
    return {c: share_not_worse(a.loc[a["cls"] == c, "jct"], b, tol) for c in CLASSES}


def share_not_worse(jct: Mapping[int, float] | pd.Series, baseline: Mapping[int, float] | pd.Series,
                    tol: float = 1e-9) -> float:
    """The fraction of the jobs finished in both runs (matched by job id) whose JCT is at most
    the baseline's; NaN when no job is in both."""
    import pandas as pd

    a, b = pd.Series(jct, dtype=float).dropna(), pd.Series(baseline, dtype=float).dropna()
    both = a.index.intersection(b.index)
    return float((a[both] <= b[both] + tol).mean()) if len(both) else math.nan


def busy_time(tasks: pd.DataFrame) -> float:
    return float((tasks["end"] - tasks["start"]).sum())


def utilization_series(tasks: pd.DataFrame, n_slots: int, interval: float = 100.0,
                       start: float = 0.0, end: float | None = None) -> pd.DataFrame:
    """Fraction of busy slots sampled every ``interval`` seconds (Hawk samples every 100 s)."""
    if n_slots <= 0:
        raise ValueError("n_slots must be > 0")
    if end is None:
        end = float(tasks["end"].max()) if len(tasks) else start
    times = np.arange(start, end + 1e-12, interval) if end > start else np.array([start])
    starts = np.sort(tasks["start"].to_numpy(dtype=float))
    ends = np.sort(tasks["end"].to_numpy(dtype=float))
    busy = np.searchsorted(starts, times, side="right") - np.searchsorted(ends, times, side="right")
    import pandas as pd

    return pd.DataFrame({"time": times, "busy_slots": busy, "utilization": busy / n_slots})


def mean_utilization(tasks: pd.DataFrame, n_slots: int, start: float = 0.0, end: float | None = None) -> float:
    """Busy slot-seconds / (slots x span), span from ``start`` to the last task end."""
    if end is None:
        end = float(tasks["end"].max()) if len(tasks) else start
    span = end - start
    return busy_time(tasks) / (n_slots * span) if span > 0 else math.nan


def preemptions(tasks: pd.DataFrame) -> dict[str, int]:
    """Suspensions (segments that did not complete their task) and tasks suspended at least once."""
    sus = tasks[~tasks["done"].astype(bool)]
    return {"suspensions": int(len(sus)),
            "tasks_preempted": int(sus[["job_id", "task"]].drop_duplicates().shape[0])}


def head_of_line(counters: Mapping[str, int]) -> dict[str, int]:
    """Table 3.2 counters: probes placed behind a long task, short tasks run after one, and
    re-scheduled probes (stolen + rejected-and-resent)."""
    return {
        "probes_behind_long": int(counters.get("probes_behind_long", 0)),
        "short_tasks_after_long": int(counters.get("short_tasks_after_long", 0)),
        "rescheduled_probes": int(counters.get("stolen_entries", 0)) + int(counters.get("rejected_probes", 0)),
    }


def summarize(jobs: pd.DataFrame, tasks: pd.DataFrame, *, cutoff: float, n_slots: int,
              counters: Mapping[str, int] | None = None, percentiles: Sequence[int] = PERCENTILES,
              extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one-object summary ``schedbridge simulate --json`` prints."""
    import pandas as pd

    j = with_completion(jobs, cutoff)
    finished = j["finish"].notna()
    rejected = j["rejected"].astype(bool) if "rejected" in j else pd.Series(False, index=j.index)
    out: dict[str, Any] = dict(extra or {})
    out.update({
        "reporting_cutoff": cutoff,
        "jobs": int(len(j)),
        "tasks": int(j["n_tasks"].sum()),
        "finished_jobs": int(finished.sum()),
        "unfinished_jobs": int((~finished & ~rejected).sum()),
        "rejected_jobs": int(rejected.sum()),
        "jct": completion_summary(j, cutoff, percentiles),
        "slowdown": completion_summary(j, cutoff, percentiles, column="slowdown"),
        "makespan": float(j["finish"].max() - j["submit"].min()) if finished.any() else math.nan,
        "utilization": mean_utilization(tasks, n_slots, start=float(j["submit"].min()) if len(j) else 0.0),
        **preemptions(tasks),
    })
    if counters is not None:
        out["head_of_line"] = head_of_line(counters)
        out["counters"] = {k: int(v) for k, v in counters.items()}
    return out


# -- multi-resource measures of one simulation ------------------------------------------------
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
