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
from bridge.apps.simlive.offered_load import interarrival_for, offered
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
    assert offered(288.0, 4, 24, seconds) == pytest.approx(0.85)
    assert offered(288.0, 4, 24, 1.5) == pytest.approx(2.0)  # twice the slots' time: overload


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


def test_fit_load_runs_stock_once_and_sets_every_later_runs_rate(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """2 jobs of 6 + 2 slot-seconds on 1 x 2 slots at load 0.5: one job every 4 s; the fit run is
    stock's at the file's rate, every later replay is told the new rate, and the jobs move."""
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock", "hawk"], 1, 2, None, None, {}, False, None)
    replayed: list[tuple[str, Path]] = []

    def replay(policy: str, seed: int, results: Path, estimates: Path | None = None) -> Path:
        replayed.append((policy, results))
        return _complete(results, [6.0, 2.0])

    monkeypatch.setattr(comparison, "_replay", replay)
    assert comparison.fit_load(0.5, tmp_path / "out") == pytest.approx(4.0)
    assert replayed == [("stock", tmp_path / "out" / "offered-load" / "live")]
    fit = json.loads((tmp_path / "out" / "offered-load" / "fit.json").read_text())
    assert fit == {"load": 0.5, "work_s": 8.0, "slots": 2, "jobs": 2, "measured_at_interarrival_s": 1.0,
                   "offered_there": 2.0, "interarrival_s": 4.0}
    assert [s.time_s for s in comparison.submissions] == [0.0, 4.0]
    assert comparison.arrivals.startswith("one job every 4 s on average, offering 0.5 of the slots' time: stock's "
                                          "run at 1 s measured 8 slot-seconds")
    commands: list[list[str]] = []
    monkeypatch.setattr(session.subprocess, "Popen",
                        lambda command, **kwargs: commands.append(command) or SimpleNamespace(wait=lambda: 0, pid=-1))
    with pytest.raises(CompareError):
        Comparison._replay(comparison, "hawk", 1, tmp_path / "hawk")
    assert commands[0][commands[0].index("--interarrival") + 1] == "4.0"


def test_a_run_with_no_task_measured_names_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock"], 1, 2, None, None, {}, False, None)
    monkeypatch.setattr(comparison, "_replay", lambda policy, seed, results, estimates=None: _complete(results, []))
    with pytest.raises(CompareError, match=r"offered-load/live: the measured work is 0.0 slot-seconds"):
        comparison.fit_load(0.85, tmp_path / "out")


def test_a_trace_comparison_refuses_an_offered_load(tmp_path: Path) -> None:
    comparison = Comparison.prepare(TRACE, ["stock"], 1, 2, None, None, {}, False, None)
    with pytest.raises(CompareError, match="--offered-load: a job mix only"):
        comparison.fit_load(0.85, tmp_path)


@pytest.mark.parametrize(("extra", "message"), [
    (["--interarrival", "2", "--offered-load", "0.8"], "give the rate (--interarrival) or the load"),
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
