"""PNG plots of several runs: CDFs of JCT and slowdown, and cluster utilization over time."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from bridge.report.load import Run  # noqa: E402
from bridge.report.measures import (  # noqa: E402
    allocated_vcores,
    alone_estimates,
    busy_series,
    completed,
    with_ideal,
)


def _save(fig: plt.Figure, path: Path) -> Path:
    temp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(temp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    temp.replace(path)
    return path


def _legend_or_note(ax: plt.Axes, note: str) -> None:
    """A legend, or ``note`` across an empty plot (results without the data, e.g. a benchmark's
    without tasks.csv) instead of matplotlib's warning about a legend with no entries."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes)


def _cdf(series_by_label: dict[str, pd.Series], xlabel: str, title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, values in series_by_label.items():
        xs = np.sort(values.dropna().to_numpy())
        if len(xs):
            ax.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", label=label)
    ax.set(xlabel=xlabel, ylabel="fraction of jobs", title=title, ylim=(0, 1.02))
    ax.grid(alpha=0.3)
    _legend_or_note(ax, "no completed jobs in these results")
    return _save(fig, path)


def _utilization(runs: list[Run], path: Path) -> Path:
    """Busy task slots (solid) and, for live runs, allocated vcores (dashed), as shares."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for run in runs:
        busy = busy_series(run)
        if busy is None:
            continue
        line, = ax.step(busy["time"], busy["utilization"], where="post", label=f"{run.label} busy")
        if run.allocation is not None and run.n_slots:
            ax.step(run.allocation["time_s"], allocated_vcores(run.allocation) / run.n_slots,
                    where="post", linestyle="--", color=line.get_color(),
                    label=f"{run.label} allocated")
    ax.set(xlabel="time since start (s)", ylabel="share of vcores", title="Cluster utilization",
           ylim=(0, 1.05))
    ax.grid(alpha=0.3)
    _legend_or_note(ax, "no per-task times in these results")
    return _save(fig, path)


def write_plots(runs: list[Run], out: Path) -> list[Path]:
    """jct_cdf.png, slowdown_cdf.png and utilization.png in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    estimates = alone_estimates(runs)
    done = {r.label: completed(with_ideal(r, estimates)) for r in runs}
    return [
        _cdf({label: jobs["jct"] for label, jobs in done.items()}, "job completion time (s)",
             "CDF of job completion time", out / "jct_cdf.png"),
        _cdf({label: jobs["slowdown"] for label, jobs in done.items()},
             "slowdown (JCT / runtime alone)", "CDF of slowdown", out / "slowdown_cdf.png"),
        _utilization(runs, out / "utilization.png"),
    ]
