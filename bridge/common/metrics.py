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

**Job measures** (thesis §0.3) are computed once, on numpy columns: :class:`Jobs` (one entry a
job) and :class:`Segments` (one entry a run segment) in, numbers out (:func:`completion`,
:func:`class_stats`, :func:`makespan`, :func:`utilization`, :func:`suspensions`,
:func:`summary`). This module
imports no pandas at module level, so ``schedbridge simulate`` feeds them straight from the
simulation log's arrays (``bridge.sim.output``) and never loads pandas. Every other command holds
its runs as pandas tables, and the functions that take a table (:func:`with_completion`,
:func:`completion_summary`, :func:`mean_utilization`, :func:`preemptions`, :func:`summarize`)
hand its columns to the same ones:

* **jobs**: one row per job with ``job_id``, ``submit``, ``finish`` (NaN if the job never
  finished), ``n_tasks``, ``mean_duration`` (actual mean task duration, the thesis' job size)
  and optionally ``ideal`` (runtime when alone in the cluster, for slowdown; defaults to
  ``max_duration`` or ``mean_duration``) and ``rejected``.
* **tasks**: one row per run segment with ``job_id``, ``task``, ``node``, ``slot``, ``start``,
  ``end`` and ``done`` (True on the segment that completed the task; False when it was
  suspended).

Missing values are left out as pandas leaves them out (``skipna``): a sum counts none of them, an
extreme is over the rest, NaN when there is no rest.

Short/long is decided by a **reporting** cutoff on the actual mean task duration, separate from
any scheduling cutoff, so every system is compared on the same job sets. Its default is
:func:`reporting_cutoff`, the one rule of ``trace generate``, ``simulate``, ``report`` and
``sim-vs-live``.

**Multi-resource measures** of one simulation (SE/UE, queues) are in ``bridge.sim.measures``.
"""
from __future__ import annotations

# pandas is imported where a table is made, not here: `simulate` and the simulator benchmark's
# child use the array measures and keep their peak memory, which pandas alone raises by ~50-75 MB.
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

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


class Jobs(NamedTuple):
    """A run's jobs as columns (one entry a job, any order): what the job measures read."""

    submit: np.ndarray
    finish: np.ndarray         # NaN: the job never finished
    n_tasks: np.ndarray
    rejected: np.ndarray       # bool
    ideal: np.ndarray          # runtime alone in the cluster, slowdown's denominator
    mean_duration: np.ndarray  # the job's size, for the short/long split


class Segments(NamedTuple):
    """A run's task segments as columns (one entry a segment, any order)."""

    job: np.ndarray
    task: np.ndarray
    start: np.ndarray
    end: np.ndarray
    done: np.ndarray  # bool: the segment completed its task (False: it was suspended)


class Completion(NamedTuple):
    """Per job: ``jct`` (finish - submit, NaN if unfinished), ``slowdown`` (jct / ideal, NaN also
    where ideal is not positive) and ``long`` (mean task duration above the reporting cutoff)."""

    jct: np.ndarray
    slowdown: np.ndarray
    long: np.ndarray


def completion(submit: np.ndarray, finish: np.ndarray, ideal: np.ndarray, mean_duration: np.ndarray,
               cutoff: float) -> Completion:
    """Each job's completion time, slowdown and class (:class:`Completion`)."""
    jct = finish - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = jct / np.where(ideal > 0, ideal, math.nan)
    return Completion(jct, slowdown, mean_duration > cutoff)


def class_labels(long: np.ndarray) -> np.ndarray:
    """"long" or "short" per job, the ``cls`` column of :func:`with_completion`."""
    return np.where(long, "long", "short")


def _stats(values: np.ndarray, percentiles: Sequence[int]) -> dict[str, float]:
    v = values[~np.isnan(values)]
    res: dict[str, float] = {"count": int(len(v))}
    for p in percentiles:
        res[f"p{p}"] = percentile(v, p)
    res["mean"] = float(v.mean()) if len(v) else math.nan
    res["max"] = float(v.max()) if len(v) else math.nan
    return res


def class_stats(values: np.ndarray, long: np.ndarray,
                percentiles: Sequence[int] = PERCENTILES) -> dict[str, dict[str, float]]:
    """Per class: count, percentiles, mean and max of ``values`` (a value per job, NaN if it did
    not finish) over the jobs that have one; ``long`` says which jobs are long."""
    return {c: _stats(values[long if c == "long" else ~long], percentiles) for c in CLASSES}


def _extreme(values: np.ndarray, largest: bool) -> float:
    """The largest or smallest of ``values`` that is not NaN (``fmax``/``fmin`` pass NaN over,
    and copy nothing); NaN when there is none."""
    return float((np.fmax if largest else np.fmin).reduce(values)) if len(values) else math.nan


def makespan(submit: np.ndarray, finish: np.ndarray) -> float:
    """From the first submission to the last finish (unfinished jobs' NaN passed over); NaN when
    no job finished."""
    return _extreme(finish, largest=True) - _extreme(submit, largest=False) if (~np.isnan(finish)).any() else math.nan


def utilization(starts: np.ndarray, ends: np.ndarray, n_slots: int, start: float,
                end: float | None = None) -> float:
    """Busy slot-seconds (the segments' summed lengths) / (slots x span), span from ``start`` to
    ``end`` (default: the last segment end); NaN without a span."""
    if end is None:
        end = _extreme(ends, largest=True) if len(ends) else start
    span = end - start
    if not span > 0:
        return math.nan
    lengths = ends - starts
    lengths[np.isnan(lengths)] = 0  # a missing length adds nothing
    return float(lengths.sum()) / (n_slots * span)


def suspensions(done: np.ndarray, job: np.ndarray, task: np.ndarray) -> dict[str, int]:
    """Suspensions (segments that did not complete their task) and tasks suspended at least once."""
    suspended = np.flatnonzero(~done)
    return {"suspensions": int(len(suspended)),
            "tasks_preempted": len(set(zip(job[suspended].tolist(), task[suspended].tolist())))}


def summary(jobs: Jobs, segments: Segments, *, cutoff: float, n_slots: int,
            counters: Mapping[str, int] | None = None, percentiles: Sequence[int] = PERCENTILES,
            extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one-object summary ``schedbridge simulate --json`` prints: job counts, JCT and slowdown
    by class (:func:`class_stats`), makespan (first submission to last finish), utilization
    from the first submission (:func:`utilization`), :func:`suspensions` and, given the run's
    counters, :func:`head_of_line`."""
    done = completion(jobs.submit, jobs.finish, jobs.ideal, jobs.mean_duration, cutoff)
    finished = ~np.isnan(jobs.finish)
    first = _extreme(jobs.submit, largest=False)
    out: dict[str, Any] = dict(extra or {})
    out.update({
        "reporting_cutoff": cutoff,
        "jobs": len(jobs.submit),
        "tasks": int(np.nansum(jobs.n_tasks)),
        "finished_jobs": int(finished.sum()),
        "unfinished_jobs": int((~finished & ~jobs.rejected).sum()),
        "rejected_jobs": int(jobs.rejected.sum()),
        "jct": class_stats(done.jct.astype(float, copy=False), done.long, percentiles),
        "slowdown": class_stats(done.slowdown.astype(float, copy=False), done.long, percentiles),
        "makespan": makespan(jobs.submit, jobs.finish),
        "utilization": utilization(segments.start, segments.end, n_slots, first if len(jobs.submit) else 0.0),
        **suspensions(segments.done, segments.job, segments.task),
    })
    if counters is not None:
        out["head_of_line"] = head_of_line(counters)
        out["counters"] = {k: int(v) for k, v in counters.items()}
    return out


# The measures on pandas tables (module docstring): each hands its table's columns to the above.

def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column as a numpy array: numbers in their own dtype (as pandas' arithmetic keeps it),
    anything else (a column holding None, say) as floats, a missing value as NaN."""
    series = frame[name]
    native = isinstance(series.dtype, np.dtype) and series.dtype.kind in "iuf"
    return series.to_numpy() if native else series.to_numpy(dtype=float)


def _ideal(jobs: pd.DataFrame) -> np.ndarray:
    """Slowdown's denominator: ``ideal``, else ``max_duration``, else ``mean_duration``."""
    return _column(jobs, next(c for c in ("ideal", "max_duration", "mean_duration") if c in jobs))


def _completion(jobs: pd.DataFrame, cutoff: float) -> Completion:
    return completion(_column(jobs, "submit"), _column(jobs, "finish"), _ideal(jobs),
                      _column(jobs, "mean_duration"), cutoff)


def job_columns(jobs: pd.DataFrame) -> Jobs:
    """A jobs table (module docstring) as :class:`Jobs`; without ``rejected``, no job was."""
    rejected = jobs["rejected"].astype(bool).to_numpy() if "rejected" in jobs else np.zeros(len(jobs), bool)
    return Jobs(_column(jobs, "submit"), _column(jobs, "finish"), _column(jobs, "n_tasks"), rejected,
                _ideal(jobs), _column(jobs, "mean_duration"))


def segment_columns(tasks: pd.DataFrame) -> Segments:
    """A tasks table (module docstring) as :class:`Segments`."""
    return Segments(tasks["job_id"].to_numpy(), tasks["task"].to_numpy(), _column(tasks, "start"),
                    _column(tasks, "end"), tasks["done"].astype(bool).to_numpy())


def with_completion(jobs: pd.DataFrame, cutoff: float) -> pd.DataFrame:
    """``jobs`` plus :func:`completion`'s ``jct``, ``slowdown`` and ``cls`` ("long" or "short")."""
    done = _completion(jobs, cutoff)
    out = jobs.copy()
    out["jct"], out["slowdown"], out["cls"] = done.jct, done.slowdown, class_labels(done.long)
    return out


def completion_summary(jobs: pd.DataFrame, cutoff: float, percentiles: Sequence[int] = PERCENTILES,
                       column: str = "jct") -> dict[str, dict[str, float]]:
    """:func:`class_stats` of ``column`` (jct or slowdown). ``jobs`` may be raw (classified here)
    or from :func:`with_completion` (its ``cls`` kept, as a caller may have set it)."""
    if "cls" not in jobs:
        jobs = with_completion(jobs, cutoff)
    return class_stats(jobs[column].to_numpy(dtype=float), (jobs["cls"] == "long").to_numpy(), percentiles)


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
    """:func:`utilization` of a tasks table."""
    return utilization(_column(tasks, "start"), _column(tasks, "end"), n_slots, start, end)


def preemptions(tasks: pd.DataFrame) -> dict[str, int]:
    """:func:`suspensions` of a tasks table."""
    return suspensions(tasks["done"].astype(bool).to_numpy(), tasks["job_id"].to_numpy(), tasks["task"].to_numpy())


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
    """:func:`summary` of a jobs table and a tasks table."""
    return summary(job_columns(jobs), segment_columns(tasks), cutoff=cutoff, n_slots=n_slots, counters=counters,
                   percentiles=percentiles, extra=extra)
