"""`--offered-load` and `--interarrival` without a cluster: the rate fitted from a stock run's
measured work, the mix at another rate, and the mistakes each refuses before any cluster use."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.simlive import session
from bridge.apps.simlive.compare import CompareError
from bridge.apps.simlive.offered_load import Measured, interarrival_for, next_interarrival
from bridge.apps.simlive.session import Comparison
from bridge.cli import main as cli
from tests.unit.test_simlive import wordcount_workload
from workloads.expand import expand
from workloads.workload_file import WorkloadFileError, at_interarrival, load_workload

TRACE = Path(__file__).resolve().parents[2] / "workloads" / "examples" / "trace-tiny.toml"


def test_the_interarrival_offers_the_load_asked() -> None:
    """288 slot-seconds of 24 jobs on 4 slots: one job every 3.53 s offers 0.85 (the study's aim)."""
    seconds = interarrival_for(288.0, 4, 24, 0.85)
    assert seconds == pytest.approx(288 / (4 * 24 * 0.85))
    assert Measured(seconds, 288.0).offered(4, 24) == pytest.approx(0.85)
    assert Measured(1.5, 288.0).offered(4, 24) == pytest.approx(2.0)  # twice the slots' time: overload


@pytest.mark.parametrize(("work", "slots", "jobs", "load"), [(0.0, 4, 24, 0.85), (float("nan"), 4, 24, 0.85),
                                                              (10.0, 0, 24, 0.85), (10.0, 4, 24, 1.5)])
def test_an_unmeasured_run_or_an_impossible_load_is_refused(work: float, slots: int, jobs: int, load: float) -> None:
    with pytest.raises(ValueError):
        interarrival_for(work, slots, jobs, load)


def test_a_mix_at_another_rate_keeps_its_jobs_and_order(tmp_path: Path) -> None:
    workload = load_workload(wordcount_workload(tmp_path))
    before, after = expand(workload), expand(at_interarrival(workload, 2.5))
    assert [s.time_s for s in after] == [0.0, 2.5]
    assert [(s.category, s.params) for s in after] == [(s.category, s.params) for s in before]


def test_a_poisson_mix_scales_its_gaps_with_the_same_draws(tmp_path: Path) -> None:
    path = wordcount_workload(tmp_path)
    path.write_text(path.read_text().replace('"fixed"', '"poisson"').replace("jobs = 2", "jobs = 6"))
    workload = load_workload(path)
    slow, fast = expand(at_interarrival(workload, 4.0)), expand(at_interarrival(workload, 2.0))
    assert [s.time_s for s in slow] == pytest.approx([2 * s.time_s for s in fast], abs=1e-5)


def test_a_trace_has_no_rate_to_set() -> None:
    with pytest.raises(WorkloadFileError, match="trace-tiny.toml: mean_interarrival_s: a trace workload's arrivals"):
        at_interarrival(load_workload(TRACE), 2.0)


def _complete(live: Path, work: list[float]) -> Path:
    """A complete stock run whose tasks held their slots for ``work`` seconds each."""
    live.mkdir(parents=True)
    pd.DataFrame({"job_id": range(len(work)), "launch_s": 0.0, "finish_s": work,
                  "container_id": "c"}).to_csv(live / "tasks.csv", index=False)
    (live / "meta.json").write_text(json.dumps({"t0_epoch": 0.0, "state": "complete"}))
    return live


def test_fit_load_measures_again_until_a_run_offers_the_load(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Work that shrinks as the rate slows (10 - s slot-seconds at one job every s seconds), 2 jobs on
    1 x 2 slots, aim 0.5: at the file's 1 s it offers 2.25; the rate its work calls for (4.5 s)
    offers 0.31; the secant through both (10/3 s) offers 0.5 and is kept. Every later replay is told
    that rate, and the jobs move."""
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock", "hawk"], 1, 2, None, None, {}, False, None)
    replayed: list[tuple[str, Path, float]] = []

    def replay(policy: str, seed: int, results: Path, estimates: Path | None = None) -> Path:
        assert comparison.interarrival is not None
        replayed.append((policy, results, comparison.interarrival))
        return _complete(results, [10.0 - comparison.interarrival])

    monkeypatch.setattr(comparison, "_replay", replay)
    out = tmp_path / "out"
    assert comparison.fit_load(0.5, out) == pytest.approx(10 / 3)
    assert [(p, r.name) for p, r, _ in replayed] == [("stock", "live-1"), ("stock", "live-2"), ("stock", "live-3")]
    assert [rate for *_, rate in replayed] == pytest.approx([1.0, 4.5, 10 / 3])
    fit = json.loads((out / "offered-load" / "fit.json").read_text())
    assert [r["offered"] for r in fit["runs"]] == pytest.approx([2.25, 5.5 / 18, 0.5])
    assert fit["measured_at_that_rate"] is True and fit["interarrival_s"] == pytest.approx(10 / 3)
    assert [s.time_s for s in comparison.submissions] == pytest.approx([0.0, 10 / 3], abs=1e-6)
    assert comparison.arrivals.startswith("one job every 3.33 s on average, fitted to offer 0.5 of the slots' "
                                          "time (3 stock run(s), measured there;")
    commands: list[list[str]] = []
    monkeypatch.setattr(session.subprocess, "Popen",
                        lambda command, **kwargs: commands.append(command) or SimpleNamespace(wait=lambda: 0, pid=-1))
    with pytest.raises(CompareError):
        Comparison._replay(comparison, "hawk", 1, tmp_path / "hawk")
    assert float(commands[0][commands[0].index("--interarrival") + 1]) == pytest.approx(10 / 3)


def test_a_fit_starts_from_the_interarrival_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--interarrival 4 --offered-load 0.5`: the first stock run is at 4 s, not the file's 1 s (a
    host whose rate is known from an earlier fit needs one run to confirm it)."""
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock"], 1, 2, None, None, {}, False, None,
                                    interarrival=4.0)
    rates: list[float | None] = []
    monkeypatch.setattr(comparison, "_replay", lambda policy, seed, results, estimates=None:
                        rates.append(comparison.interarrival) or _complete(results, [8.0]))
    assert comparison.fit_load(0.5, tmp_path / "out") == 4.0 and rates == [4.0]


def test_a_fit_that_does_not_converge_says_so_and_keeps_its_last_call(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One run allowed: 8 slot-seconds at 1 s offer 2.0; the rate they call for (4 s) is not measured."""
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock"], 1, 2, None, None, {}, False, None)
    monkeypatch.setattr(comparison, "_replay", lambda policy, seed, results, estimates=None: _complete(results, [8.0]))
    assert comparison.fit_load(0.5, tmp_path / "out", runs=1) == pytest.approx(4.0)
    fit = json.loads((tmp_path / "out" / "offered-load" / "fit.json").read_text())
    assert fit["measured_at_that_rate"] is False and fit["runs"] == [{"interarrival_s": 1.0, "work_s": 8.0,
                                                                     "offered": 2.0}]
    assert "not within 0.05 in 1 runs: the last call" in comparison.arrivals


def test_the_run_that_offered_the_load_is_stocks_first_repeat(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The fit's last run ran stock at the fitted rate and seed: stock's first repeat is a copy of it,
    not a run of its own; stock's second repeat (the next seed) and every other policy run."""
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock", "hawk"], 1, 2, None, None, {}, False, None)
    replayed: list[tuple[str, str]] = []

    def replay(policy: str, seed: int, results: Path, estimates: Path | None = None) -> Path:
        replayed.append((policy, results.parent.name))
        return _complete(results, [2.0])

    monkeypatch.setattr(comparison, "_replay", replay)
    out = tmp_path / "out"
    comparison.fit_load(0.5, out)                    # 2 slot-seconds at 1 s on 2 slots, 2 jobs: 0.5
    assert replayed == [("stock", "offered-load")]
    first = comparison._live("stock", comparison.seed_of(1), out / "stock" / "repeat-1", 1)
    assert first == out / "stock" / "repeat-1" / "live" and (first / "tasks.csv").read_text() == (
        out / "offered-load" / "live-1" / "tasks.csv").read_text()
    comparison._live("stock", comparison.seed_of(2), out / "stock" / "repeat-2", 2)
    comparison._live("hawk", comparison.seed_of(1), out / "hawk" / "repeat-1", 1)
    assert replayed[1:] == [("stock", "repeat-2"), ("hawk", "repeat-1")]


def test_a_fit_that_missed_the_load_runs_stock_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fit whose last run did not offer the load ran at another rate than the one kept: no copy."""
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock"], 1, 2, None, None, {}, False, None)
    replayed: list[str] = []
    monkeypatch.setattr(comparison, "_replay", lambda policy, seed, results, estimates=None:
                        replayed.append(results.parent.name) or _complete(results, [8.0]))
    comparison.fit_load(0.5, tmp_path / "out", runs=1)
    comparison._live("stock", comparison.seed_of(1), tmp_path / "out" / "stock" / "repeat-1", 1)
    assert replayed == ["offered-load", "repeat-1"]


@pytest.mark.parametrize(("runs", "expected"), [
    ([Measured(3.0, 525.0)], 525 / (96 * 0.85)),                          # one run: its own call
    ([Measured(3.0, 525.0), Measured(6.43, 382.0)], None),                # the secant (the 2026-12-02 testbed)
    ([Measured(3.0, 300.0), Measured(6.0, 900.0)], 900 / (96 * 0.85)),    # work rising steeper than demand
])
def test_the_next_rate_is_the_secant_of_work_against_the_rate(runs: list[Measured], expected: float | None) -> None:
    got = next_interarrival(runs, 4, 24, 0.85)
    if expected is None:   # where the line through both runs' work meets 81.6 slot-seconds per second
        slope = (382 - 525) / (6.43 - 3.0)
        assert 525 + slope * (got - 3.0) == pytest.approx(4 * 24 * 0.85 * got) and 3.0 < got < 6.43
    else:
        assert got == pytest.approx(expected)


def test_a_run_with_no_task_measured_names_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock"], 1, 2, None, None, {}, False, None)
    monkeypatch.setattr(comparison, "_replay", lambda policy, seed, results, estimates=None: _complete(results, []))
    with pytest.raises(CompareError, match=r"offered-load/live-1: the measured work is 0.0 slot-seconds"):
        comparison.fit_load(0.85, tmp_path / "out")


def test_a_trace_comparison_refuses_an_offered_load(tmp_path: Path) -> None:
    comparison = Comparison.prepare(TRACE, ["stock"], 1, 2, None, None, {}, False, None)
    with pytest.raises(CompareError, match="--offered-load: a job mix only"):
        comparison.fit_load(0.85, tmp_path)


@pytest.mark.parametrize(("extra", "message"), [
    (["--offered-load", "1.5"], "--offered-load"),
    (["--interarrival", "0"], "--interarrival"),
])
def test_sim_vs_live_refuses_a_rate_mistake_before_any_cluster_use(tmp_path: Path, extra: list[str],
                                                                  message: str) -> None:
    result = CliRunner().invoke(cli, ["sim-vs-live", str(wordcount_workload(tmp_path)), "--policy", "stock",
                                      "--out", str(tmp_path / "out"), *extra])
    assert result.exit_code == 2 and message in result.output and not (tmp_path / "out").exists(), result.output


def test_replay_at_another_rate_of_a_trace_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["replay", str(TRACE), "--policy", "stock", "--interarrival", "2",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "a trace workload's arrivals are the trace's" in result.output, result.output
    assert "Traceback" not in result.output
