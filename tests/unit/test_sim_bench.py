"""The simulator benchmark's fixed traces (figures are reported, never asserted)."""
import pytest

from bridge.sim.bench import run_one, trace_jobs
from workloads.synthetic import generate, get_kind


def test_traces_come_from_the_trace_generator_seeded():
    google = trace_jobs("google", 40)
    assert len(google) == 40 and [j.job_id for j in google] == list(range(40))
    assert all(j.submit >= 0 and j.n_tasks >= 1 for j in google)
    assert trace_jobs("google", 40) == google                                   # seeded
    assert trace_jobs("google", 40, load=0.1) == google                         # native arrival rate
    yahoo = trace_jobs("yahoo", 30, nodes=20, load=0.5)
    assert [j.durations for j in yahoo] == [j.durations for j in generate("yahoo", jobs=30, seed=1).jobs]
    offered = sum(j.work for j in yahoo) / (20 * yahoo[-1].submit)
    assert offered == pytest.approx(0.5, rel=0.5)                               # the load sets the rate
    assert trace_jobs("yahoo", 30, nodes=20, load=1.0)[-1].submit < yahoo[-1].submit
    assert get_kind("yahoo").default_jobs == 24_262                             # the full trace by default


def test_run_one_reports_the_figures():
    row = run_one("hawk", trace_jobs("yahoo", 30, nodes=20), 20, settings={"cutoff": 50.0})
    assert row["unfinished"] == 0 and row["events"] > 0 and row["peak_rss_mb"] > 0


def test_side_by_side_runs_each_tree_and_checks_the_percentiles(tmp_path):
    """`bench sim --baseline`: the child imports the tree it is given (here this tree twice, the
    new side with a link to the old side's policies), and the percentile check flags a change."""
    from pathlib import Path

    from bridge.sim.sidebyside import Side, compare, differing_policy_files, percentile_check, policies_only

    here = Path(__file__).resolve().parents[2]
    link = tmp_path / "pol"
    link.mkdir()
    rows = compare((Side("old", here), Side("new", here, policies_only(here, link))), ["sparrow"],
                   40, 20, 0.9, "yahoo", 1, 0.05, lambda line: None)
    (row,) = rows
    assert row["percentiles_ok"] and row["percentiles_worst_rel_diff"] == 0.0
    assert row["old_events"] == row["new_events"] > 0 and row["old_peak_rss_mb"] > 0
    assert row["new_code"][1].startswith(str(link)) and row["old_code"][1].startswith(str(here))
    moved = {"jct": {c: dict(row["old_jct"][c]) for c in ("short", "long")}}
    moved["jct"]["long"]["p90"] *= 1.06
    worst, over = percentile_check({"jct": row["old_jct"]}, moved, 0.05)
    assert worst == pytest.approx(0.06) and len(over) == 1 and over[0].startswith("long p90")
    assert differing_policy_files(here, here) == []


def test_the_side_by_side_child_measures_without_pandas_and_names_its_core():
    """Its peak RSS is the simulation's: the percentiles come from numpy, pandas is never
    imported; and it says whether the compiled core ran."""
    from pathlib import Path

    from bridge.sim.sidebyside import Side, run_child
    from policies.compiled import check

    here = Path(__file__).resolve().parents[2]
    row = run_child(Side("new", here), "kairos", 40, 20, 0.9, "yahoo")
    assert row["pandas"] is False and row["unfinished"] == 0
    files, reason = check()
    assert row["core"].startswith("simulator core: compiled") if files else row["core"].endswith(f"({reason})")
