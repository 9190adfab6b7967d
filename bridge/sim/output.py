"""``schedbridge simulate``'s outputs straight from the run, without pandas.

The command's per-job table and summary are the ones :func:`bridge.sim.cli.per_job_frame` and
:func:`bridge.common.metrics.summarize` make from ``SimResult.job_table()`` and
``task_table()``, value for value and byte for byte in the CSV file, but computed from numpy
columns: pandas alone (imported, plus the frames it builds) took ~75 MB of the ~290 MB the
command peaked at on a 12,000-job trace, and the task table (one row per run segment, every
column widened to 64 bits) another ~90 MB at its peak, though the summary needs three sums of
it. pandas is imported only to write a ``.parquet`` file (:meth:`PerJob.frame`).

The equivalence is pinned by ``tests/unit/test_sim_output.py``, which makes both from the same
runs. What it rests on: the same float operations in the same order (each job's ``work`` and
ideal runtime as ``job_table`` computes them; the completion time, slowdown and class as
``with_completion``, vectorized), the same numpy reductions pandas calls (``sum``, ``max`` and
the percentiles of ``bridge.common.metrics``), and each column formatted for CSV as
``DataFrame.to_csv`` formats it (floats by numpy's ``astype(str)``, a missing value as an empty
field, integers and booleans by ``str``), through the same ``csv`` writer settings.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bridge.common import atomic
from bridge.common.metrics import PERCENTILES, class_stats, head_of_line
from bridge.common.options import output_dir

COLUMNS = ("job_id", "submit", "finish", "completion_time", "slowdown", "class", "n_tasks", "mean_duration",
           "estimate", "rejected", "reporting_cutoff", "cluster_slots")
"""The per-job file's columns, in order (those of :func:`bridge.sim.cli.per_job_frame`)."""
NUMERIC = tuple(c for c in COLUMNS if c not in ("class", "rejected"))
"""The columns pandas' ``select_dtypes("number")`` keeps (not the class label, not the boolean)."""
ROWS_PER_WRITE = 4096


class PerJob:
    """One run's per-job columns (numpy arrays, one entry per job in submit order; the run's
    reporting cutoff and the cluster's task slots on every row, as ``per_job_frame`` writes them)
    and whether each job is long."""

    def __init__(self, result: Any, cutoff: float, cluster_slots: int) -> None:
        jobs = result.jobs
        n = len(jobs)
        slots = result.spec.n_nodes * result.spec.slots_per_node
        fin, rej = result.log.job_finish, result.log.rejected_jobs
        job_id = np.empty(n, np.int64)
        submit, finish, estimate = np.empty(n), np.empty(n), np.empty(n)
        n_tasks = np.empty(n, np.int64)
        mean, ideal = np.empty(n), np.empty(n)
        rejected = np.empty(n, bool)
        nan = math.nan
        for i, j in enumerate(jobs):  # the expressions of SimResult.job_table, in its order
            durations = j.durations
            mx = max(durations)
            work = sum(durations)
            k = len(durations)
            jid = j.job_id
            job_id[i], submit[i], finish[i], n_tasks[i], estimate[i] = jid, j.submit, fin.get(jid, nan), k, j.estimate
            mean[i] = work / k
            ideal[i] = max(mx, work / slots)
            rejected[i] = jid in rej
        jct = finish - submit                                     # with_completion
        with np.errstate(divide="ignore", invalid="ignore"):
            slowdown = jct / np.where(ideal > 0, ideal, nan)
        long = mean > cutoff
        self.long = long
        self.columns: dict[str, np.ndarray] = {
            "job_id": job_id, "submit": submit, "finish": finish, "completion_time": jct, "slowdown": slowdown,
            "class": np.where(long, "long", "short"), "n_tasks": n_tasks, "mean_duration": mean,
            "estimate": estimate, "rejected": rejected,
            "reporting_cutoff": np.full(n, cutoff, dtype=np.float64),
            "cluster_slots": np.full(n, cluster_slots, dtype=np.int64),
        }
        assert tuple(self.columns) == COLUMNS

    def __len__(self) -> int:
        return len(self.columns["job_id"])

    def frame(self) -> Any:
        """The same table as a DataFrame (imports pandas): what a ``.parquet`` file is written from."""
        import pandas as pd

        return pd.DataFrame({c: (v.astype(object) if c == "class" else v) for c, v in self.columns.items()})

    def infinite_at(self) -> str | None:
        """The first numeric column holding an infinity, or None (as ``bridge.sim.cli.infinite_at``
        reports on the frame's numeric columns)."""
        return next((c for c in NUMERIC if np.isinf(self.columns[c]).any()), None)

    def write(self, path: Path) -> None:
        """CSV or Parquet by extension, as ``bridge.sim.cli.write_atomic``: an error leaves
        neither a partial file nor a directory created for it behind."""
        with output_dir(path.parent), atomic.replacing(path) as tmp:
            if path.suffix == ".parquet":
                self.frame().to_parquet(tmp, index=False)
            else:
                write_csv(self.columns, tmp)


def _csv_cells(values: np.ndarray) -> list[Any]:
    """One column as ``DataFrame.to_csv`` writes it (``pandas.core.indexes.base.get_values_for_csv``
    with its defaults: floats by numpy's ``astype(str)`` and NaN as an empty field; integers,
    booleans and labels as Python objects, which the ``csv`` writer turns into ``str``)."""
    if values.dtype.kind == "f":
        cells = values.astype(str).astype(object)
        cells[np.isnan(values)] = ""
        values = cells
    listed: list[Any] = values.tolist()
    return listed


def write_csv(columns: Mapping[str, np.ndarray], path: Path) -> None:
    """``columns`` as a CSV file, as ``DataFrame.to_csv(path, index=False)`` writes it: a header
    row, ``,`` between fields, ``"`` quoting only where a field needs it, ``\\n`` line ends;
    formatted and written a block of rows at a time."""
    names = list(columns)
    n = len(next(iter(columns.values()))) if columns else 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n", delimiter=",", quotechar='"', doublequote=True,
                       escapechar=None, quoting=csv.QUOTE_MINIMAL)
        w.writerow(names)
        for lo in range(0, n, ROWS_PER_WRITE):
            w.writerows(zip(*(_csv_cells(columns[c][lo:lo + ROWS_PER_WRITE]) for c in names)))


def _column(a: Any) -> np.ndarray:
    """A column of the run's log (an ``array.array``) as a numpy view of it, no copy."""
    return np.frombuffer(a, dtype=a.typecode) if len(a) else np.zeros(0, a.typecode)


def _busy_and_end(log: Any) -> tuple[float, float]:
    """The sum of the run segments' lengths (``end - start``) and the last segment end (NaN if
    there is none), as ``bridge.common.metrics`` takes them from the task table."""
    if not len(log.seg_end):
        return 0.0, math.nan
    end = _column(log.seg_end)
    return float((end - _column(log.seg_start)).sum()), float(end.max())


def _preemptions(log: Any) -> dict[str, int]:
    """``bridge.common.metrics.preemptions`` on the log's columns: suspended segments, and the
    distinct tasks among them."""
    suspended = np.flatnonzero(_column(log.seg_done) == 0)
    if not len(suspended):
        return {"suspensions": 0, "tasks_preempted": 0}
    jobs, tasks = _column(log.seg_job), _column(log.seg_task)
    pairs = {(int(jobs[i]), int(tasks[i])) for i in suspended}
    return {"suspensions": int(len(suspended)), "tasks_preempted": len(pairs)}


def summarize(result: Any, per_job: PerJob, *, cutoff: float, n_slots: int, counters: Mapping[str, int] | None,
              percentiles: Sequence[int] = PERCENTILES, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """:func:`bridge.common.metrics.summarize` of the run, from its log and ``per_job``."""
    c = per_job.columns
    finish, submit = c["finish"], c["submit"]
    finished = ~np.isnan(finish)
    rejected = c["rejected"]
    n = len(per_job)
    start = float(submit.min()) if n else 0.0
    busy, end = _busy_and_end(result.log)
    if math.isnan(end):
        end = start
    span = end - start
    out: dict[str, Any] = dict(extra or {})
    out.update({
        "reporting_cutoff": cutoff,
        "jobs": int(n),
        "tasks": int(c["n_tasks"].sum()),
        "finished_jobs": int(finished.sum()),
        "unfinished_jobs": int((~finished & ~rejected).sum()),
        "rejected_jobs": int(rejected.sum()),
        "jct": class_stats(c["completion_time"], per_job.long, percentiles),
        "slowdown": class_stats(c["slowdown"], per_job.long, percentiles),
        "makespan": float(np.nanmax(finish) - submit.min()) if finished.any() else math.nan,
        "utilization": busy / (n_slots * span) if span > 0 else math.nan,
        **_preemptions(result.log),
    })
    if counters is not None:
        out["head_of_line"] = head_of_line(counters)
        out["counters"] = {k: int(v) for k, v in counters.items()}
    return out
