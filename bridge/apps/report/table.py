"""The side-by-side table: one column per run, one row per measure, short and long jobs apart
(rendered by `bridge.common.tables`)."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from bridge.common import metrics

from bridge.apps.report.run import Run
from bridge.apps.report.measures import CLASSES, alone_estimates, summary, with_ideal

PERCENTILES = tuple(f"p{p}" for p in metrics.PERCENTILES)  # the row labels


def build(runs: list[Run], cutoff: float) -> pd.DataFrame:
    """Measures (rows) by run (columns); jobs are long iff their mean task duration is above
    `cutoff`. Counts stay integers (the frame holds objects, so a count never reads `300.0`)."""
    estimates = alone_estimates(runs)
    columns = {}
    for run in runs:
        found = summary(run, with_ideal(run, estimates), cutoff)
        status = run.jobs["status"]
        columns[run.label] = {
            "jobs": len(run.jobs),
            "succeeded": int((status == "succeeded").sum()),
            "failed": int((status == "failed").sum()),
            **{row: value for c in CLASSES for row, value in class_rows(c, found["jct"][c], found["slowdown"][c])},
            "makespan (s)": found["makespan"],
            "utilization": found["utilization"],
            "SE (vcores)": found["se"],
            "UE (vcores)": found["ue"],
            **plugin_rows(run),
        }
    return pd.DataFrame({label: pd.Series(rows, dtype=object) for label, rows in columns.items()})


def class_rows(cls: str, jct: Mapping[str, float], slowdown: Mapping[str, float]) -> list[tuple[str, float]]:
    """One class's rows: its finished jobs, JCT mean and percentiles, slowdown percentiles."""
    return [(f"{cls} jobs finished", int(jct["count"])), (f"{cls} mean JCT (s)", jct["mean"]),
            *((f"{cls} JCT {p} (s)", jct[p]) for p in PERCENTILES),
            *((f"{cls} slowdown {p}", slowdown[p]) for p in PERCENTILES)]


def plugin_rows(run: Run) -> dict[str, float]:
    """Who placed a live run's tasks: the policy, Spark in fallback rounds, or Spark for tasks the
    plugin does not manage (NaN where no plugin ran, or where the input does not say)."""
    counters, nan = run.plugin or {}, float("nan")
    return {"tasks placed by policy": counters.get("placed_tasks", nan),
            "tasks placed in fallback": counters.get("fallback_tasks", nan),
            "tasks not managed": counters.get("unmanaged_tasks", nan),
            "late rounds": counters.get("late_rounds", nan),
            "fallback rounds": counters.get("fallback_rounds", nan)}
