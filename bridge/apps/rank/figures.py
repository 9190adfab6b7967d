"""`rank`'s figures, readable with every registered policy (22 and more):

* ``measures.png``: small multiples, one panel per measure, every policy that ran a row of its own
  in table order (the best at the top), a dot at its mean and a bar over mean ± std across seeds;
  no legend, no colours to tell apart.
* ``jct_cdf.png``: the short and long jobs' JCT CDFs (every seed's jobs together) of the best
  ``top`` policies only, each in a colour of its own (at most 10: matplotlib's ``tab10``), the
  rest in the table and in ``measures.png``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from bridge.apps.rank.runs import MEASURES, Outcome
from bridge.apps.rank.table import Figure

MOST_LINES = 10  # distinct colours of tab10


def plot_measures(table: Sequence[Mapping[str, object]], path: Path, title: str) -> Path:
    """``measures.png`` (module docstring) of the table's ranked rows."""
    from bridge.common import plots  # matplotlib: loaded when a ranking is drawn, not for --help

    ran = [t for t in table if isinstance(t.get("figures"), dict)]
    figures: list[dict[str, Figure]] = [t["figures"] for t in ran]  # type: ignore[misc]
    panels = []
    for measure, _, _ in MEASURES:
        means = [f[measure].mean for f in figures]
        if all(math.isnan(m) for m in means):
            continue
        panels.append(plots.Intervals(measure, means, [f[measure].std for f in figures],
                                      logx=plots.spans_decades(means) and measure != "utilization"))
    labels = [f"{t['rank']}{'=' if t['tied'] else ''} {t['policy']}" for t in ran]
    return plots.intervals(labels, panels, path, title)


def plot_cdfs(outcomes: Mapping[str, Sequence[Outcome]], order: Sequence[str], top: int, path: Path,
              title: str) -> Path:
    """``jct_cdf.png`` (module docstring): ``order``'s first ``top`` policies, each one's runs'
    JCTs pooled; marked where a policy has few jobs, so that one job is a visible point."""
    from dataclasses import replace

    from bridge.common import plots

    shown = list(order[:min(top, MOST_LINES)])
    colours = {policy: f"C{i}" for i, policy in enumerate(shown)}
    pooled = {p: {cls: [t for o in outcomes[p] for t in o.jct.get(cls, ())] for cls in ("short", "long")}
              for p in shown}
    panels = []
    for cls in ("short", "long"):
        series = [replace(plots.cdf(p, pooled[p][cls]), color=colours[p],
                          marker="o" if len(pooled[p][cls]) < 20 else None) for p in shown if pooled[p][cls]]
        panels.append(plots.Panel(series, title=f"{cls} jobs", xlabel="job completion time (s)",
                                  ylabel="fraction of jobs",
                                  logx=plots.spans_decades(t for p in shown for t in pooled[p][cls]),
                                  empty=f"no {cls} job finished"))
    rest = len(order) - len(shown)
    note = f"; the best {len(shown)} of {len(order)} (the others: measures.png, ranking.csv)" if rest else ""
    return plots.draw([panels], path, title=title + note)
