"""Reading runs to report on, into the tables `bridge.common.metrics` works on.

Four sources give the same `Run`:

* a **replay results directory** (`schedbridge replay`; layout in `bridge.replay.results`):
  `jobs.csv` is required, `tasks.csv`, `utilization.csv` and `meta.json` add task-level and
  allocation measures;
* a **simulator per-job file** (`schedbridge simulate --out FILE.csv|.parquet`): job_id,
  submit, finish, completion_time, slowdown, n_tasks, mean_duration, ..., and the run's
  reporting_cutoff and cluster_slots (the same on every row; older files lack them);
* a **simulator per-task file** (`schedbridge simulate --tasks-out FILE`, told by its columns):
  one row per run segment, the same run-wide columns; its jobs are the ones that ran a task (a
  rejected job is in the per-job file only), and its task times give utilization over time;
* a **Spark event log** of one application (`bridge.apps.report.eventlog`), told by its name or
  its first bytes.

`Run.jobs` has bridge.common.metrics' job columns (job_id, submit, finish, n_tasks, mean_duration,
ideal) plus `status` and `key` (what makes two jobs "the same job" across runs);
`Run.tasks` has its task columns (job_id, task, node, slot, start, end, done).
A replay that did not finish (killed, or interrupted: meta.json's `state`) keeps that state and the
ids of its jobs that neither succeeded nor failed, for `report` to refuse or mark it.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from bridge.apps.report.eventlog import load_event_log
from bridge.apps.report.run import TASK_COLUMNS, ResultsError, Run
from bridge.history.logs import is_event_log
from bridge.replay.results import PLUGIN_COUNTERS

_LIVE_JOB_COLUMNS = ("job_id", "submit_s", "end_s", "status")
_SIM_JOB_COLUMNS = ("job_id", "submit", "finish")
_SIM_NUMERIC_COLUMNS = ("submit", "finish", "completion_time", "slowdown", "n_tasks", "mean_duration",
                        "estimate", "reporting_cutoff", "cluster_slots")
_SIM_RUN_COLUMNS = ("reporting_cutoff", "cluster_slots")  # one value per run, repeated on each row
_SIM_TASK_COLUMNS = (*TASK_COLUMNS, "queued")  # simulate --tasks-out
_SIM_TASK_NUMERIC_COLUMNS = ("queued", "start", "end", *_SIM_RUN_COLUMNS)
_ALLOCATION_COLUMNS = ("time_s", "vcores_allocated", "vcores_total")
STATES = ("complete", "running", "interrupted")  # meta.json's "state" (bridge.replay.runner)
ENDED = ("succeeded", "failed")  # what a job of a replay that did not finish may have done


def _read(path: Path, required: tuple[str, ...], numeric: tuple[str, ...] = ()) -> pd.DataFrame:
    """The table at `path` with the `required` columns; the `numeric` ones it has (required or
    not) as floats, where an empty cell is missing but text or an infinity is an error."""
    return _checked(path, _table(path), required, numeric)


def _table(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: not a readable table: {exc}") from None
    if not isinstance(frame.index, pd.RangeIndex):  # pandas made the surplus fields an index
        raise ResultsError(f"{path}: a row has more fields than the header")
    return frame


def _checked(path: Path, frame: pd.DataFrame, required: tuple[str, ...],
             numeric: tuple[str, ...] = ()) -> pd.DataFrame:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ResultsError(f"{path}: missing column(s) {', '.join(missing)}")
    for column in (c for c in numeric if c in frame.columns):
        frame[column] = _numbers(path, frame[column])
    return frame


def _row(path: Path, index: int) -> str:
    return f"row {index + 1}" if path.suffix == ".parquet" else f"line {index + 2}"


def _numbers(path: Path, column: pd.Series) -> pd.Series:
    values = pd.to_numeric(column, errors="coerce").astype(float)
    bad = (values.isna() & column.notna()) | np.isinf(values)
    if bad.any():
        index = int(np.flatnonzero(bad.to_numpy())[0])
        raise ResultsError(f"{path}: {_row(path, index)}: column {column.name}: expected a finite "
                           f"number, got {str(column.iloc[index])!r}")
    return values


def _complete(path: Path, columns: tuple[str, ...], frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` if none of its `columns` has an empty cell (the sampler always fills them)."""
    empty = frame[list(columns)].isna().any(axis=1).to_numpy()
    if empty.any():
        raise ResultsError(f"{path}: {_row(path, int(np.flatnonzero(empty)[0]))}: an empty cell")
    return frame


def _in_order(path: Path, frame: pd.DataFrame, first: str, then: str) -> None:
    """Refuse a row whose `then` time comes before its `first` time (a negative duration)."""
    backwards = (frame[then] < frame[first]).to_numpy()
    if backwards.any():
        index = int(np.flatnonzero(backwards)[0])
        raise ResultsError(f"{path}: {_row(path, index)}: {then} {frame[then].iloc[index]} is before "
                           f"{first} {frame[first].iloc[index]}")


def _live_tasks(path: Path) -> pd.DataFrame:
    if not path.is_file():
        return pd.DataFrame(columns=list(TASK_COLUMNS))
    raw = _read(path, ("job_id", "launch_s", "finish_s"), ("launch_s", "finish_s"))
    _in_order(path, raw, "launch_s", "finish_s")
    return pd.DataFrame({
        "job_id": raw["job_id"], "task": raw.get("task_id", raw.index),
        "node": raw.get("node", ""), "slot": raw.get("executor_id", ""),
        "start": raw["launch_s"], "end": raw["finish_s"], "done": True})


def _live_jobs(raw: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    durations = (tasks["end"] - tasks["start"]).groupby(tasks["job_id"])
    ok = raw["status"] == "succeeded"
    return pd.DataFrame({
        "job_id": raw["job_id"], "submit": raw["submit_s"],
        "finish": raw["end_s"].where(ok), "status": raw["status"],
        "n_tasks": raw["job_id"].map(durations.size()).fillna(0).astype(int),
        "mean_duration": raw["job_id"].map(durations.mean()),
        "ideal": raw.get("duration_alone_s", pd.Series(np.nan, index=raw.index)).astype(float),
        "key": raw.get("params", raw.get("category", raw["job_id"])).astype(str)})


def _label(meta: dict, fallback: str) -> str:
    parts = [str(meta[k]) for k in ("policy", "mode") if meta.get(k)]
    return " ".join(parts + [f"({meta['source']})"] if meta.get("source") else parts) or fallback


def _load_directory(path: Path) -> Run:
    if not (path / "jobs.csv").is_file():
        raise ResultsError(f"{path}: no jobs.csv (is this a results directory?)")
    raw = _read(path / "jobs.csv", _LIVE_JOB_COLUMNS, ("submit_s", "end_s", "duration_alone_s"))
    _in_order(path / "jobs.csv", raw, "submit_s", "end_s")
    meta = _meta(path / "meta.json")
    tasks = _live_tasks(path / "tasks.csv")
    allocation = None
    if (path / "utilization.csv").is_file():
        allocation = _complete(path / "utilization.csv", _ALLOCATION_COLUMNS,
                               _read(path / "utilization.csv", _ALLOCATION_COLUMNS, _ALLOCATION_COLUMNS))
    n_slots = int(allocation["vcores_total"].max()) if allocation is not None and len(allocation) else None
    plugin = meta.get("plugin") if isinstance(meta.get("plugin"), dict) else None
    state = meta.get("state", "complete")
    unfinished = () if state == "complete" else tuple(str(j) for j in raw["job_id"][~raw["status"].isin(ENDED)])
    return Run(_label(meta, path.name), path, _live_jobs(raw, tasks), tasks, allocation, n_slots, plugin,
               state, unfinished)


def _meta(path: Path) -> dict:
    """meta.json's object ({} if there is none); the plugin's counters it reports, if any, are numbers."""
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_bytes())
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise ResultsError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    if meta.get("state", "complete") not in STATES:
        raise ResultsError(f"{path}: state: expected one of {', '.join(STATES)}, got {meta['state']!r}")
    counters = meta.get("plugin")
    for key, value in counters.items() if isinstance(counters, dict) else ():
        if key not in PLUGIN_COUNTERS:
            continue  # e.g. last_failure: text the report does not show
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ResultsError(f"{path}: plugin.{key}: expected a finite number, got {value!r}")
    return meta


def _load_simulator_file(path: Path) -> Run:
    frame = _table(path)
    if set(_SIM_TASK_COLUMNS) <= set(frame.columns) and "finish" not in frame:
        return _load_simulator_tasks(path, _checked(path, frame, _SIM_TASK_COLUMNS, _SIM_TASK_NUMERIC_COLUMNS))
    raw = _checked(path, frame, _SIM_JOB_COLUMNS, _SIM_NUMERIC_COLUMNS)
    _in_order(path, raw, "submit", "finish")
    jobs = raw.copy()
    if "slowdown" in jobs and "ideal" not in jobs:  # keep the simulator's own runtime-alone
        jobs["ideal"] = (jobs["finish"] - jobs["submit"]) / jobs["slowdown"]
    rejected = jobs["rejected"].astype(bool) if "rejected" in jobs else False
    jobs["status"] = np.where(jobs["finish"].notna(), "succeeded",
                              np.where(rejected, "rejected", "unfinished"))
    jobs["key"] = jobs["job_id"].astype(str)
    cutoff, slots = _run_values(path, raw)
    return Run(f"{path.stem} (sim)", path, jobs, pd.DataFrame(columns=list(TASK_COLUMNS)),
               n_slots=slots, cutoff=cutoff)


def _load_simulator_tasks(path: Path, raw: pd.DataFrame) -> Run:
    """A per-task file (`simulate --tasks-out`): its jobs are those that ran a task, each submitted
    when its tasks were queued and finished when its last task did, if every task it ran was done;
    runtime alone as the simulator's (the longest task, or the job's work spread over every slot)."""
    _complete(path, ("job_id", "task", "queued", "start", "end"), raw)
    _in_order(path, raw, "queued", "start")
    _in_order(path, raw, "start", "end")
    tasks = raw[list(TASK_COLUMNS)].assign(done=raw["done"].astype(bool))
    cutoff, slots = _run_values(path, raw)
    runtimes = (tasks["end"] - tasks["start"]).groupby([tasks["job_id"], tasks["task"]]).sum()
    by_job = runtimes.groupby(level="job_id")
    per_job = tasks.groupby("job_id")
    all_done = tasks.groupby(["job_id", "task"])["done"].any().groupby(level="job_id").all()
    finish = per_job["end"].max().where(all_done)
    work, longest = by_job.sum(), by_job.max()
    jobs = pd.DataFrame({"submit": raw.groupby("job_id")["queued"].min(), "finish": finish, "n_tasks": by_job.size(),
                         "mean_duration": by_job.mean(),
                         "ideal": np.maximum(longest, work / slots) if slots else np.nan}).reset_index()
    jobs["status"] = np.where(jobs["finish"].notna(), "succeeded", "unfinished")
    jobs["key"] = jobs["job_id"].astype(str)
    return Run(f"{path.stem} (sim)", path, jobs, tasks, n_slots=slots, cutoff=cutoff)


def _run_values(path: Path, raw: pd.DataFrame) -> tuple[float | None, int | None]:
    """The reporting cutoff and the cluster's task slots a simulator file recorded (None where an
    older file lacks them)."""
    cutoff, slots = (_one_value(path, raw, column) for column in _SIM_RUN_COLUMNS)
    if slots is not None and not (slots >= 1 and slots.is_integer()):
        raise ResultsError(f"{path}: column cluster_slots: expected a whole number of slots, got {slots:g}")
    return cutoff, None if slots is None else int(slots)


def _one_value(path: Path, frame: pd.DataFrame, column: str) -> float | None:
    """The value a run-wide `column` holds on every row, or None where the file has no such column."""
    if column not in frame or frame.empty:
        return None
    values = frame[column].unique()
    if len(values) != 1 or pd.isna(values[0]):
        raise ResultsError(f"{path}: column {column}: expected one value on every row, got "
                           f"{', '.join(f'{v:g}' for v in values[:3])}")
    return float(values[0])


def load_run(path: Path) -> Run:
    """A replay results directory, a simulator per-job or per-task file or a Spark event log."""
    if is_event_log(path):
        return load_event_log(path)
    if path.is_dir():
        return _load_directory(path)
    if path.suffix in (".csv", ".parquet") and path.is_file():
        return _load_simulator_file(path)
    raise ResultsError(f"{path}: neither a results directory, a .csv/.parquet per-job or per-task file nor a Spark "
                       "event log")


def load_runs(paths: list[Path]) -> list[Run]:
    """Several runs; where labels clash (`a/run.csv b/run.csv`, two results directories of one
    policy), each is told apart by the shortest end of its path that no other clashing run's
    path shares (`[a]`, `[b]`; the file name left out when all of them have it)."""
    runs = [load_run(p) for p in paths]
    labels = [r.label for r in runs]
    for label in set(labels):
        clashing = [i for i, other in enumerate(labels) if other == label]
        if len(clashing) > 1:
            for i, suffix in zip(clashing, distinguishing_suffixes([runs[i].path for i in clashing])):
                runs[i] = replace(runs[i], label=f"{label} [{suffix}]")
    return runs


def distinguishing_suffixes(paths: list[Path]) -> list[str]:
    """For each path, its last few parts, as few as make them all differ; without the last part
    when every path ends in the same one. The same path given twice is numbered (#1, #2)."""
    parts = [Path(os.path.abspath(p)).parts for p in paths]
    if len(set(parts)) < len(parts):
        return [f"#{i}" for i in range(1, len(paths) + 1)]
    same_name = len({p[-1] for p in parts}) == 1
    for k in range(1, max(map(len, parts)) + 1):
        ends = [p[-k:] for p in parts]
        if len(set(ends)) == len(ends):
            return [str(Path(*(end[:-1] if same_name else end))) for end in ends]
    raise AssertionError("distinct paths always differ in some suffix")  # pragma: no cover
