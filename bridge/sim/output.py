"""``schedbridge simulate``'s per-job file straight from the run, without pandas.

pandas alone (imported, plus the frames it builds) took ~75 MB of the ~290 MB the command peaked
at on a 12,000-job trace, and the task table (one row per run segment, every column widened to 64
bits) another ~90 MB at its peak, though the summary needs three sums of it. So the command keeps
the run as numpy columns: :meth:`PerJob.of_run` reads each job's times and sizes (the expressions
of ``SimResult.job_table``) and :func:`segments` views the log's segment arrays without a copy;
``bridge.common.metrics`` computes every measure on them (its :func:`~bridge.common.metrics.summary`
is the one every command's summary comes from). pandas is imported only to write a ``.parquet``
file (:meth:`PerJob.frame`) or to read a job table (:meth:`PerJob.of_table`: ``sim-vs-live``'s
calibrated predictions).

The CSV file is the one ``DataFrame.to_csv(path, index=False)`` writes from the same columns:
each column formatted as pandas formats it (floats by numpy's ``astype(str)``, a missing value as
an empty field, integers and booleans by ``str``), through the same ``csv`` writer settings
(pinned by ``tests/unit/test_sim_output.py``).
"""
from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bridge.common import atomic
from bridge.common.metrics import Jobs, Segments, class_labels, completion, job_columns
from bridge.common.options import output_dir

COLUMNS = ("job_id", "submit", "finish", "completion_time", "slowdown", "class", "n_tasks", "mean_duration",
           "estimate", "rejected", "reporting_cutoff", "cluster_slots")
"""The per-job file's columns, in order."""
NUMERIC = tuple(c for c in COLUMNS if c not in ("class", "rejected"))
"""The columns pandas' ``select_dtypes("number")`` keeps (not the class label, not the boolean)."""
ROWS_PER_WRITE = 4096


class PerJob:
    """One run's per-job table as numpy columns (one entry per job; the run's reporting cutoff and
    the cluster's task slots on every row, which ``report`` reads back to split and to measure
    utilization as the run did) and the :class:`~bridge.common.metrics.Jobs` they came from."""

    def __init__(self, job_id: np.ndarray, jobs: Jobs, estimate: np.ndarray, cutoff: float,
                 cluster_slots: int) -> None:
        done = completion(jobs.submit, jobs.finish, jobs.ideal, jobs.mean_duration, cutoff)
        n = len(job_id)
        self.jobs = jobs
        self.columns: dict[str, np.ndarray] = {
            "job_id": job_id, "submit": jobs.submit, "finish": jobs.finish, "completion_time": done.jct,
            "slowdown": done.slowdown, "class": class_labels(done.long), "n_tasks": jobs.n_tasks,
            "mean_duration": jobs.mean_duration, "estimate": estimate, "rejected": jobs.rejected,
            "reporting_cutoff": np.full(n, cutoff, dtype=np.float64),
            "cluster_slots": np.full(n, cluster_slots, dtype=np.int64),
        }
        assert tuple(self.columns) == COLUMNS

    @classmethod
    def of_run(cls, result: Any, cutoff: float, cluster_slots: int) -> PerJob:
        """A ``SimResult``'s jobs in submit order, each as ``SimResult.job_table`` has it."""
        slots = result.spec.n_nodes * result.spec.slots_per_node
        fin, rej = result.log.job_finish, result.log.rejected_jobs
        job_id: list[int] = []
        submit: list[float] = []
        finish: list[float] = []
        estimate: list[float] = []
        n_tasks: list[int] = []
        mean: list[float] = []
        ideal: list[float] = []
        rejected: list[bool] = []
        nan = math.nan
        for j in result.jobs:  # the expressions of SimResult.job_table, in its order; lists, then
            durations = j.durations  # one array each (a numpy item assignment per value costs more)
            work = sum(durations)
            k = len(durations)
            jid = j.job_id
            job_id.append(jid)
            submit.append(j.submit)
            finish.append(fin.get(jid, nan))
            n_tasks.append(k)
            estimate.append(j.estimate)
            mean.append(work / k)
            ideal.append(max(max(durations), work / slots))
            rejected.append(jid in rej)
        return cls(np.array(job_id, np.int64),
                   Jobs(np.array(submit, np.float64), np.array(finish, np.float64), np.array(n_tasks, np.int64),
                        np.array(rejected, bool), np.array(ideal, np.float64), np.array(mean, np.float64)),
                   np.array(estimate, np.float64), cutoff, cluster_slots)

    @classmethod
    def of_table(cls, jobs: Any, cutoff: float, cluster_slots: int) -> PerJob:
        """A job table with ``SimResult.job_table``'s columns (a DataFrame), in its row order."""
        return cls(jobs["job_id"].to_numpy(), job_columns(jobs), jobs["estimate"].to_numpy(), cutoff, cluster_slots)

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
    booleans and labels as Python objects, which the ``csv`` writer turns into ``str``). A 64-bit
    float's ``astype(str)`` is its shortest round-trip text, Python's ``repr`` (pinned by
    ``tests/unit/test_sim_output.py``), which makes it several times faster."""
    if values.dtype == np.float64:
        return ["" if x != x else repr(x) for x in values.tolist()]   # x != x: NaN
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


def segments(log: Any) -> Segments:
    """The run's segments (``SimResult.log``) as views of its arrays, ``done`` as booleans."""
    return Segments(_column(log.seg_job), _column(log.seg_task), _column(log.seg_start), _column(log.seg_end),
                    _column(log.seg_done) != 0)
