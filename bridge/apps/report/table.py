"""The side-by-side table: one column per run, one row per measure (rendered by `bridge.common.tables`)."""
from __future__ import annotations

import pandas as pd

from bridge.common import metrics

from bridge.apps.report.run import Run
from bridge.apps.report.measures import alone_estimates, summary, with_ideal

PERCENTILES = tuple(f"p{p}" for p in metrics.PERCENTILES)  # the row labels


def build(runs: list[Run]) -> pd.DataFrame:
    """Measures (rows) by run (columns)."""
    estimates = alone_estimates(runs)
    columns = {}
    for run in runs:
        found = summary(run, with_ideal(run, estimates))
        status = run.jobs["status"]
        columns[run.label] = {
            "jobs": len(run.jobs),
            "succeeded": int((status == "succeeded").sum()),
            "failed": int((status == "failed").sum()),
            "mean JCT (s)": found["jct"]["mean"],
            **{f"JCT {p} (s)": found["jct"][p] for p in PERCENTILES},
            **{f"slowdown {p}": found["slowdown"][p] for p in PERCENTILES},
            "makespan (s)": found["makespan"],
            "utilization": found["utilization"],
            "SE (vcores)": found["se"],
            "UE (vcores)": found["ue"],
            **plugin_rows(run),
        }
    return pd.DataFrame(columns)


def plugin_rows(run: Run) -> dict[str, float]:
    """Who placed a live run's tasks: the policy, Spark in fallback rounds, or Spark for tasks the
    plugin does not manage (NaN where no plugin ran, or where the input does not say)."""
    counters, nan = run.plugin or {}, float("nan")
    return {"tasks placed by policy": counters.get("placed_tasks", nan),
            "tasks placed in fallback": counters.get("fallback_tasks", nan),
            "tasks not managed": counters.get("unmanaged_tasks", nan),
            "fallback rounds": counters.get("fallback_rounds", nan)}

