"""Reading a results directory (written by `schedbridge replay`, or by the simulator in the same
layout; see `bridge.replay.results`). Only `jobs.csv` is required: a run without `tasks.csv`
or `utilization.csv` simply has no UE or utilization in the report.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

REQUIRED_JOB_COLUMNS = ("job_id", "submit_s", "end_s", "status")


class ResultsError(ValueError):
    """A results directory that cannot be reported on, with the file at fault."""


@dataclass(frozen=True)
class Run:
    label: str
    path: Path
    meta: dict
    jobs: pd.DataFrame
    tasks: pd.DataFrame | None
    utilization: pd.DataFrame | None


def _csv(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: not a readable CSV: {exc}") from None


def _label(meta: dict, path: Path) -> str:
    parts = [str(meta[k]) for k in ("policy", "mode") if meta.get(k)]
    source = meta.get("source")
    return " ".join(parts + ([f"({source})"] if source else [])) or path.name


def load_run(path: Path) -> Run:
    """One results directory; raises ResultsError naming the missing file or column."""
    jobs = _csv(path / "jobs.csv")
    if jobs is None:
        raise ResultsError(f"{path}: no jobs.csv (is this a results directory?)")
    missing = [c for c in REQUIRED_JOB_COLUMNS if c not in jobs.columns]
    if missing:
        raise ResultsError(f"{path / 'jobs.csv'}: missing column(s) {', '.join(missing)}")
    meta_path = path / "meta.json"
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{meta_path}: not valid JSON: {exc}") from None
    return Run(_label(meta, path), path, meta, jobs, _csv(path / "tasks.csv"),
               _csv(path / "utilization.csv"))


def load_runs(paths: list[Path]) -> list[Run]:
    """Several runs, labels made unique by appending the directory name where they clash."""
    runs = [load_run(p) for p in paths]
    labels = [r.label for r in runs]
    return [Run(f"{r.label} [{r.path.name}]" if labels.count(r.label) > 1 else r.label,
                r.path, r.meta, r.jobs, r.tasks, r.utilization) for r in runs]
