"""Expanding a workload into its seeded, immutable list of submissions."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from workloads.expand import expand
from workloads.spec import Category, Mix, TasksJob, TpchJob, TraceSource, Workload, WordCountJob

WC = Category("wc", "wordcount", 0.7, "in", reduces=2, extra_flops=5, duration_alone_s=10.0)
Q = Category("q", "tpch", 0.3, "db", queries=(3, 6))


def mix_workload(seed: int = 1, jobs: int = 2000, arrival: str = "poisson",
                 categories: tuple[Category, ...] = (WC, Q)) -> Workload:
    return Workload("w", Path("w.toml"), seed, mix=Mix(jobs, arrival, 4.0, categories))


def test_same_seed_same_submissions() -> None:
    assert expand(mix_workload(seed=5)) == expand(mix_workload(seed=5))
    assert expand(mix_workload(seed=5)) != expand(mix_workload(seed=6))


def test_submissions_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        expand(mix_workload())[0].time_s = 3.0  # type: ignore[misc]


def test_poisson_arrivals_have_the_mean_gap() -> None:
    times = np.array([s.time_s for s in expand(mix_workload())])
    assert times[0] == 0.0 and np.all(np.diff(times) >= 0)
    assert np.diff(times).mean() == pytest.approx(4.0, rel=0.1)


def test_fixed_arrivals() -> None:
    assert [s.time_s for s in expand(mix_workload(jobs=3, arrival="fixed"))] == [0.0, 4.0, 8.0]


def test_categories_follow_probabilities_and_carry_parameters() -> None:
    subs = expand(mix_workload())
    wordcounts = [s for s in subs if s.category == "wc"]
    assert len(wordcounts) / len(subs) == pytest.approx(0.7, abs=0.04)
    assert {s.params for s in wordcounts} == {WordCountJob("in", 2, 5)}
    assert {s.duration_alone_s for s in wordcounts} == {10.0}
    queries = {s.params for s in subs if s.category == "q"}
    assert queries == {TpchJob("db", 3), TpchJob("db", 6)}
    assert [s.job_id for s in subs] == list(range(len(subs)))


def test_changing_the_menu_keeps_the_arrivals() -> None:
    other = expand(mix_workload(categories=(dataclasses.replace(WC, probability=0.2),
                                            dataclasses.replace(Q, probability=0.8))))
    assert [s.time_s for s in other] == [s.time_s for s in expand(mix_workload())]


def test_trace_times_and_durations_are_scaled(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("10 2 3 2 4\n30 1 8 8\n40 1 1 1\n")
    workload = Workload("t", tmp_path / "t.toml", 0,
                        trace=TraceSource(trace, time_scale=0.5, task_mode="spin", max_jobs=2))
    first, second = expand(workload)
    assert (first.time_s, first.params, first.duration_alone_s) == (0.0, TasksJob((1.0, 2.0), "spin"), 2.0)
    assert (second.time_s, second.params.kind) == (10.0, "tasks")
