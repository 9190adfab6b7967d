"""`replay --measure-alone` and what a replay records in meta.json, without a cluster (fakes)."""
from __future__ import annotations

import itertools
import json
import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner

import sparkplugin
from bridge.replay import cli as replay_cli
from bridge.replay.alone import first_of_each_category, measure, with_alone
from bridge.replay.eventlog import replayed_job_id
from bridge.replay.jobs import job_group
from bridge.replay.launchers import Outcome, PerJobApplications, SharedApplication
from bridge.replay.results import preemption_commands
from bridge.replay.runner import Replay
from tests.unit.test_replay import FakeLauncher, FakeRM, plan
from workloads.spec import Submission, TasksJob


def subs(*categories: str, alone: float | None = None) -> list[Submission]:
    return [Submission(i, float(i), c, TasksJob((1.0,)), alone) for i, c in enumerate(categories)]


def test_the_first_job_of_each_category_is_timed_in_submission_order() -> None:
    firsts = first_of_each_category(subs("a", "b", "a", "c", "b"))
    assert [(s.job_id, s.category) for s in firsts] == [(0, "a"), (1, "b"), (3, "c")]


def test_measure_times_each_run_and_leaves_out_a_failed_one() -> None:
    ticks = itertools.count(step=2.5)
    lines: list[str] = []
    ran: list[int] = []

    def run(sub: Submission) -> Outcome:
        ran.append(sub.job_id)
        return Outcome("failed", "boom") if sub.category == "b" else Outcome("succeeded")

    alone = measure(run, subs("a", "b", "a", alone=4.0), lines.append, clock=lambda: next(ticks))
    assert ran == [0, 1] and alone == {"a": 2.5}
    assert "category 'b' alone failed: boom; its jobs keep the workload file's duration_alone_s (4 s)" in lines[-1]


def test_with_alone_replaces_only_measured_categories() -> None:
    a, b = subs("a", "b", alone=9.0)
    assert with_alone(a, {"a": 1.5}).duration_alone_s == 1.5
    assert with_alone(b, {"a": 1.5}) is b


def test_runs_alone_are_traced_to_no_replayed_job() -> None:
    assert replayed_job_id({"spark.jobGroup.id": job_group(3)}) == 3
    assert replayed_job_id({"spark.jobGroup.id": job_group(3, alone=True)}) is None


def test_a_replay_measuring_alone_fills_duration_alone_s_before_time_0(tmp_path: Path) -> None:
    launcher = FakeLauncher()
    p = plan(tmp_path, [0.0, 0.05, 0.1])
    p = replace(p, submissions=(*p.submissions[:2], replace(p.submissions[2], category="d")), measure_alone=True)
    rep = Replay(p, FakeRM(), lambda plan, conf: launcher)
    assert rep.run() == "complete"
    assert launcher.ran_alone == [0, 2] and launcher.ran == [0, 1, 2]
    jobs = pd.read_csv(p.results / "jobs.csv")
    assert jobs["duration_alone_s"].notna().all() and jobs.loc[0, "duration_alone_s"] == jobs.loc[1, "duration_alone_s"]
    meta = json.loads((p.results / "meta.json").read_text())
    assert set(meta["alone_s"]) == {"c", "d"} and meta["alone_s"]["c"] == pytest.approx(jobs.loc[0, "duration_alone_s"])


def test_a_replay_without_measure_alone_runs_nothing_alone(tmp_path: Path) -> None:
    launcher = FakeLauncher()
    p = plan(tmp_path, [0.0])
    Replay(p, FakeRM(), lambda plan, conf: launcher).run()
    assert launcher.ran_alone == []
    meta = json.loads((p.results / "meta.json").read_text())
    assert (meta["alone_s"], meta["preemption_commands"], meta["params"]) == (None, None, {})


def test_meta_records_the_policy_parameters_and_the_preemption_commands(tmp_path: Path) -> None:
    class PreemptingLauncher(FakeLauncher):
        def close(self) -> None:  # as `PreemptiveSession.close` does
            super().close()
            (p.results / "preemption.json").write_text(json.dumps([{"action": "suspend"}, {"action": "resume"}]))

    p = replace(plan(tmp_path, [0.0]), extra_conf=sparkplugin.policy_conf({"w": "5.0"}))
    Replay(p, FakeRM(), lambda plan, conf: PreemptingLauncher()).run()
    meta = json.loads((p.results / "meta.json").read_text())
    assert (meta["params"], meta["preemption_commands"]) == ({"w": "5.0"}, 2)


def test_preemption_commands_counts_the_file(tmp_path: Path) -> None:
    assert preemption_commands(tmp_path) is None
    (tmp_path / "preemption.json").write_text("[]")
    assert preemption_commands(tmp_path) == 0


def test_a_shared_run_alone_uses_its_alone_group(monkeypatch: pytest.MonkeyPatch) -> None:
    groups: list[str] = []
    monkeypatch.setattr("bridge.replay.launchers.run_job", lambda spark, sub, inputs, group: groups.append(group))
    shared = SharedApplication.__new__(SharedApplication)  # no Spark: only `run` is exercised
    shared.spark, shared._inputs, shared._cancelled, shared._stand_in = SimpleNamespace(), {}, threading.Event(), None
    (sub,) = subs("a")
    assert shared.run(sub, alone=True) == Outcome("succeeded") and shared.run(sub) == Outcome("succeeded")
    assert groups == ["schedbridge-alone-0", "schedbridge-job-0"]


def test_a_per_job_run_alone_is_its_own_application(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    conf = {"spark.app.name": "schedbridge-w-x", "spark.schedbridge.stats.file": str(tmp_path / "plugin" / "s.json")}
    command = PerJobApplications("stock", conf, {}, {}, tmp_path).command(Submission(3, 0.0, "c", TasksJob((1.0,))),
                                                                          alone=True)
    assert "spark.app.name=schedbridge-w-x-alone-3" in command
    assert f"spark.schedbridge.stats.file={tmp_path / 'plugin' / 'alone-3.json'}" in command
    assert command[-2:] == ["schedbridge-alone-3", str(tmp_path / "alone-3.answer.pickle")]


def test_cli_measure_alone_reaches_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def build_plan(*args: object, **kwargs: object) -> tuple[SimpleNamespace, None]:
        seen["measure_alone"] = kwargs["measure_alone"]
        return SimpleNamespace(results=tmp_path), None

    monkeypatch.setattr(replay_cli, "build_plan", build_plan)
    monkeypatch.setattr(replay_cli, "Replay", lambda plan, rm: SimpleNamespace(run=lambda: "complete"))
    workload = Path(__file__).resolve().parents[2] / "workloads" / "examples" / "kairos-live-mini.toml"
    result = CliRunner().invoke(replay_cli.replay, [str(workload), "--policy", "stock", "--measure-alone"])
    assert result.exit_code == 0, result.output
    assert seen == {"measure_alone": True}
