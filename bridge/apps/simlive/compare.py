"""One workload simulated and run live on the same shape, measured the same way, side by side.

The simulator plays the expanded trace workload (the replay's own submissions: the same jobs, times
and task durations) on ``executors`` nodes of ``executor_cores`` slots, the live path's grouping
(the plugin makes each executor a node of its cores), with the policy's parameters and seed, and
with the delays measured from the live run (`bridge.apps.simlive.calibration`). Both sides' jobs go
through `bridge.common.metrics` with one reporting cutoff on the trace's mean task duration, so a job is
short or long in both by the same rule.

A stand-in (Spark's own scheduler live, `policies.framework.standins`) is simulated as its registry model:
``stock`` as ``fifo``, the registry's YARN-like FIFO: one central queue in arrival order, tasks to
free slots (our reading of Spark's default FIFO scheduling mode: jobs in submission order, each
free core offered the earliest job's next task); ``stock-fair`` as ``fair``, Spark's FAIR
scheduler with each replayed job its own pool (our reading, ``policies/stock/fair.py``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from bridge.apps.simlive.calibration import Calibration
from bridge.common import metrics, plots
from policies.framework.registry import sim_model
from workloads.model import Job
from workloads.spec import Submission, TasksJob, declared_demands

STATS = ("p50", "p90", "p99")
TOTALS = ("makespan_s", "throughput_per_min", "utilization")


class CompareError(ValueError):
    """A workload or option the comparison cannot use (named in the message)."""


def trace_jobs(submissions: Sequence[Submission], workload: str) -> list[Job]:
    """The replay's submissions as simulator jobs (same ids, times, durations, and the demand each
    task has live: the most of each resource its job's tasks declare)."""
    jobs = []
    for s in submissions:
        if not isinstance(s.params, TasksJob):
            raise CompareError(f"{workload}: job {s.job_id} is a {s.kind} job; sim-vs-live needs a trace "
                               f"workload ([trace] table), whose task durations the simulator can play")
        declared, n = declared_demands(s.params), len(s.params.durations)
        jobs.append(Job(s.job_id, s.time_s, s.params.durations,
                        demands=None if declared is None else (declared.map,) * n))
    return jobs


def default_cutoff(jobs: Sequence[Job]) -> float:
    """The default reporting cutoff of every command (`bridge.common.metrics.reporting_cutoff`) over
    the played jobs: measured or time-scaled work states no cutoff of its own, so the 90th
    percentile of their mean task durations (the top 10% are long)."""
    return metrics.reporting_cutoff([j.mean_duration for j in jobs])


def live_jobs(results: Path, nominal: Mapping[int, Job]) -> pd.DataFrame:
    """A replay's jobs.csv as `bridge.common.metrics` jobs: finish only where the job succeeded, and the
    trace's mean task duration as the job's size (the class must not depend on the run)."""
    raw = pd.read_csv(results / "jobs.csv")
    ok = raw["status"] == "succeeded"
    return pd.DataFrame({"job_id": raw["job_id"], "submit": raw["submit_s"], "finish": raw["end_s"].where(ok),
                         "n_tasks": raw["job_id"].map(lambda j: nominal[j].n_tasks),
                         "mean_duration": raw["job_id"].map(lambda j: nominal[j].mean_duration)})


def calibrated_jobs(sim_jobs: pd.DataFrame, nominal: Mapping[int, Job], calibration: Calibration) -> pd.DataFrame:
    """The simulator's job table as the live path would have seen it: each finish later by the
    job start and end overheads and its own driver gaps, each job's size its trace mean (not the
    calibrated one)."""
    out = sim_jobs.copy()
    driver = out["job_id"].map(lambda j: calibration.driver_s.get(j, 0.0))
    out["finish"] = out["finish"] + calibration.job_start_s + calibration.job_end_s + driver
    out["mean_duration"] = out["job_id"].map(lambda j: nominal[j].mean_duration)
    return out


@dataclass(frozen=True)
class Measured:
    """One policy's one repeat: per class, the statistics live and simulated."""

    policy: str
    repeat: int
    live: dict[str, dict[str, float]]
    sim: dict[str, dict[str, float]]
    calibration: Calibration
    live_dir: Path
    sim_file: Path
    plugin: Mapping[str, object] | None = None  # the replay's plugin counters (meta.json): who placed the tasks
    estimates: Mapping[str, int] | None = None  # the replay's user jobs per estimate source (meta.json)
    sim_error: str | None = None   # why this run's simulation failed (its ``sim`` statistics are then NaN)
    answers: Mapping[str, int] | None = None  # the replay's answer check (meta.json): correct, wrong, ...
    seed: int | None = None   # the policy seed, live and simulated
    live_totals: Mapping[str, float] = field(default_factory=dict)  # `totals` of the live run
    sim_totals: Mapping[str, float] = field(default_factory=dict)   # and of the simulated one

    def ratio(self, cls: str, stat: str) -> float:
        """live / sim (NaN where either is missing or the simulated value is 0)."""
        a, b = self.live[cls][stat], self.sim[cls][stat]
        return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan

    def as_dict(self) -> dict[str, object]:
        """The JSON record of this run."""
        return {"policy": self.policy, "sim_policy": sim_model(self.policy), "repeat": self.repeat, "seed": self.seed,
                "live": self.live, "sim": self.sim,
                "ratio": {c: {s: self.ratio(c, s) for s in STATS} for c in metrics.CLASSES},
                "calibration": self.calibration.as_dict(), "live_dir": str(self.live_dir),
                "sim_file": str(self.sim_file), "plugin": dict(self.plugin) if self.plugin is not None else None,
                "sim_error": self.sim_error, "answers": dict(self.answers) if self.answers is not None else None,
                "estimates": dict(self.estimates) if self.estimates is not None else None,
                "totals": {"live": dict(self.live_totals), "sim": dict(self.sim_totals)}}


def class_stats(jobs: pd.DataFrame, cutoff: float) -> dict[str, dict[str, float]]:
    """Per class: count of finished jobs and JCT p50/p90/p99 (`bridge.common.metrics`)."""
    summary = metrics.completion_summary(jobs, cutoff)
    return {c: {"count": summary[c]["count"], **{s: summary[c][s] for s in STATS}} for c in metrics.CLASSES}


def totals(jobs: pd.DataFrame, busy_s: float, slots: int) -> dict[str, float]:
    """The whole run (`live_jobs` / `calibrated_jobs` frames): makespan from the first submission to
    the last finish, throughput in finished jobs per minute of it, and utilization: the seconds of
    tasks' full-share work over slots x makespan (NaN without a finished job)."""
    finish = jobs["finish"].to_numpy(dtype=float)
    makespan = metrics.makespan(jobs["submit"].to_numpy(dtype=float), finish)
    if math.isnan(makespan):
        return dict.fromkeys(TOTALS, math.nan)
    return {"makespan_s": makespan, "throughput_per_min": 60.0 * int((~np.isnan(finish)).sum()) / makespan,
            "utilization": busy_s / (slots * makespan)}


def totals_table(runs: Sequence[Measured]) -> pd.DataFrame:
    """One row per policy and repeat: each whole-run figure live, simulated and live/sim."""
    rows = []
    for r in runs:
        row: dict[str, object] = {"policy": r.policy, "repeat": r.repeat}
        for key, label in zip(TOTALS, ("makespan (s)", "jobs/min", "utilization")):
            live, sim = r.live_totals.get(key, math.nan), r.sim_totals.get(key, math.nan)
            row |= {f"{label} live": live, f"{label} sim": sim, f"{label} live/sim": live / sim if sim else math.nan}
        rows.append(row)
    return pd.DataFrame(rows)


def no_stats() -> dict[str, dict[str, float]]:
    """:func:`class_stats` of a simulation that did not run: no job, every statistic NaN."""
    return {c: {"count": 0, **{s: math.nan for s in STATS}} for c in metrics.CLASSES}


def table(runs: Sequence[Measured]) -> pd.DataFrame:
    """One row per policy, repeat, class and statistic: live, simulated, live/sim."""
    return pd.DataFrame([{"policy": r.policy, "sim model": sim_model(r.policy), "repeat": r.repeat,
                          "class": c, "jobs": r.live[c]["count"], "JCT": s, "live (s)": r.live[c][s],
                          "sim (s)": r.sim[c][s], "live/sim": r.ratio(c, s)}
                         for r in runs for c in metrics.CLASSES for s in STATS])


def spread(runs: Sequence[Measured]) -> pd.DataFrame:
    """Over the repeats of each policy: mean, min and max of live and of live/sim, mean of sim."""
    rows = table(runs)
    grouped = rows.groupby(["policy", "class", "JCT"], sort=False)
    return pd.DataFrame({"live mean (s)": grouped["live (s)"].mean(), "live min (s)": grouped["live (s)"].min(),
                         "live max (s)": grouped["live (s)"].max(), "sim mean (s)": grouped["sim (s)"].mean(),
                         "live/sim mean": grouped["live/sim"].mean(), "live/sim min": grouped["live/sim"].min(),
                         "live/sim max": grouped["live/sim"].max()}).reset_index()


def cdf_plot(curves: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]], cutoff: float, path: Path) -> Path:
    """JCT CDFs of short and long jobs: per policy, live (solid) and simulated (dashed, same
    colour), the repeats pooled."""
    panels = []
    for cls in metrics.CLASSES:
        series = []
        for i, (policy, (live, sim)) in enumerate(curves.items()):
            for label, frame, dashed in ((f"{policy} live", live, False), (f"{policy} sim", sim, True)):
                jobs = metrics.with_completion(frame, cutoff)
                series.append(replace(plots.cdf(label, jobs.loc[jobs["cls"] == cls, "jct"]),
                                      dashed=dashed, color=f"C{i}"))
        panels.append(plots.Panel(series, f"{cls} jobs (mean task duration {'>' if cls == 'long' else '<='} "
                                          f"{cutoff:.3g} s)", "job completion time (s)", "fraction of jobs",
                                  ylim=(0, 1.02), empty=f"no finished {cls} jobs"))
    return plots.draw([panels], path)
