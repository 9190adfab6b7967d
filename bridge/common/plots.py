"""The one plot module: every figure the commands write (report, experiments), drawn with matplotlib.

Callers describe what to draw, panels of series (`Panel`, `Series`, `cdf`), and `draw` lays
them out in a grid, one style for all: a light grid, a legend (or, on a panel without data, a
note saying why instead of matplotlib's warning), written atomically so a failed run leaves no
half-written image.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import numpy as np

from bridge.common import atomic

DPI = 110
FORMATS = ("png", "svg", "pdf")  # what a figure may be written as (matplotlib writes each)


@dataclass(frozen=True)
class Series:
    """One line: `step` for step functions (CDFs, sampled utilization); `color` to tie lines
    together (a run's busy and allocated shares), else matplotlib's cycle."""

    label: str
    x: Sequence[float] | np.ndarray
    y: Sequence[float] | np.ndarray
    step: bool = False
    marker: str | None = None
    dashed: bool = False
    color: str | None = None


@dataclass(frozen=True)
class Panel:
    """One axes: its series, labels and scales; `hline` draws a reference (1 = the baseline)."""

    series: Sequence[Series]
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    logx: bool = False
    logy: bool = False
    ylim: tuple[float, float] | None = None
    hline: float | None = None
    empty: str = "no data"


def spans_decades(values: Iterable[float], decades: float = 1.0) -> bool:
    """Whether the positive values range over at least `decades` powers of ten: an axis that a
    linear scale would squeeze into a corner (JCTs of seconds and hours, slowdowns 1 to 1000)."""
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return len(v) > 1 and bool(v.max() >= v.min() * 10 ** decades)


def cdf(label: str, values: Iterable[float]) -> Series:
    """The empirical CDF of `values` (NaNs left out): the fraction of values <= x."""
    xs = np.sort(np.asarray(list(values), dtype=float))
    xs = xs[~np.isnan(xs)]
    return Series(label, xs, np.arange(1, len(xs) + 1) / len(xs) if len(xs) else xs, step=True)


def _line(ax: plt.Axes, s: Series) -> None:
    """`s` on `ax`; a series of one point as a marker, which a line alone would not show (a CDF of
    one job: a step of no width)."""
    marker = s.marker or ("o" if len(s.x) == 1 else None)
    style: dict[str, Any] = {"label": s.label, "marker": marker, "linestyle": "--" if s.dashed else "-",
                             "color": s.color}
    if s.step:
        ax.step(s.x, s.y, where="post", **style)
    else:
        ax.plot(s.x, s.y, **style)


def _panel(ax: plt.Axes, panel: Panel) -> None:
    for s in panel.series:
        if len(s.x):
            _line(ax, s)
    if panel.hline is not None:
        ax.axhline(panel.hline, color="grey", linewidth=0.8)
    ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.ylabel)
    if panel.ylim is not None:
        ax.set_ylim(*panel.ylim)
    if panel.logx:
        ax.set_xscale("log")
    if panel.logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, panel.empty, ha="center", va="center", transform=ax.transAxes)


def draw(rows: Sequence[Sequence[Panel]], path: Path, title: str = "",
         panel_size: tuple[float, float] = (6.0, 4.0), also: Sequence[str] = ()) -> Path:
    """Panels in a grid (a list of rows) into the image `path` (its format by its suffix) and,
    for each format in `also` (svg, pdf: `FORMATS`), the same figure beside it."""
    n_rows, n_cols = len(rows), max(len(r) for r in rows)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(panel_size[0] * n_cols, panel_size[1] * n_rows),
                             squeeze=False)
    for ax_row, panel_row in zip(axes, rows):
        for ax, panel in zip(ax_row, panel_row):
            _panel(ax, panel)
        for ax in ax_row[len(panel_row):]:
            ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, path, also)


def bars(labels: Sequence[str], values: Sequence[float], path: Path, ylabel: str, title: str) -> Path:
    """One bar per label (e.g. every policy's makespan)."""
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.bar(list(labels), list(values))
    ax.set(ylabel=ylabel, title=title)
    ax.tick_params(axis="x", rotation=45)
    return _save(fig, path)


@dataclass(frozen=True)
class Intervals:
    """One measure of many labelled items (the rows of a table): a dot at each mean, a bar over its
    spread (none where NaN); a missing mean leaves its row empty."""

    title: str
    means: Sequence[float]
    spreads: Sequence[float]
    logx: bool = False


def intervals(labels: Sequence[str], panels: Sequence[Intervals], path: Path, title: str,
              columns: int = 3) -> Path:
    """Small multiples, one panel per measure, every label a row of its own (the first at the top)
    in every panel: readable with dozens of labels, with no legend and no colour to tell apart."""
    n_rows = -(-len(panels) // columns)
    height = 0.6 + 0.22 * len(labels)
    fig, axes = plt.subplots(n_rows, columns, figsize=(4.0 * columns, height * n_rows), squeeze=False,
                             sharey=True)
    y = np.arange(len(labels))
    for ax, panel in zip(axes.flat, panels):
        ax.errorbar(np.asarray(panel.means, dtype=float), y, xerr=np.nan_to_num(np.asarray(panel.spreads, dtype=float)),
                    fmt="o", markersize=3, capsize=2)
        ax.set_title(panel.title, fontsize="medium")
        if panel.logx:
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    axes[0][0].set_yticks(y, list(labels))  # the panels share their y axis: once for all
    axes[0][0].invert_yaxis()
    for ax in axes[:, 0]:
        ax.tick_params(axis="y", labelsize="small")
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def _save(fig: plt.Figure, path: Path, also: Sequence[str] = ()) -> Path:
    """Write `path` (and `path` in each format of `also`) through a temporary file, so each image
    is either whole or untouched; a missing folder is created (the output options accept one)."""
    fig.tight_layout()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target in (path, *(path.with_suffix(f".{fmt}") for fmt in also)):
            with atomic.replacing(target) as temp:
                fig.savefig(temp, dpi=DPI, bbox_inches="tight", format=target.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    return path
