"""The replay machinery without a cluster: fake launcher, fake ResourceManager, hand-made logs."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner

import sparkplugin
from bridge.apps.report.load import load_run
from bridge.replay.cli import replay, spark_settings
from bridge.replay.eventlog import read_logs
from bridge.replay.launchers import Outcome, failure_summary
from bridge.replay.runner import Replay, ReplayPlan, kill_tagged_apps, spark_conf
from bridge.replay.sampler import UtilizationSampler
from bridge.target.config import ClusterTarget
from workloads.spec import Submission, TasksJob
from yarnclient.errors import YarnConnectionError

# --- fakes -------------------------------------------------------------------------------------


class FakeRM:
    """Answers metrics and apps like the RM REST API; records kills."""

    def __init__(self, apps: list[tuple[str, str, str]] = (), fail_metrics: bool = False) -> None:
        self.apps_list = [SimpleNamespace(app_id=a, state=s, raw={
            "applicationTags": t, "allocatedVCores": 2, "allocatedMB": 512}) for a, s, t in apps]
        self.killed: list[str] = []
        self.fail_metrics = fail_metrics

    def metrics(self) -> SimpleNamespace:
        if self.fail_metrics:
            raise YarnConnectionError("down")
        return SimpleNamespace(vcores_allocated=3, vcores_total=8, memory_mb_allocated=1024,
                               memory_mb_total=8192, containers_allocated=3, apps_running=1,
                               apps_pending=0)

    def apps(self, states=None):
        return [a for a in self.apps_list if states is None or a.state in states]

    def kill(self, app_id: str) -> str:
        self.killed.append(app_id)
        return "KILLED"


class FakeLauncher:
    """Jobs whose first duration is negative fail; `block` holds jobs until cancel_all. Runs alone
    are recorded apart, in `ran_alone`."""

    def __init__(self, block: bool = False) -> None:
        self.ran: list[int] = []
        self.ran_alone: list[int] = []
        self.block = block
        self.cancelled = threading.Event()
        self.closed = False

    def run(self, submission: Submission, alone: bool = False) -> Outcome:
        (self.ran_alone if alone else self.ran).append(submission.job_id)
        if self.block:
            self.cancelled.wait(5)
            return Outcome("killed")
        if submission.params.durations[0] < 0:
            return Outcome("failed", "boom")
        return Outcome("succeeded")

    def cancel_all(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        self.closed = True

    def estimates_used(self) -> list[dict[str, object]]:
        return [{"app": "a", "occurrence": f"schedbridge-job-{j}", "key": "job:c", "unit": j, "estimate_s": 1.0,
                 "source": "default" if j == 0 else "learned"} for j in self.ran]

    def demand_faults(self) -> dict[str, int]:
        return {"cut": len(self.ran) - 1, "malformed": 0}


def plan(tmp_path: Path, times: list[float], durations: list[float] | None = None,
         mode: str = "shared") -> ReplayPlan:
    durations = durations or [1.0] * len(times)
    subs = tuple(Submission(i, t, "c", TasksJob((d,))) for i, (t, d) in enumerate(zip(times, durations)))
    target = ClusterTarget(tmp_path, "http://rm", "http://nn", "hdfs://nn:9000", {})
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    return ReplayPlan("w", 1, "fifo", mode, subs, {}, target, results, {})


# --- the loop ----------------------------------------------------------------------------------


def test_failed_job_is_recorded_and_replay_continues(tmp_path: Path) -> None:
    launcher, rm = FakeLauncher(), FakeRM()
    p = plan(tmp_path, [0.0, 0.05, 0.1], durations=[1.0, -1.0, 1.0])
    state = Replay(p, rm, lambda plan, conf: launcher).run()
    assert state == "complete" and launcher.closed
    jobs = pd.read_csv(p.results / "jobs.csv")
    assert list(jobs["status"]) == ["succeeded", "failed", "succeeded"]
    assert jobs.loc[1, "error"] == "boom"
    assert (jobs["submit_s"] >= jobs["arrival_s"] - 0.01).all()
    assert (jobs["submit_s"] <= jobs["end_s"]).all()
    meta = json.loads((p.results / "meta.json").read_text())
    assert (meta["state"], meta["policy"], meta["jobs"]) == ("complete", "fifo", 3)
    assert meta["estimates"] == {"default": 1, "learned": 2}
    assert meta["demand_faults"] == {"cut": 2}   # kinds that occurred
    assert list(pd.read_csv(p.results / "user-jobs.csv")["unit"]) == launcher.ran
    for name in ("tasks.csv", "utilization.csv"):
        assert (p.results / name).is_file()


def test_interrupt_cancels_jobs_kills_tagged_apps_and_keeps_results(tmp_path: Path) -> None:
    launcher = FakeLauncher(block=True)
    p = plan(tmp_path, [0.0, 30.0])
    rep = Replay(p, FakeRM(), lambda plan, conf: launcher)
    rm = FakeRM(apps=[("application_1", "RUNNING", f"schedbridge,{rep.run_tag}"),
                      ("application_2", "RUNNING", "someone-else")])
    rep.rm = rm
    threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGTERM)).start()
    assert rep.run() == "interrupted"
    assert launcher.cancelled.is_set() and launcher.ran == [0]
    assert rm.killed == ["application_1"]
    jobs = pd.read_csv(p.results / "jobs.csv")
    assert list(jobs["status"]) == ["killed", "pending"]
    assert json.loads((p.results / "meta.json").read_text())["state"] == "interrupted"


def test_a_run_killed_before_spark_starts_is_not_reported_complete(tmp_path: Path) -> None:
    """SIGKILL while Spark starts leaves the folder as it is then: its meta.json says running."""
    p = plan(tmp_path, [0.0])

    def killed(plan: ReplayPlan, conf: dict[str, str]) -> FakeLauncher:
        raise RuntimeError("killed")  # no clean-up runs, as after SIGKILL

    with pytest.raises(RuntimeError):
        Replay(p, FakeRM(), killed).run()
    assert json.loads((p.results / "meta.json").read_text())["state"] == "running"
    assert load_run(p.results).state == "running"


def test_kill_tagged_apps_only_touches_live_apps_of_this_run() -> None:
    rm = FakeRM(apps=[("a1", "RUNNING", "schedbridge,replay-x"), ("a2", "FINISHED", "replay-x"),
                      ("a3", "ACCEPTED", "replay-x"), ("a4", "RUNNING", "replay-y")])
    assert kill_tagged_apps(rm, "replay-x") == ["a1", "a3"]


def test_spark_conf_per_mode_and_overrides(tmp_path: Path) -> None:
    shared = spark_conf(plan(tmp_path, [0.0]), "replay-t")
    assert shared["spark.yarn.tags"] == "schedbridge,replay-t"
    assert shared["spark.eventLog.enabled"] == "true"
    assert shared["spark.executor.instances"] == "4"
    p = replace(plan(tmp_path, [0.0], mode="per-job"), extra_conf={"spark.executor.memory": "1g"})
    per_job = spark_conf(p, "t")
    assert per_job["spark.dynamicAllocation.enabled"] == "true"
    assert per_job["spark.executor.memory"] == "1g"
    assert "spark.executor.instances" not in per_job


def test_per_job_command_uses_the_plugin_unless_stock(tmp_path: Path, monkeypatch) -> None:
    from bridge.replay.launchers import PerJobApplications
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    sub = Submission(3, 0.0, "c", TasksJob((1.0,)))
    conf = {"spark.app.name": "schedbridge-w-x"}
    stock = PerJobApplications("stock", conf, {}, {}, tmp_path).command(sub)
    assert stock[stock.index("--master") + 1] == "yarn"
    assert "spark.app.name=schedbridge-w-x-job-3" in stock
    assert stock[-6:-4] == ["stock", "schedbridge-w-x-job-3"] and stock[-2] == "schedbridge-job-3"
    assert stock[-1] == str(tmp_path / "job-3.answer.pickle")   # where the child leaves its answer
    kairos = PerJobApplications("kairos", conf, {}, {}, tmp_path).command(sub)
    assert kairos[kairos.index("--master") + 1] == "spark-schedbridge://yarn"
    assert "--jars" in kairos and "spark.yarn.isPython=true" in kairos


# --- pieces ------------------------------------------------------------------------------------


def test_sampler_records_and_survives_failures() -> None:
    rm = FakeRM(apps=[("a1", "RUNNING", "schedbridge,replay-x"), ("a2", "RUNNING", "replay-y"),
                      ("a3", "FINISHED", "replay-x")])
    sampler = UtilizationSampler(rm, "replay-x", interval_s=0.01, clock=time.time)
    sampler.start(time.time())
    time.sleep(0.1)
    frame = sampler.stop()
    assert len(frame) >= 2 and set(frame["vcores_allocated"]) == {3}
    assert set(frame["run_vcores_allocated"]) == {2} and set(frame["run_memory_mb_allocated"]) == {512}
    failing = UtilizationSampler(FakeRM(fail_metrics=True), "replay-x", interval_s=0.01)
    failing.start(0.0)
    time.sleep(0.05)
    assert failing.stop().empty


def test_failure_summary_picks_the_exception_line() -> None:
    log = ("26/11/22 INFO starting\nTraceback (most recent call last):\n  File x\n"
           "pyspark.errors.AnalysisException: no such table\n26/11/22 INFO shutdown hook\n")
    assert failure_summary(log) == "pyspark.errors.AnalysisException: no such table"
    assert failure_summary("just one line\n") == "just one line"


def _event(**fields: object) -> str:
    return json.dumps(fields)


def test_event_log_tasks_are_traced_to_replayed_jobs(tmp_path: Path) -> None:
    lines = [
        _event(Event="SparkListenerApplicationStart", **{"App ID": "application_7"}),
        _event(Event="SparkListenerExecutorAdded", **{"Executor ID": "1", "Executor Info": {
            "Host": "localhost", "Attributes": {"NM_HOST": "localhost", "NM_PORT": "45455",
                                                "CONTAINER_ID": "container_7_01_000002"}}}),
        _event(Event="SparkListenerJobStart", **{"Job ID": 0, "Stage IDs": [0, 1],
                                                  "Properties": {"spark.jobGroup.id": "schedbridge-job-12"}}),
        _event(Event="SparkListenerJobStart", **{"Job ID": 1, "Stage IDs": [2], "Properties": {}}),
        _event(Event="SparkListenerTaskEnd", **{
            "Stage ID": 1, "Stage Attempt ID": 0, "Task End Reason": {"Reason": "Success"},
            "Task Info": {"Task ID": 5, "Attempt": 0, "Executor ID": "1", "Host": "localhost",
                          "Launch Time": 2000, "Finish Time": 4500},
            "Task Metrics": {"Executor Run Time": 2400, "Executor CPU Time": 1_500_000_000}}),
        _event(Event="SparkListenerTaskEnd", **{
            "Stage ID": 2, "Task End Reason": {"Reason": "Success"},
            "Task Info": {"Task ID": 6, "Launch Time": 1, "Finish Time": 2}}),
        '{"Event":"SparkListenerTaskEnd","Stage ID": 1, "Task Info": {"Tas',  # cut by a kill
    ]
    (tmp_path / "application_7.inprogress").write_text("\n".join(lines))
    (tmp_path / ".application_7.crc").write_text("junk")
    (task,) = read_logs(tmp_path)
    assert (task.job_id, task.app_id, task.task_id, task.status) == (12, "application_7", 5, "succeeded")
    assert (task.node, task.container_id) == ("localhost:45455", "container_7_01_000002")
    assert (task.launch_epoch_s, task.finish_epoch_s) == (2.0, 4.5)
    assert (task.run_time_s, task.cpu_time_s) == (2.4, 1.5)


# --- command line: mistakes are caught before anything is submitted ---------------------------


def test_cli_bad_workload_names_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = 1\njobs = 2\nmean_interarrival_s = -3\n[inputs.x]\nkind = 'tpch'\n"
                   "scale_factor = 0.01\n[categories.c]\nkind = 'tpch'\ninput = 'x'\nprobability = 1.0\n")
    result = CliRunner().invoke(replay, [str(bad), "--policy", "fifo"])
    assert result.exit_code == 1
    assert f"{bad}: mean_interarrival_s: must be > 0" in result.output
    assert "Traceback" not in result.output


def test_cli_unknown_policy(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "workloads" / "examples"
    result = CliRunner().invoke(replay, [str(examples / "demo.toml"), "--policy", "no-such-policy"])
    assert result.exit_code == 1 and "unknown policy 'no-such-policy'" in result.output
    assert "kairos" in result.output and "stock" in result.output


@pytest.mark.parametrize("option, conf, message", [
    ("--param", "cutof=1", "unknown parameter(s) ['cutof'] (did you mean 'cutoff'?)"),
    ("--param", "cutoff=abc", "cutoff='abc' is not a number"),
    ("--conf", "spark.schedbridge.policy=hwak", "spark.schedbridge.policy=hwak contradicts --policy hawk"),
    ("--conf", "spark.schedbridge.endpoint=tcp:/nowhere", "spark.schedbridge.endpoint must be 'local'"),
    ("--conf", "spark.schedbridge.endpoint=tcp://127.0.0.1:9", "no token for the policy daemon at tcp://127.0.0.1:9"),
    ("--conf", "spark.schedbridge.deadline=soon", "spark.schedbridge.deadline must be a Spark time string"),
    ("--conf", "spark.schedbridge.deadline.ms=50", "spark.schedbridge.deadline.ms is now spark.schedbridge.deadline"),
])
def test_cli_refuses_what_the_plugin_would_refuse_before_submitting(tmp_path: Path, option: str, conf: str,
                                                                    message: str) -> None:
    examples = Path(__file__).resolve().parents[2] / "workloads" / "examples"
    token = tmp_path / "token"
    token.write_text("0123456789abcdef0123\n")
    result = CliRunner().invoke(replay, [str(examples / "demo.toml"), "--policy", "hawk", option, conf,
                                         "--out", str(tmp_path / "r")])
    assert result.exit_code == 1 and message in result.output, result.output
    if conf.startswith("spark.schedbridge.endpoint=tcp://"):  # with a token, the next mistake: nobody answers
        result = CliRunner().invoke(replay, [str(examples / "demo.toml"), "--policy", "hawk", option, conf,
                                             "--conf", f"spark.schedbridge.token.file={token}",
                                             "--out", str(tmp_path / "r")])
        message = "the policy daemon at tcp://127.0.0.1:9 does not answer"
    assert result.exit_code == 1 and message in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "r").exists()  # nothing started or written


def test_cli_bad_conf_pair(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "workloads" / "examples"
    result = CliRunner().invoke(replay, [str(examples / "demo.toml"), "--policy", "fifo",
                                         "--conf", "novalue"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


CUTOFF_KEY = next(iter(sparkplugin.policy_conf({"cutoff": "5"})))  # the plugin's spelling, whatever it is


@pytest.mark.parametrize("args, message", [
    (["--conf", f"{CUTOFF_KEY}=5"], f"{CUTOFF_KEY} is a policy parameter: use --param cutoff=5"),
    (["--conf", "spark.schedbridge.cutoff=5"], "spark.schedbridge.cutoff is a policy parameter: use --param cutoff=5"),
    (["--param", "cutoff=5", "--param", "cutoff=6"], "'cutoff' given twice"),
    (["--results", "r"], "--results is now --out"),
])
def test_cli_one_spelling_for_policy_parameters_and_outputs(tmp_path: Path, args: list[str], message: str) -> None:
    examples = Path(__file__).resolve().parents[2] / "workloads" / "examples"
    result = CliRunner().invoke(replay, [str(examples / "demo.toml"), "--policy", "hawk", *args])
    assert result.exit_code == 2 and message in result.output, result.output


def test_the_estimates_file_reaches_the_plugin_by_its_absolute_path(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "e.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    settings = spark_settings({}, {"cutoff": "5"}, Path("e.json"))
    assert settings[sparkplugin.ESTIMATES_KEY] == str(tmp_path / "e.json")
    assert sparkplugin.policy_params(settings) == {"cutoff": "5", "estimates": str(tmp_path / "e.json")}


def test_a_malformed_estimates_file_stops_the_replay_naming_it(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "workloads" / "examples"
    (tmp_path / "e.json").write_text("not json")
    result = CliRunner().invoke(replay, [str(examples / "demo.toml"), "--policy", "hawk",
                                         "--estimates", str(tmp_path / "e.json"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 1 and "e.json" in result.output and "Traceback" not in result.output, result.output
