"""Thesis experiment plumbing: trace shrinking, normalization, the CLI's --scale, an end-to-end run."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.apps.experiments import experiment
from bridge.apps.experiments_thesis import Summary, ratios
from workloads.synthetic import generate, trace_stats
from workloads.synthetic.scaling import shrink


def test_shrink_keeps_estimates_and_offered_load() -> None:
    jobs = generate("yahoo", jobs=400, seed=3).jobs
    small = shrink(jobs, 0.1)
    assert [j.mean_duration for j in small] == [j.mean_duration for j in jobs]
    assert all(len(s.durations) == max(1, -(-len(j.durations) // 10)) for s, j in zip(small, jobs))
    assert trace_stats(small, 90.5811, 400).offered_load == pytest.approx(
        trace_stats(jobs, 90.5811, 4000).offered_load, rel=1e-9)
    with pytest.raises(ValueError):
        shrink(jobs, 0.0)


def _summary(label: str, seed: int, short_p90: float, jct: dict[int, float]) -> Summary:
    stats = {f"{c}_p{p}": 1.0 for c in ("short", "long") for p in (50, 90, 99)}
    stats.update(short_p90=short_p90, short_mean=1.0, long_mean=1.0)
    return Summary("yahoo", 4000, label, seed, stats, jct, frozenset({2}))


def test_ratios_normalize_per_seed_and_count_jobs_not_worse() -> None:
    rows = [_summary("base", 1, 10.0, {1: 5.0, 2: 9.0}), _summary("new", 1, 5.0, {1: 4.0, 2: 9.5}),
            _summary("base", 2, 20.0, {1: 5.0, 2: 9.0}), _summary("new", 2, 5.0, {1: 6.0, 2: 9.0})]
    (row,) = ratios(rows, "base")
    assert row["short_p90"] == pytest.approx((0.5 + 0.25) / 2)
    assert row["short_better_or_equal"] == pytest.approx(0.5) and row["long_better_or_equal"] == pytest.approx(0.5)


def test_cli_runs_a_tiny_thesis_experiment_and_refuses_scale_elsewhere(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(experiment, ["sparrow-hol", "--scale", "0.01", "--out", str(tmp_path)])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "sparrow-hol" / "sparrow-hol.csv").read_text().startswith("policy,nodes")
    bad = runner.invoke(experiment, ["psychas-load", "--scale", "0.5", "--out", str(tmp_path)])
    assert bad.exit_code != 0 and "does not take --scale" in bad.output


def test_trace_parameters_come_from_the_trace_kind() -> None:
    """Hawk/Eagle/DLWL take the trace's cutoff and long partition on every trace, Kairos its W
    only where the trace sets one (Google); LWL stays centralized although it has a cutoff."""
    from workloads.synthetic import trace_settings

    assert trace_settings("yahoo", "hawk") == {"cutoff": 90.5811, "big_partition": 98}
    assert trace_settings("google", "eagle") == {"cutoff": 1129.532, "big_partition": 83}
    assert trace_settings("google", "dlwl") == {"cutoff": 1129.532, "big_partition": 83}
    assert trace_settings("google", "bigc") == {"cutoff": 1129.532}
    assert trace_settings("google", "kairos") == {"w": 10000.0}
    assert trace_settings("yahoo", "kairos") == {}
    assert trace_settings("google", "lwl") == {}
    assert trace_settings("yahoo", "sparrow") == {}
