"""Synthetic trace generators: published statistics at small scale, seeding, format, CLI errors."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from workloads.synthetic import generate, trace_lines, write_trace
from workloads.synthetic.cli import trace
from workloads.trace import read_trace

# (kind, jobs, published % long jobs, published % long task-seconds, tolerance in points)
PUBLISHED = [
    ("yahoo", 6000, 9.41, 98.31, 1.5),
    ("cloudera", 6000, 5.02, 92.0, 2.5),
    ("facebook", 20000, 2.01, 99.79, 1.0),
    ("google", 6000, 10.00, 83.65, 3.0),
]


@pytest.mark.parametrize(("kind", "jobs", "long_pct", "seconds_pct", "tol"), PUBLISHED)
def test_statistics_match_the_thesis_tables(kind: str, jobs: int, long_pct: float, seconds_pct: float,
                                             tol: float) -> None:
    stats = generate(kind, jobs=jobs, seed=7).stats
    assert stats.pct_long_jobs == pytest.approx(long_pct, abs=tol)
    assert stats.pct_long_task_seconds == pytest.approx(seconds_pct, abs=tol)


def test_google_like_long_jobs_hold_about_a_quarter_of_the_tasks() -> None:
    assert 20 < generate("google", jobs=6000, seed=7).stats.pct_long_tasks < 32


def test_hawk_motivation_workload_is_exact() -> None:
    jobs = generate("hawk-motivation", seed=1).jobs
    shapes = sorted({(len(j.durations), j.durations[0]) for j in jobs})
    assert shapes == [(100, 100.0), (1000, 20000.0)]
    assert sum(len(j.durations) == 1000 for j in jobs) == 50


def test_kairos_categories_and_runtime_alone() -> None:
    jobs = generate("kairos", jobs=400, seed=2).jobs
    assert {len(j.durations) for j in jobs} <= {15, 30, 112, 224}
    long_jobs = [j for j in jobs if len(j.durations) == 224]
    assert long_jobs and long_jobs[0].durations[0] == pytest.approx(1175.0 / 2)


def test_load_sets_the_arrival_rate_without_changing_jobs() -> None:
    low = generate("yahoo", jobs=800, seed=3, load=0.5, nodes=400)
    high = generate("yahoo", jobs=800, seed=3, load=1.0, nodes=400)
    assert [j.durations for j in low.jobs] == [j.durations for j in high.jobs]
    assert low.stats.offered_load == pytest.approx(0.5, rel=0.1)
    assert high.stats.offered_load == pytest.approx(1.0, rel=0.1)


def test_same_seed_same_trace_other_seed_other_trace() -> None:
    first = list(trace_lines(generate("cloudera", jobs=200, seed=5).jobs))
    assert first == list(trace_lines(generate("cloudera", jobs=200, seed=5).jobs))
    assert first != list(trace_lines(generate("cloudera", jobs=200, seed=6).jobs))


def test_written_lines_follow_the_thesis_format(tmp_path: Path) -> None:
    generated = generate("yahoo", jobs=50, seed=1)
    out = tmp_path / "t.txt"
    write_trace(generated.jobs, out)
    lines = out.read_text().splitlines()
    assert len(lines) == 50
    submits = []
    for line in lines:
        fields = [float(x) for x in line.split()]
        n = int(fields[1])
        assert len(fields) == 3 + n
        assert all(d > 0 for d in fields[3:])
        assert fields[2] == pytest.approx(sum(fields[3:]) / n, abs=1e-5)
        submits.append(fields[0])
    assert submits == sorted(submits)


def test_cli_prints_statistics_and_refuses_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "g.txt"
    ok = runner.invoke(trace, ["generate", "google", "--jobs", "100", "--seed", "1", "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "long jobs=" in ok.output and "long task-seconds=" in ok.output
    assert len(read_trace(out)) == 100
    bad = runner.invoke(trace, ["generate", "google", "--load", "0", "--out", str(tmp_path / "x")])
    assert bad.exit_code != 0 and "--load" in bad.output
    unknown = runner.invoke(trace, ["generate", "nope", "--out", str(tmp_path / "y")])
    assert unknown.exit_code != 0 and "yahoo" in unknown.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_help_lists_every_kind() -> None:
    from workloads.synthetic import KINDS

    output = CliRunner().invoke(trace, ["generate", "--help"]).output
    assert all(kind in output for kind in KINDS)
