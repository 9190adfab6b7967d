"""bridge.common.metrics on hand-built tables (the same functions serve live-cluster results)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from bridge.common.metrics import (
    completion_summary,
    fraction_at_least_as_good,
    head_of_line,
    mean_utilization,
    median,
    normalized,
    percentile,
    preemptions,
    share_not_worse,
    summarize,
    utilization_series,
    with_completion,
)
from bridge.sim.engine import simulate
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import create
from workloads.model import Job


def _jobs(finish):
    return pd.DataFrame({
        "job_id": [0, 1, 2, 3], "submit": [0.0, 0.0, 10.0, 10.0], "finish": finish,
        "n_tasks": [1, 1, 1, 1], "mean_duration": [1.0, 2.0, 100.0, 200.0], "ideal": [1.0, 2.0, 100.0, 200.0],
    })


def test_percentile_interpolates_linearly_between_closest_ranks():
    """The one definition, checked by hand: sorted 15 20 35 40 50, h = (n - 1) p / 100."""
    values = [50.0, 15.0, 40.0, 20.0, 35.0]                        # unsorted on purpose
    assert percentile(values, 0) == 15.0 and percentile(values, 100) == 50.0
    assert percentile(values, 40) == pytest.approx(29.0)           # h 1.6: 20 + 0.6 x (35 - 20)
    assert percentile(values, 50) == 35.0                          # h 2: a value itself
    assert percentile(values, 90) == pytest.approx(46.0)           # h 3.6: 40 + 0.6 x 10 (nearest rank: 50)
    assert percentile(values, 99) == pytest.approx(49.6)           # h 3.96
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5                     # even count: the middle pair's mean
    assert percentile([7.0, math.nan], 99) == 7.0                  # NaN (unfinished) left out
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError, match="within"):
        percentile(values, 101)


def test_share_not_worse_matches_jobs_by_id():
    assert share_not_worse({1: 4.0, 2: 9.5, 3: 1.0}, {1: 5.0, 2: 9.0}) == 0.5
    assert math.isnan(share_not_worse({1: 4.0}, {2: 5.0}))


def test_reporting_cutoff_splits_classes_and_percentiles():
    j = with_completion(_jobs([2.0, 4.0, 210.0, 410.0]), cutoff=50)
    assert list(j["cls"]) == ["short", "short", "long", "long"]
    assert list(j["jct"]) == [2.0, 4.0, 200.0, 400.0]
    assert list(j["slowdown"]) == [2.0, 2.0, 2.0, 2.0]
    s = completion_summary(j, 50)
    assert s["short"]["count"] == 2 and s["short"]["p50"] == pytest.approx(3.0)
    assert s["long"]["p90"] == pytest.approx(380.0) and s["long"]["max"] == 400.0


def test_unfinished_jobs_are_excluded_from_percentiles():
    s = completion_summary(_jobs([2.0, math.nan, 210.0, 410.0]), 50)
    assert s["short"]["count"] == 1 and s["short"]["p99"] == 2.0


def test_normalized_and_fraction_better():
    a = completion_summary(_jobs([2.0, 4.0, 210.0, 410.0]), 50)
    b = completion_summary(_jobs([4.0, 8.0, 210.0, 410.0]), 50)
    r = normalized(a, b)
    assert r["short"]["p50"] == pytest.approx(0.5) and r["long"]["p50"] == pytest.approx(1.0)
    f = fraction_at_least_as_good(_jobs([2.0, 9.0, 210.0, 400.0]), _jobs([4.0, 8.0, 210.0, 410.0]), 50)
    assert f == {"short": 0.5, "long": 1.0}


def test_utilization_series_and_mean():
    tasks = pd.DataFrame({"start": [0.0, 0.0, 50.0], "end": [100.0, 50.0, 150.0], "done": [True, True, True],
                          "job_id": [0, 1, 2], "task": [0, 0, 0]})
    u = utilization_series(tasks, n_slots=2, interval=50.0)
    assert list(u["time"]) == [0.0, 50.0, 100.0, 150.0]
    assert list(u["busy_slots"]) == [2, 2, 1, 0]
    assert mean_utilization(tasks, 2) == pytest.approx(250.0 / 300.0)


def test_preemptions_and_hol():
    tasks = pd.DataFrame({"job_id": [0, 0, 0], "task": [0, 0, 1], "start": [0.0, 2.0, 0.0],
                          "end": [1.0, 3.0, 1.0], "done": [False, True, True]})
    assert preemptions(tasks) == {"suspensions": 1, "tasks_preempted": 1}
    assert head_of_line({"probes_behind_long": 3, "stolen_entries": 2, "rejected_probes": 1}) == {
        "probes_behind_long": 3, "short_tasks_after_long": 0, "rescheduled_probes": 3}


def test_summary_from_a_simulation_is_consistent():
    jobs = [Job(0, 0.0, (1.0, 1.0)), Job(1, 0.0, (50.0,))]
    spec = ClusterSpec(2)
    r = simulate(jobs, create("fifo", PolicyEnv(spec, 1)), spec)
    s = summarize(r.job_table(), r.task_table(), cutoff=10, n_slots=2, counters=r.log.counters)
    assert s["jobs"] == 2 and s["tasks"] == 3 and s["finished_jobs"] == 2
    assert s["jct"]["short"]["count"] == 1 and s["jct"]["long"]["count"] == 1
    assert s["jct"]["long"]["p50"] == pytest.approx(r.log.job_finish[1])
    assert 0 < s["utilization"] <= 1
