"""`schedbridge demo` without a cluster: its plan file (the shipped one and mistakes in one), the
figures and reading lines it prints, and that every mistake stops it before the testbed starts."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bridge.apps.demo import _checked, default_plan, demo, figures_table, load_plan, reading_lines
from bridge.apps.simlive import session
from bridge.apps.simlive.calibration import NONE
from bridge.apps.simlive.compare import Measured
from workloads.workload_file import WorkloadFileError, load_workload

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads" / "examples"
PLACEMENT = f"""
[[comparison]]
name = "placement"
title = "a small placement comparison"
workload = "{EXAMPLES / 'yahoo-demo.toml'}"
policies = ["stock", "eagle"]
executors = 2
executor_cores = 2
"""


def _stats(p50: float, p90: float, count: int = 5) -> dict[str, float]:
    return {"count": count, "p50": p50, "p90": p90, "p99": p90}


def _run(policy: str, live: tuple[float, float], sim: tuple[float, float]) -> Measured:
    long = _stats(100.0, 120.0, 1)
    return Measured(policy, 1, {"short": _stats(*live), "long": long}, {"short": _stats(*sim), "long": long},
                    NONE, Path("live"), Path("sim.csv"))


def test_the_shipped_plan_is_the_interactive_batch_mix_under_three_named_policies_and_stock() -> None:
    (mix,) = load_plan(default_plan())
    assert (mix.name, mix.policies, mix.preempt) == ("mix", ("stock", "hawk", "eagle", "kairos"), True)
    workload = load_workload(mix.workload).mix
    assert workload is not None and {c.kind for c in workload.categories} == {"tpch", "wordcount"}
    assert (mix.executors, mix.executor_cores, mix.extra_vcores) == (4, 1, 0) and mix.job_model == "stages"
    assert mix.estimates_from == "stock" and mix.reading == ("short", "p90") and mix.cutoff == 5.0
    assert mix.offered_load == 0.85
    assert mix.params == {"cutoff": "5", "big_partition": "75", "probe_ratio": "16",
                          "integer_estimates": "false", "q": "2"}


def test_a_comparison_without_job_model_plays_each_stage_as_a_job(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(PLACEMENT + PLACEMENT.replace('name = "placement"', 'name = "other"') + 'job_model = "tasks"\n')
    assert [p.job_model for p in load_plan(path)] == ["stages", "tasks"]


@pytest.mark.parametrize(("text", "message"), [
    (PLACEMENT.replace("executors = 2", "executers = 2"),
     "comparison[1].executors: missing (is 'comparison[1].executers'"),
    (PLACEMENT + "colour = 1\n", "comparison[1].colour: unknown key (known here: cutoff, "),
    (PLACEMENT.replace('["stock", "eagle"]', '["eagle"]'), "comparison[1].policies: expected a list of two"),
    (PLACEMENT + 'reading = "median"\n', "comparison[1].reading: expected 'CLASS STAT'"),
    (PLACEMENT + "preempt = 1\n", "comparison[1].preempt: expected true or false"),
    (PLACEMENT + "offered_load = 1.5\n", "comparison[1].offered_load: a fraction of the slots' time, at most 1"),
    (PLACEMENT + "offered_load = 0\n", "comparison[1].offered_load: must be > 0"),
    (PLACEMENT + 'job_model = "parallel"\n', "comparison[1].job_model: must be one of critical-path, serial, tasks"),
    (PLACEMENT + PLACEMENT, "comparison: two comparisons share a name"),
    ("comparisons = []\n", "comparison: missing (is 'comparisons' a misspelling?)"),
    ("[[comparison]\n", "not valid TOML"),
])
def test_a_plan_mistake_names_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    with pytest.raises(WorkloadFileError) as caught:
        load_plan(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value), str(caught.value)


def test_workloads_are_relative_to_the_plan(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(PLACEMENT.replace(str(EXAMPLES / "yahoo-demo.toml"), "w/x.toml"))
    assert load_plan(tmp_path / "plan.toml")[0].workload == tmp_path / "w" / "x.toml"


@pytest.mark.parametrize(("policies", "message"), [
    ('["stock", "hwak"]', "comparison 'placement': unknown policy 'hwak'"),
    ('["stock", "eagle"]\nparams = { cutof = "1" }', "comparison 'placement': --param cutof: no compared policy"),
])
def test_demo_refuses_a_bad_plan_before_starting_anything(tmp_path: Path, policies: str, message: str) -> None:
    (tmp_path / "plan.toml").write_text(PLACEMENT.replace('["stock", "eagle"]', policies))
    result = CliRunner().invoke(demo, ["--plan", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 1 and f"{tmp_path / 'plan.toml'}: {message}" in result.output, result.output
    assert "demo: [1/1]" not in result.output and not (tmp_path / "r").exists()


def test_the_shipped_plan_is_checked_without_a_running_resourcemanager(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`make demo` checks its plan before it starts the testbed: a --preempt comparison's simulated
    shape (the RM's NodeManagers) is checked only once the testbed is up."""
    def no_cluster_yet(conf_dir: object) -> None:
        raise AssertionError("the plan's check reached for the ResourceManager before the testbed started")
    monkeypatch.setattr(session, "resolve", no_cluster_yet)
    assert [c.planned.name for c in _checked(default_plan(), tmp_path)] == ["mix"]


def test_a_plan_compares_both_stand_ins_like_any_policy(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(PLACEMENT.replace('["stock", "eagle"]', '["stock", "stock-fair", "eagle"]'))
    [item] = _checked(tmp_path / "plan.toml", tmp_path)
    assert item.planned.policies == ("stock", "stock-fair", "eagle") and item.comparison is not None
    assert item.comparison.params["stock-fair"] == {} and item.left_out is None


def test_demo_refuses_a_results_directory_in_use(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "old").write_text("")
    result = CliRunner().invoke(demo, ["--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "is not empty" in result.output


def test_reading_lines_come_from_the_figures() -> None:
    runs = [_run("stock", (1.5, 12.0), (1.5, 11.0)), _run("eagle", (1.4, 6.0), (1.6, 5.5)),
            _run("sparrow", (2.0, 30.0), (2.0, 22.0))]
    assert reading_lines(runs, "short", "p90") == [
        "eagle's short-job p90 is 2x lower than stock's live (6 s against 12 s); the simulator predicted 2x lower "
        "(5.5 s against 11 s)",
        "sparrow's short-job p90 is 2.5x higher than stock's live (30 s against 12 s); the simulator predicted "
        "2x higher (22 s against 11 s)"]
    assert reading_lines(runs[:2], "short", "p50")[0].startswith(
        "eagle's short-job p50 is 1.1x lower than stock's live (1.4 s against 1.5 s); the simulator predicted "
        "1.1x higher (1.6 s against 1.5 s)")


def test_a_missing_figure_is_said_not_compared() -> None:
    runs = [_run("fifo", (math.nan, 12.0), (1.0, 11.0)), _run("kairos", (1.0, 6.0), (1.0, 5.5))]
    assert reading_lines(runs, "short", "p50") == [
        "kairos against fifo: a short-job p50 is missing or zero, not compared"]


def test_figures_table_shows_live_beside_sim_per_policy_and_class() -> None:
    lines = figures_table([_run("stock", (1.5, 12.0), (1.5, 10.0))]).splitlines()
    assert lines[0].split() == ["policy", "class", "jobs", "p50", "live", "(s)", "p50", "sim", "(s)", "p50",
                                "live/sim", "p90", "live", "(s)", "p90", "sim", "(s)", "p90", "live/sim"]
    assert lines[1].split() == ["stock", "short", "5", "1.5", "1.5", "1", "12", "10", "1.2"]
    assert lines[2].split() == ["stock", "long", "1", "100", "100", "1", "120", "120", "1"]


def test_without_root_a_preempting_policy_is_left_out_and_the_others_run(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from bridge.apps import demo as module

    (tmp_path / "plan.toml").write_text(PLACEMENT.replace('["stock", "eagle"]', '["stock", "eagle", "kairos"]')
                                        + "preempt = true\n")
    (planned,) = load_plan(tmp_path / "plan.toml")
    monkeypatch.setattr(module.os, "geteuid", lambda: 1000)
    runnable, why = module._runnable(planned)
    assert runnable is not None and (runnable.policies, runnable.preempt) == (("stock", "eagle"), False)
    assert why is not None and why.startswith("kairos not run") and "needs root" in why
    alone, why = module._runnable(replace(planned, policies=("fifo", "kairos")))
    assert alone is None and why is not None and "needs root" in why  # one policy left: nothing to compare
    monkeypatch.setattr(module.os, "geteuid", lambda: 0)
    assert module._runnable(planned) == (planned, None)


def test_a_plan_takes_estimates_from_a_stand_in_and_the_command_a_file(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text(PLACEMENT + 'estimates_from = "stock"\n')
    [item] = _checked(tmp_path / "plan.toml", tmp_path)
    assert item.comparison is not None and item.planned.estimates_from == item.comparison.estimates_from == "stock"
    (tmp_path / "plan.toml").write_text(PLACEMENT)
    [item] = _checked(tmp_path / "plan.toml", tmp_path, tmp_path / "e.json")
    assert item.comparison is not None and item.comparison.estimates == tmp_path / "e.json"
    (tmp_path / "plan.toml").write_text(PLACEMENT + 'estimates_from = "eagle"\n')
    with pytest.raises(click.ClickException, match="comparison 'placement': estimates from 'eagle': it must be"):
        _checked(tmp_path / "plan.toml", tmp_path)
