"""The side-by-side table: one column per run, one row per measure."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bridge.report.load import Run
from bridge.report.measures import alone_estimates, completion_times, efficiencies, makespan, slowdowns

PERCENTILES = (50, 90, 99)


def _percentiles(values: pd.Series, name: str) -> dict[str, float]:
    if values.empty:
        return {f"{name} p{q}": np.nan for q in PERCENTILES}
    return {f"{name} p{q}": float(np.percentile(values, q)) for q in PERCENTILES}


def summary(runs: list[Run]) -> pd.DataFrame:
    """Measures (rows) by run (columns)."""
    estimates = alone_estimates(runs)
    columns = {}
    for run in runs:
        jct = completion_times(run.jobs)
        se, ue = efficiencies(run)
        columns[run.label] = {
            "jobs": len(run.jobs),
            "succeeded": int((run.jobs["status"] == "succeeded").sum()),
            "failed": int((run.jobs["status"] == "failed").sum()),
            "mean JCT (s)": float(jct.mean()) if not jct.empty else np.nan,
            **_percentiles(jct, "JCT (s)"),
            **_percentiles(slowdowns(run.jobs, estimates).dropna(), "slowdown"),
            "makespan (s)": makespan(run.jobs),
            "SE (vcores)": se,
            "UE (vcores)": ue,
            "utilization": se * ue,
        }
    return pd.DataFrame(columns)


def render(table: pd.DataFrame) -> str:
    """Plain-text table for the terminal (counts as integers, the rest to 3 significant places)."""
    def cell(value: float) -> str:
        if pd.isna(value):
            return "-"
        return f"{value:.0f}" if float(value).is_integer() and abs(value) >= 1 else f"{value:.3g}"
    shown = table.apply(lambda col: col.map(cell))
    return shown.to_string()
