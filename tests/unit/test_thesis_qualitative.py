"""The thesis' qualitative results, at small scale, on the Yahoo-like synthetic trace.

One trace (8000 jobs, shrunk 20x with `shrink`: 200 nodes standing for the thesis' 4000, the
Yahoo high-load point) is simulated once per policy and shared by the assertions.
"""
from __future__ import annotations

from functools import cache

from bridge.apps.experiments_thesis import RunSpec, Summary, Variant, build_jobs, run_one

SCALE, JOBS, NODES = 0.05, 8000, 4000


@cache
def _run(policy: str) -> Summary:
    jobs = build_jobs("yahoo", JOBS, seed=1, scale=SCALE)
    summary = run_one(RunSpec("yahoo", NODES, Variant(policy, policy), seed=1), jobs, SCALE)
    assert summary.stats["unfinished"] == 0
    return summary


def _short(policy: str, p: int) -> float:
    return _run(policy).stats[f"short_p{p}"]


def test_hawk_beats_sparrow_on_short_job_p90_at_high_load() -> None:
    assert _short("hawk", 90) < 0.5 * _short("sparrow", 90)


def test_eagle_beats_hawk_on_short_jobs() -> None:
    assert all(_short("eagle", p) < _short("hawk", p) for p in (50, 90, 99))


def test_eagle_beats_sparrow_on_short_jobs() -> None:
    assert all(_short("eagle", p) < 0.5 * _short("sparrow", p) for p in (90, 99))


def test_kairos_beats_eagle_on_short_jobs_at_high_load_and_pays_in_the_long_tail() -> None:
    assert _short("kairos", 50) < _short("eagle", 50)
    assert _short("kairos", 99) < _short("eagle", 99)
    assert _run("kairos").stats["long_p99"] > _run("eagle").stats["long_p99"]
