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
any scheduling cutoff, so every system is compared on the same job sets. Its default is
:func:`reporting_cutoff`, the one rule of ``trace generate``, ``simulate``, ``report`` and
``sim-vs-live``.

**Multi-resource measures** of one simulation (SE/UE, queues) are in ``bridge.sim.measures``.
"""
from __future__ import annotations

# pandas is imported where a table is made, not here: the simulator benchmark's child uses
# class_stats and measures its own peak memory, which pandas alone raises by ~50 MB.
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


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


CUTOFF_PERCENTILE = 90  # the default cutoff of a trace that states none: its top 10% of jobs are long


def reporting_cutoff(mean_durations: Iterable[float], stated: float | None = None) -> float:
    """The default short/long reporting cutoff (seconds, on a job's mean task duration) of a trace.

    The thesis' simulator reports every trace with a fixed cutoff of its own (``CUTOFF_BIG_SMALL``:
    Yahoo 90.5811 s, Facebook 76.5951, Cloudera-c 272.7830, Google 1129.532; the specs' §0.5), so a
    trace that states its cutoff (``trace generate`` writes its kind's into the file,
    ``workloads.trace.stated_cutoff``; ``simulate`` records the one it used in its per-job file) is
    reported with it. A trace that states none (an imported history, a live run's measured jobs)
    gets the split the thesis gives for Google, whose cutoff is the top 10% of jobs by mean task
    duration: the :data:`CUTOFF_PERCENTILE`-th percentile of ``mean_durations``."""
    return stated if stated is not None else percentile(mean_durations, CUTOFF_PERCENTILE)


def cutoff_origin(given: bool, stated: bool) -> str:
    """How a cutoff from :func:`reporting_cutoff` (or given on the command line) was chosen, in
    the words every command prints after it."""
    if given:
        return "as given"
    return "stated by the trace" if stated else f"p{CUTOFF_PERCENTILE} of the jobs' mean task durations"


def offered_load(submit_times: Sequence[float], task_seconds: float, slots: int) -> float:
    """Task-seconds over (``slots`` x the span from the first submission to the last plus the
    mean inter-arrival time): the arrival-rate load, not utilization. NaN when every job arrives
    at once (no span to offer it over). Above 1 the cluster cannot keep up: queues grow all run."""
    span = max(submit_times) - min(submit_times) if len(submit_times) else 0.0
    span += span / max(len(submit_times) - 1, 1)
    return task_seconds / (slots * span) if span > 0 else math.nan


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
