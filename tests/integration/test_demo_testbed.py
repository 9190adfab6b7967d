"""`schedbridge demo` on the real local testbed, its three comparisons at a reduced size (the
shared `demo_run`: Spark's FAIR scheduler vs Eagle on a small sleeping-task trace, FIFO vs Kairos `--preempt`
on a few WordCount jobs, stock Spark vs Hawk on a TPC-H query and WordCount jobs).
Every figure the demo prints, and each reading line, is parsed back and checked against figures
recomputed here with numpy from the runs' own files: the replay's jobs.csv (live) and the
simulator's per-job file (predicted)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.integration.demo_run import MISSION, PLACEMENT, PREEMPTION, DemoRun, live_figures, sim_figures

# make test-long: the shared demo run is six Spark applications (7-8 min of make test's 20)
pytestmark = [pytest.mark.integration, pytest.mark.long]

COMPARISONS = [("placement", PLACEMENT, ("short", "p90")), ("preemption", PREEMPTION, ("short", "p50")),
               ("mission", MISSION, ("short", "p50"))]


def _number(text: str) -> float:
    return math.nan if text == "-" else float(text)


def _printed_rows(stdout: str, title: str, policies: int) -> list[list[str]]:
    """The rows of the figures table printed under `title` (a short and a long row per policy)."""
    block = stdout.split(title, 1)[1].splitlines()
    assert block[1].startswith("simulated durations: ") and block[2].split()[:3] == ["policy", "class", "jobs"]
    return [line.split() for line in block[3:3 + 2 * policies]]


def _close(printed: float, expected: float) -> bool:
    """A printed figure (3 significant digits) against the recomputed one."""
    if math.isnan(expected):
        return math.isnan(printed)
    return math.isclose(printed, expected, rel_tol=6e-3, abs_tol=1e-9)


def _times(value: float, base: float) -> tuple[float, str]:
    return (base / value, "lower") if value <= base else (value / base, "higher")


@pytest.mark.parametrize(("name", "policies", "reading"), COMPARISONS)
def test_printed_figures_are_the_runs_figures(demo_run: DemoRun, name: str, policies: tuple[str, str],
                                              reading: tuple[str, str]) -> None:
    rows = _printed_rows(demo_run.stdout, f"{name}, small (", len(policies))
    assert [(row[0], row[1]) for row in rows] == [(p, c) for p in policies for c in ("short", "long")]
    figures = {p: (live_figures(demo_run, name, p), sim_figures(demo_run, name, p)) for p in policies}
    for policy, cls, jobs, *cells in rows:
        live, sim = figures[policy][0][cls], figures[policy][1][cls]
        assert int(jobs) == live["count"] == sim["count"], (policy, cls)
        for stat, (l_cell, s_cell, r_cell) in zip(("p50", "p90"), (cells[0:3], cells[3:6])):
            expected = (live[stat], sim[stat], live[stat] / sim[stat])
            got = tuple(_number(c) for c in (l_cell, s_cell, r_cell))
            assert all(_close(g, e) for g, e in zip(got, expected)), (policy, cls, stat, got, expected)
    cls, stat = reading
    base = figures[policies[0]]
    for policy in policies[1:]:   # each against the first, live and predicted
        other = figures[policy]
        (lx, lway), (sx, sway) = (_times(other[side][cls][stat], base[side][cls][stat]) for side in (0, 1))
        assert (f"reading: {policy}'s {cls}-job {stat} is {lx:.2g}x {lway} than {policies[0]}'s live "
                in demo_run.stdout), demo_run.stdout
        assert f"; the simulator predicted {sx:.2g}x {sway} (" in demo_run.stdout
    plot = demo_run.out / name / "jct_cdf.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"plot: {plot}" in demo_run.stdout


def test_the_summary_is_what_was_printed_in_plan_order(demo_run: DemoRun) -> None:
    assert (demo_run.out / "summary.txt").read_text().strip() == demo_run.stdout.strip()
    assert all(f"demo: [{i}/3] {name}" in demo_run.stderr
               for i, name in enumerate(("placement", "preemption", "mission"), 1)), demo_run.stderr
    assert demo_run.stdout.index("placement, small (") < demo_run.stdout.index("preemption, small (") < \
        demo_run.stdout.index("mission, small (")


@pytest.mark.parametrize(("name", "policies"), [("preemption", PREEMPTION), ("mission", MISSION)])
def test_every_answer_under_every_policy_is_correct(demo_run: DemoRun, name: str, policies: tuple[str, ...]) -> None:
    """The replays checked each WordCount's counts and each TPC-H query's rows (against DuckDB),
    whoever placed or preempted their tasks: one verdict per job, all correct."""
    for policy in policies:
        live = demo_run.live_dir(name, policy)
        verdicts = pd.read_csv(live / "answers.csv")
        assert verdicts["job_id"].tolist() == pd.read_csv(live / "jobs.csv")["job_id"].tolist()
        assert (verdicts["answer"] == "correct").all(), (policy, verdicts)
        assert demo_run.run(name, policy)["answers"]["correct"] == len(verdicts)
