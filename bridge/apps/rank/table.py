"""`rank`'s table: each policy's runs over the seeds summed up (mean and spread), ranked with ties.

**Ties.** Two policies tie on a measure when their means differ by at most the relative tolerance
(``--tie-tolerance``, of the larger magnitude) or, with several seeds, by at most the sum of their
standard deviations over the seeds (their mean ± std bands overlap): a difference the seeds
themselves produce is not a win. A policy's rank on a measure is 1 + the number of policies
better than it beyond a tie (a missing value: beaten by every value, tied with the other missing
ones); its score is the mean of its ranks over the measures some policy has a value for. Policies
with the same score share a rank ("2="), those that left jobs unfinished after those that did not.

**Digits.** A figure over several seeds is printed to the first significant digit of its standard
deviation (``0.971 ±0.003``, ``1230 ±40``); a single run's figure, or one every seed gives alike,
to 3 significant digits (``bridge.common.tables``): a 1% tolerance makes further digits noise.
Never more than 4 significant digits: seeds that differ by float noise show ``±0.0000``.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bridge.apps.rank.runs import MEASURES, Outcome
from bridge.common import tables

HIGHER_IS_BETTER = {"utilization"}
DEFAULT_TOLERANCE = 0.01
MOST_DIGITS = 4  # significant digits of a mean whose seeds differ by float noise only


@dataclass(frozen=True)
class Figure:
    """One measure of one policy over its seeds: the mean and the sample standard deviation (NaN
    with one seed; seeds without a value, say no long job finished, are left out)."""

    mean: float
    std: float = math.nan

    @classmethod
    def of(cls, values: Sequence[float]) -> Figure:
        known = [v for v in values if not math.isnan(v)]
        if not known:
            return cls(math.nan)
        return cls(statistics.fmean(known), statistics.stdev(known) if len(known) > 1 else math.nan)

    @property
    def spread(self) -> float:
        """The standard deviation, 0 where there is none (one seed)."""
        return 0.0 if math.isnan(self.std) else self.std

    def text(self) -> str:
        """The figure to its meaningful digits (module docstring)."""
        if math.isnan(self.mean):
            return "-"
        if math.isnan(self.std):
            return tables.cell(self.mean)
        if self.std == 0:
            return f"{tables.cell(self.mean)} ±0"
        decimals = min(-math.floor(math.log10(self.std)), MOST_DIGITS - 1 - _magnitude(self.mean))
        std = round(self.std, decimals)
        if std >= 10.0 ** (1 - decimals):  # 0.0096 rounds to 0.01: one digit fewer
            decimals -= 1
        return f"{_fixed(self.mean, decimals)} ±{_fixed(self.std, decimals)}"


def _magnitude(value: float) -> int:
    """The power of ten of ``value``'s first significant digit (0 for 0)."""
    return math.floor(math.log10(abs(value))) if value else 0


def _fixed(value: float, decimals: int) -> str:
    """``value`` rounded to ``decimals`` places (negative: tens, hundreds), without an exponent."""
    return f"{round(value, decimals):.{max(decimals, 0)}f}"


@dataclass(frozen=True)
class Row:
    """One policy: its figures over the seeds that ran, or why it has none."""

    policy: str
    figures: dict[str, Figure] = field(default_factory=dict)
    seeds: int = 0
    unfinished: int = 0  # jobs left unfinished, the most of any seed
    problem: str = ""


def row_of(policy: str, outcomes: Sequence[Outcome]) -> Row:
    """A policy's row from its runs (one per seed): the first problem if any run had one."""
    problems = [o.problem for o in outcomes if o.problem]
    if problems:
        return Row(policy, problem=problems[0])
    figures = {m: Figure.of([o.measures[m] for o in outcomes]) for m, _, _ in MEASURES}
    return Row(policy, figures, len(outcomes), max(o.unfinished for o in outcomes))


def tied(a: Figure, b: Figure, tolerance: float) -> bool:
    """Whether two figures tie (module docstring); two missing values tie, one does not."""
    if math.isnan(a.mean) or math.isnan(b.mean):
        return math.isnan(a.mean) and math.isnan(b.mean)
    return abs(a.mean - b.mean) <= max(tolerance * max(abs(a.mean), abs(b.mean)), a.spread + b.spread)


def _better(a: Figure, b: Figure, measure: str, tolerance: float) -> bool:
    """Whether ``a`` beats ``b`` on ``measure`` beyond a tie."""
    if tied(a, b, tolerance):
        return False
    if math.isnan(b.mean):
        return True
    if math.isnan(a.mean):
        return False
    return a.mean > b.mean if measure in HIGHER_IS_BETTER else a.mean < b.mean


def ranks(figures: Sequence[Figure], measure: str, tolerance: float) -> list[int]:
    """Each figure's rank on ``measure``: 1 + how many others beat it beyond a tie."""
    return [1 + sum(_better(other, mine, measure, tolerance) for other in figures) for mine in figures]


def ranked(rows: Sequence[Row], tolerance: float) -> list[dict[str, object]]:
    """The table's rows, best first (module docstring), each with its rank, score and note; the
    measures no policy has a value for (no long job in the trace, say) are not scored. Rows with
    a problem follow, in name order, ranked "-"."""
    ran = [r for r in rows if not r.problem]
    scored = [m for m, _, _ in MEASURES if any(not math.isnan(r.figures[m].mean) for r in ran)]
    by_measure = {m: ranks([r.figures[m] for r in ran], m, tolerance) for m in scored}
    table: list[dict[str, object]] = []
    for i, r in enumerate(ran):
        score = sum(by_measure[m][i] for m in scored) / len(scored) if scored else math.nan
        note = f"{r.unfinished} jobs unfinished" if r.unfinished else ""
        table.append({"policy": r.policy, "figures": r.figures, "seeds": r.seeds, "score": round(score, 2),
                      "note": note})
    table.sort(key=lambda t: (t["note"] != "", t["score"], t["policy"]))
    for t in table:
        t["rank"] = 1 + sum(_order(o) < _order(t) for o in table)
    for t in table:
        t["tied"] = sum(o["rank"] == t["rank"] for o in table) > 1
    table += [{"rank": "-", "policy": r.policy, "note": r.problem, "tied": False}
              for r in sorted((r for r in rows if r.problem), key=lambda r: r.policy)]
    return table


def _order(row: Mapping[str, object]) -> tuple[bool, float]:
    """What orders the table: the policies that finished every job first, then the score."""
    score = row["score"]
    assert isinstance(score, float)
    return row["note"] != "", score


def csv_rows(table: Sequence[Mapping[str, object]], seeds: int) -> list[dict[str, object]]:
    """The rows of ranking.csv: each measure's mean (and, over several seeds, its standard
    deviation beside it, ``<measure> std``) as numbers; ties are equal ranks."""
    out = []
    for t in table:
        figures = t.get("figures", {})
        assert isinstance(figures, dict)
        row: dict[str, object] = {"rank": t["rank"], "policy": t["policy"]}
        for m, _, _ in MEASURES:
            figure = figures.get(m, Figure(math.nan))
            row[m] = figure.mean
            if seeds > 1:
                row[f"{m} std"] = figure.std
        out.append({**row, "score": t.get("score", math.nan), "note": t["note"]})
    return out


def text_rows(table: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """The rows as the terminal shows them: figures to their meaningful digits, a shared rank
    marked ``=``."""
    out = []
    for t in table:
        figures = t.get("figures", {})
        assert isinstance(figures, dict)
        rank = f"{t['rank']}=" if t["tied"] else str(t["rank"])
        out.append({"rank": rank, "policy": t["policy"], **{m: f.text() for m, f in figures.items()},
                    "score": t.get("score"), "note": t["note"]})
    return out
