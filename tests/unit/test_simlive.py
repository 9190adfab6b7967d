"""sim-vs-live without a cluster: calibration from a small event log in Spark's format (every
figure worked out by hand below), the simulator's side, and the table and JSON built from runs."""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.simlive.calibration import NONE, Calibration, CalibrationError, apply, measure
from bridge.apps.simlive.compare import CompareError, Measured, class_stats, live_jobs, spread, table
from bridge.apps.simlive.measured import measured_jobs, offslot_share, shrunk_intervals, shrunk_time, task_work
from bridge.apps.simlive import session
from bridge.apps.simlive.predict import predict, predict_stages, split_params
from bridge.apps.simlive.stages import LIVE_ESTIMATE, stage_play
from bridge.apps.simlive.session import Comparison, Result
from bridge.cli import main as cli
from bridge.common.metrics import percentile
from bridge.sim.engine import Simulation
from bridge.sim.shape import uniform
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import config_for, create, sim_model
from workloads.model import Job, Successor
from workloads.spec import Submission, WordCountJob
from workloads.trace import read_trace

T0 = 1010.0
JOBS = {0: Job(0, 0.0, (1.0, 2.0, 1.0)), 1: Job(1, 1.0, (0.5,))}
REPLAY_TIMES = {0: (0.0, 2.7), 1: (1.0, 2.4)}  # jobs.csv: submit_s, end_s


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _task(stage: int, index: int, task_id: int, executor: str, launch: float, finish: float,
          reason: str = "Success") -> dict:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0,
            "Task End Reason": {"Reason": reason},
            "Task Info": {"Task ID": task_id, "Index": index, "Attempt": 0, "Executor ID": executor,
                          "Host": "localhost", "Launch Time": _ms(launch), "Finish Time": _ms(finish)}}


def _job(job_id: int, stage: int, submitted: float, group: str) -> list[dict]:
    return [{"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": _ms(submitted),
             "Stage IDs": [stage], "Properties": {"spark.jobGroup.id": group}},
            {"Event": "SparkListenerStageSubmitted",
             "Stage Info": {"Stage ID": stage, "Submission Time": _ms(submitted + 0.05)}}]


def write_log(directory: Path) -> Path:
    """Executor 1 (2 cores) at +1.0 s, executor 2 (1 core) at +1.5 s after the application's start;
    a warm-up job (not replayed), replayed job 0 (3 tasks) and job 1 (1 task, which waits for
    executor 2's one core), and a failed attempt that no measure may use."""
    events = [
        {"Event": "SparkListenerApplicationStart", "App ID": "application_1_0001", "Timestamp": _ms(1000.0)},
        {"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Timestamp": _ms(1001.0),
         "Executor Info": {"Host": "localhost", "Total Cores": 2}},
        {"Event": "SparkListenerExecutorAdded", "Executor ID": "2", "Timestamp": _ms(1001.5),
         "Executor Info": {"Host": "localhost", "Total Cores": 1}},
        *_job(0, 0, 1005.0, "schedbridge-warm-up"),
        _task(0, 0, 0, "1", 1005.1, 1005.3),
        *_job(1, 1, 1010.2, "schedbridge-job-0"),       # job start 0.2 s; stage at 1010.25
        _task(1, 0, 1, "1", 1010.30, 1011.40),           # overhead 0.1, wait 0.05
        _task(1, 1, 2, "1", 1010.30, 1012.50),           # overhead 0.2, wait 0.05 (second core)
        _task(1, 2, 3, "2", 1010.35, 1011.45),           # overhead 0.1, wait 0.10
        *_job(2, 2, 1011.3, "schedbridge-job-1"),       # job start 0.3 s; stage at 1011.35
        _task(2, 0, 4, "2", 1011.50, 1012.10),           # core free at 1011.45: wait 0.05; overhead 0.1
        _task(2, 0, 5, "1", 1011.40, 1011.42, "ExceptionFailure"),
    ]
    logs = directory / "eventlogs"
    logs.mkdir(parents=True)
    (logs / "application_1_0001").write_text("".join(json.dumps(e) + "\n" for e in events))
    return directory


def test_calibration_from_a_small_event_log(tmp_path: Path) -> None:
    cal = measure(write_log(tmp_path), JOBS, T0, REPLAY_TIMES)
    assert cal.task_overhead_s == pytest.approx(0.1)       # median of 0.1, 0.2, 0.1, 0.1
    assert cal.decision_s == pytest.approx(0.05)           # median of 0.05, 0.05, 0.10, 0.05
    assert cal.job_start_s == pytest.approx(0.25)          # 0.2 and 0.3
    assert cal.job_end_s == pytest.approx(0.25)            # 1012.7 - 1012.5 and 1012.4 - 1012.1
    assert cal.executor_start_s == pytest.approx(1.25)     # 1.0 and 1.5
    assert cal.network_delay_s == pytest.approx(0.025)
    assert dict(cal.samples) == {"tasks": 4, "decisions": 5, "job_starts": 2, "job_ends": 2, "executors": 2}


def test_driver_gaps_are_a_jobs_time_with_none_of_its_spark_jobs_active(tmp_path: Path) -> None:
    """Job 0 runs four Spark jobs: [0, 1], then [1.5, 2.0] beside [1.8, 2.5], then [3.0, 3.2]:
    the driver worked 0.5 s twice. Job 1's one Spark job has no gap. Each gap lengthens only its
    own job's predicted completion time."""
    def spark_job(job_id: int, group: str, start: float, end: float) -> list[dict]:
        return [{"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": _ms(T0 + start),
                 "Stage IDs": [job_id], "Properties": {"spark.jobGroup.id": group}},
                {"Event": "SparkListenerJobEnd", "Job ID": job_id, "Completion Time": _ms(T0 + end)}]
    events = [{"Event": "SparkListenerApplicationStart", "App ID": "application_1_0002", "Timestamp": _ms(T0)},
              *spark_job(0, "schedbridge-job-0", 0.0, 1.0), *spark_job(1, "schedbridge-job-0", 1.5, 2.0),
              *spark_job(2, "schedbridge-job-0", 1.8, 2.5), *spark_job(3, "schedbridge-job-0", 3.0, 3.2),
              *spark_job(4, "schedbridge-job-1", 0.5, 1.1)]
    (tmp_path / "eventlogs").mkdir()
    (tmp_path / "eventlogs" / "application_1_0002").write_text("".join(json.dumps(e) + "\n" for e in events))
    cal = measure(tmp_path, None, T0, {0: (0.0, 3.3), 1: (0.5, 1.2)})
    assert cal.driver_s == pytest.approx({0: 1.0, 1: 0.0})
    assert "driver gaps 1.00 s median in 1 job(s)" in cal.describe()
    jobs = [Job(0, 0.0, (1.0,)), Job(1, 0.5, (1.0,))]
    plain = predict(jobs, "stock", {}, 2, 1, 7, NONE, 1.5, tmp_path / "plain.csv")
    gapped = predict(jobs, "stock", {}, 2, 1, 7, cal, 1.5, tmp_path / "gapped.csv")
    later = (gapped["finish"] - plain["finish"]).tolist()
    assert later == pytest.approx([cal.job_start_s + cal.job_end_s + 1.0, cal.job_start_s + cal.job_end_s])


def test_calibration_without_replayed_tasks_names_the_logs(tmp_path: Path) -> None:
    (tmp_path / "eventlogs").mkdir()
    with pytest.raises(CalibrationError, match="eventlogs: no succeeded task"):
        measure(tmp_path, JOBS, T0, REPLAY_TIMES)


def test_applied_calibration_lengthens_tasks_and_keeps_the_estimate() -> None:
    cal = Calibration(0.1, 0.05, 0.25, 0.25, 1.25, {})
    (job,) = apply([JOBS[0]], cal)
    assert job.durations == pytest.approx((1.1, 2.1, 1.1))
    assert job.estimate == pytest.approx(4.0 / 3)
    assert cal.as_dict()["applied"] == {"task_overhead_s": 0.1, "network_delay_s": 0.025, "job_overhead_s": 0.5,
                                           "driver_gaps_s": 0, "offslot_share": 0.0}
    assert "task overhead 0.100 s, network delay 0.025 s" in cal.describe()
    assert "off their slots" not in cal.describe()


def test_a_preempting_runs_prediction_plays_suspended_tasks_at_its_measured_share(tmp_path: Path) -> None:
    """Kairos on one slot (Q = 1): the 10 s job is suspended for the 2 s one arriving at 1 s; at a
    measured off-slot share of 0.5 it keeps working meanwhile and ends 1 s sooner than at 0."""
    jobs = [Job(0, 0.0, (10.0,), 10.0), Job(1, 1.0, (2.0,), 2.0)]
    params = {"q": "1", "w": "100"}

    def long_end(share: float) -> float:
        cal = replace(NONE, offslot_share=share)
        frame = predict(jobs, "kairos", params, 1, 1, 1, cal, 5.0, tmp_path / f"{share}.csv")
        return float(frame.set_index("job_id").at[0, "finish"])

    assert long_end(0.0) == pytest.approx(12.0)
    assert long_end(0.5) == pytest.approx(11.0)
    assert "tasks off their slots at 0.5 of a core" in replace(NONE, offslot_share=0.5).describe()


def test_prediction_is_the_simulator_on_the_same_shape(tmp_path: Path) -> None:
    """Uncalibrated, the prediction is exactly a plain simulation of fifo on 2 nodes x 2 slots; the
    calibration adds job start + end to every completion time."""
    jobs = [Job(0, 0.0, (1.0, 2.0, 1.0)), Job(1, 0.5, (3.0,)), Job(2, 0.6, (1.0, 1.0, 1.0, 1.0))]
    spec = ClusterSpec(2, slots_per_node=2, network_delay=0.0)
    plain = Simulation(jobs, create("fifo", PolicyEnv(spec, 7), config_for("fifo", {})), spec).run().job_table()
    frame = predict(jobs, "stock", {}, 2, 2, 7, NONE, 1.5, tmp_path / "sim.csv")
    assert frame["finish"].tolist() == pytest.approx(plain["finish"].tolist())
    written = pd.read_csv(tmp_path / "sim.csv")
    assert written["completion_time"].tolist() == pytest.approx((plain["finish"] - plain["submit"]).tolist())
    cal = Calibration(0.0, 0.0, 0.25, 0.5, 0.0, {})
    later = predict(jobs, "stock", {}, 2, 2, 7, cal, 1.5, tmp_path / "sim2.csv")
    assert (later["finish"] - plain["finish"]).tolist() == pytest.approx([0.75] * 3)


def test_every_live_policy_is_predicted_packers_included(tmp_path: Path) -> None:
    """The prediction's cluster has cores and memory per node, as `simulate --nodes --slots`
    gives: Falcon (a packer) is predicted like the slot policies (it stopped sim-vs-live with
    "falcon needs a cluster with a capacity vector" after the live runs, writing no table)."""
    jobs = [Job(0, 0.0, (1.0, 2.0, 1.0)), Job(1, 0.5, (3.0,)), Job(2, 0.6, (1.0, 1.0, 1.0, 1.0))]
    for policy in ("falcon", "hawk", "kairos"):
        frame = predict(jobs, policy, {}, 2, 2, 7, NONE, 1.5, tmp_path / f"{policy}.csv")
        assert frame["finish"].notna().all() and len(frame) == 3, policy


def test_parameters_go_to_the_policies_that_have_them() -> None:
    split = split_params(["stock", "stock-fair", "sparrow", "hawk"], {"cutoff": "2", "probe_ratio": "3"})
    assert split == {"stock": {}, "stock-fair": {}, "sparrow": {"probe_ratio": "3"},
                     "hawk": {"cutoff": "2", "probe_ratio": "3"}}
    with pytest.raises(CompareError, match="--param nope: no compared policy"):
        split_params(["stock", "sparrow"], {"nope": "1"})
    with pytest.raises(CompareError, match="unknown.*stock.*stock-fair"):
        split_params(["nosuch"], {})
    assert (sim_model("stock"), sim_model("stock-fair"), sim_model("eagle")) == ("fifo", "fair", "eagle")


def test_stock_fair_is_simulated_as_fair_each_job_its_pool() -> None:
    """Job 2 arrives while job 0 holds both slots and job 1, a later stage of the same user job
    (unit 0), waits: Spark's FAIR scheduler gives job 2 the first slot that frees (its pool runs
    nothing), FIFO the second."""
    jobs = [Job(0, 0.0, (10.0, 12.0)), Job(1, 1.0, (10.0,), unit=0), Job(2, 2.0, (1.0,))]
    fair = predict(jobs, "stock-fair", {}, 1, 2, 7, NONE, 1.5, Path("/dev/null"))
    fifo = predict(jobs, "stock", {}, 1, 2, 7, NONE, 1.5, Path("/dev/null"))
    assert fair.set_index("job_id").at[2, "finish"] == pytest.approx(11.0)
    assert fifo.set_index("job_id").at[2, "finish"] == pytest.approx(13.0)
    runs = [_measured("stock-fair", 1, 2.0, 1.0)]
    assert set(table(runs)["sim model"]) == {"fair"} and Result("w", 1, 2, 1.5, runs).as_dict()["runs"][0][
        "sim_policy"] == "fair"


def test_live_jobs_count_only_succeeded_jobs_and_use_the_trace_size(tmp_path: Path) -> None:
    pd.DataFrame({"job_id": [0, 1], "submit_s": [0.0, 1.0], "end_s": [2.7, 2.4],
                  "status": ["succeeded", "failed"]}).to_csv(tmp_path / "jobs.csv", index=False)
    jobs = live_jobs(tmp_path, JOBS)
    assert jobs["finish"].tolist()[0] == 2.7 and math.isnan(jobs["finish"].tolist()[1])
    assert jobs["mean_duration"].tolist() == pytest.approx([4.0 / 3, 0.5])
    stats = class_stats(jobs, cutoff=1.0)
    assert stats["long"]["count"] == 1 and stats["long"]["p50"] == pytest.approx(2.7)
    assert stats["short"]["count"] == 0 and math.isnan(stats["short"]["p90"])


def _measured(policy: str, repeat: int, live: float, sim: float) -> Measured:
    def stats(x: float) -> dict[str, dict[str, float]]:
        return {c: {"count": 4, "p50": x, "p90": 2 * x, "p99": 3 * x} for c in ("short", "long")}

    plugin = None if policy == "stock" else {"placed_tasks": 9, "late_rounds": 2, "fallback_rounds": 1}
    answers = {"correct": 3, "wrong": 1, "missing": 0, "none": 0} if repeat == 2 else None
    return Measured(policy, repeat, stats(live), stats(sim), NONE, Path(f"{policy}/live"), Path(f"{policy}/sim.csv"),
                    plugin, answers=answers)


def test_table_spread_and_json() -> None:
    runs = [_measured("stock", 1, 2.0, 1.0), _measured("stock", 2, 4.0, 2.0), _measured("sparrow", 1, 1.0, 1.0)]
    rows = table(runs)
    assert len(rows) == 3 * 2 * 3
    first = rows.iloc[0]
    assert (first["policy"], first["sim model"], first["repeat"], first["class"], first["JCT"]) == \
        ("stock", "fifo", 1, "short", "p50")
    assert (first["live (s)"], first["sim (s)"], first["live/sim"]) == (2.0, 1.0, 2.0)
    p90 = rows[(rows["policy"] == "stock") & (rows["repeat"] == 2) & (rows["JCT"] == "p90")].iloc[0]
    assert (p90["live (s)"], p90["sim (s)"], p90["live/sim"]) == (8.0, 4.0, 2.0)
    s = spread(runs).set_index(["policy", "class", "JCT"]).loc[("stock", "short", "p50")]
    assert (s["live mean (s)"], s["live min (s)"], s["live max (s)"]) == (3.0, 2.0, 4.0)
    assert (s["sim mean (s)"], s["live/sim mean"]) == (1.5, 2.0)
    result = Result("w", 2, 2, 1.5, runs)
    record = json.loads(json.dumps(result.as_dict()))
    assert record["slots"] == 4 and record["reporting_cutoff_s"] == 1.5
    assert record["runs"][2]["policy"] == "sparrow" and record["runs"][2]["sim_policy"] == "sparrow"
    assert record["runs"][0]["ratio"]["long"]["p99"] == 2.0
    assert record["runs"][0]["calibration"]["applied"]["network_delay_s"] == 0.0
    assert "over repeats:" in result.text() and "stock repeat 2: task overhead" in result.text()
    placed = "9 task(s) placed by the policy, 2 round(s) waited for a late answer, 1 round(s) fell"
    assert "sparrow repeat 1: task overhead" in result.text() and placed in result.text()
    assert record["runs"][2]["plugin"] == {"placed_tasks": 9, "late_rounds": 2, "fallback_rounds": 1}
    assert record["runs"][0]["plugin"] is None
    assert "stock repeat 2: task overhead" in result.text() and "answers: 3 of 4 correct, 1 WRONG" in result.text()
    assert record["runs"][1]["answers"]["wrong"] == 1 and record["runs"][0]["answers"] is None


def test_a_parameter_no_compared_policy_has_is_refused_before_any_cluster_use(tmp_path: Path) -> None:
    trace = Path(__file__).resolve().parents[2] / "workloads" / "examples" / "trace-tiny.toml"
    result = CliRunner().invoke(cli, ["sim-vs-live", str(trace), "--policy", "sparrow", "--param", "cutoff=3",
                                      "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "--param cutoff: no compared policy (sparrow)" in result.output
    assert "Traceback" not in result.output


# A WordCount run's tasks (relative to t0 = T0): job 0 is a map stage of two tasks and a reduce,
# job 1 one map and one reduce; container c2 was shrunk from +1.0 to +1.5 s and from +3.0 s on.
TASKS = pd.DataFrame({
    "job_id": [0, 0, 0, 1, 1, 1], "stage_id": [0, 0, 1, 2, 3, 3],
    "container_id": ["c1", "c2", "c1", "c2", "c2", "c1"],
    "launch_s": [0.1, 0.1, 1.2, 1.0, 2.9, 2.9], "finish_s": [1.1, 1.9, 2.0, 1.6, 3.4, 3.0],
    "status": ["succeeded", "succeeded", "succeeded", "succeeded", "succeeded", "fetchfailed"]})
# frozen containers (share 0): a shrunk second is no work at all
PREEMPTION = [{"container": "c2", "node": "n", "action": "suspend", "status": "ok", "at_epoch": T0 + 1.0, "share": 0.0},
              {"container": "c2", "node": "n", "action": "resume", "status": "skip", "at_epoch": T0 + 1.5},
              {"container": "c1", "node": "n", "action": "suspend", "status": "error", "at_epoch": T0 + 0.5},
              {"container": "c2", "node": "n", "action": "suspend", "status": "ok", "at_epoch": T0 + 3.0, "share": 0.0}]


def write_run(live: Path, preemption: bool = True) -> Path:
    """A replay's results directory: the event log above, its jobs.csv, meta.json and tasks.csv."""
    write_log(live)
    (live / "meta.json").write_text(json.dumps({"t0_epoch": T0, "state": "complete"}))
    pd.DataFrame({"job_id": [0, 1], "submit_s": [0.0, 1.0], "end_s": [2.7, 2.4],
                  "status": ["succeeded", "succeeded"]}).to_csv(live / "jobs.csv", index=False)
    TASKS.to_csv(live / "tasks.csv", index=False)
    if preemption:
        (live / "preemption.json").write_text(json.dumps(PREEMPTION))
    return live


def test_shrunk_time_is_from_an_acknowledged_suspend_to_the_next_resume(tmp_path: Path) -> None:
    path = write_run(tmp_path) / "preemption.json"
    assert shrunk_intervals(path) == {"c2": [(T0 + 1.0, T0 + 1.5, 0.0), (T0 + 3.0, math.inf, 0.0)]}
    assert shrunk_intervals(tmp_path / "none.json") == {}
    assert shrunk_time(T0 + 0.1, T0 + 1.9, shrunk_intervals(path)["c2"]) == pytest.approx(0.5)


def test_a_shrunk_container_still_works_at_its_share(tmp_path: Path) -> None:
    """Live, a queued or suspended task runs in a container shrunk to the agent's minimum share:
    each shrunk second is worth that share of a full-share one, and the simulator plays such tasks
    at that share."""
    live = write_run(tmp_path)
    commands = [dict(c, share=0.2) if c.get("share") is not None else c for c in PREEMPTION]
    (live / "preemption.json").write_text(json.dumps(commands))
    assert shrunk_time(T0 + 0.1, T0 + 1.9, shrunk_intervals(live / "preemption.json")["c2"]) == pytest.approx(0.4)
    assert offslot_share(live) == 0.2
    # job 1's map: 0.6 s on the executor, 0.5 s of it shrunk at 0.2 -> 0.1 + 0.1 s of work
    work = task_work(TASKS, T0, shrunk_intervals(live / "preemption.json"))
    assert work[TASKS["job_id"] == 1].iloc[0] == pytest.approx(0.6 - 0.5 * 0.8)
    (tmp_path / "none").mkdir()
    assert offslot_share(write_run(tmp_path / "none", preemption=False)) == 0.0


def test_a_run_without_recorded_shares_or_with_two_is_refused_by_name(tmp_path: Path) -> None:
    live = write_run(tmp_path)
    unrecorded = [{k: v for k, v in c.items() if k != "share"} for c in PREEMPTION]
    (live / "preemption.json").write_text(json.dumps(unrecorded))
    with pytest.raises(CompareError, match="preemption.json: a suspend of c2 without the share"):
        offslot_share(live)
    (live / "preemption.json").write_text(json.dumps(PREEMPTION[:3] + [dict(PREEMPTION[3], share=0.1)]))
    with pytest.raises(CompareError, match=r"different shares \(\[0.0, 0.1\]\).*--min-share"):
        offslot_share(live)


def test_measured_jobs_are_full_share_work_stages_in_sequence(tmp_path: Path) -> None:
    live = write_run(tmp_path)
    subs = [Submission(0, 0.0, "wc", WordCountJob("in", 1)), Submission(1, 1.0, "wc", WordCountJob("in", 1))]
    # job 0: map tasks 1.0 s and 1.8 - 0.5 shrunk = 1.3 s, reduce 0.8 s; job 1: map 0.6 - 0.5 = 0.1 s,
    # reduce 0.5 - 0.4 shrunk = 0.1 s (the failed attempt is not work)
    critical = measured_jobs(live, subs, "critical-path")
    assert [(j.job_id, j.submit) for j in critical] == [(0, 0.0), (1, 1.0)]
    assert [j.durations[0] for j in critical] == pytest.approx([1.3 + 0.8, 0.2])
    assert [j.estimate for j in critical] == pytest.approx([2.1, 0.2])
    assert [j.durations[0] for j in measured_jobs(live, subs, "serial")] == pytest.approx([1.0 + 1.3 + 0.8, 0.2])
    with pytest.raises(CompareError, match=r"no succeeded task of job\(s\) \[7\]"):
        measured_jobs(live, [*subs, Submission(7, 2.0, "wc", WordCountJob("in", 1))], "serial")


STAGE_TASKS = {0: 2, 1: 1, 2: 3, 3: 1, 4: 1, 6: 1}   # Spark's Number of Tasks per stage (2: skipped)
STAGE_SUBMITTED = {0: 0.05, 1: 1.15, 6: 1.05, 3: 2.55, 4: 2.65}   # after T0


def write_staged_run(live: Path) -> Path:
    """A run whose job 0 ran three Spark jobs: A (stage 0, then 1), B submitted at +2.5 s after A
    ended (stage 3, whose parent 2 was skipped: 2's parent is 1) and C submitted at +2.6 s while B
    ran (stage 4, no parent); job 1 ran stage 6 alone. No preemption: a task's work is its time.
    Job 0 ended at +3.2 s, job 1 at +1.7 s."""
    def start(job: int, submitted: float, stages: dict[int, list[int]], replayed: int) -> dict:
        return {"Event": "SparkListenerJobStart", "Job ID": job, "Submission Time": _ms(T0 + submitted),
                "Stage IDs": list(stages), "Properties": {"spark.jobGroup.id": f"schedbridge-job-{replayed}"},
                "Stage Infos": [{"Stage ID": s, "Parent IDs": p, "Number of Tasks": STAGE_TASKS[s]}
                                for s, p in stages.items()]}
    submitted = [{"Event": "SparkListenerStageSubmitted",
                  "Stage Info": {"Stage ID": s, "Submission Time": _ms(T0 + at)}} for s, at in STAGE_SUBMITTED.items()]
    events = [{"Event": "SparkListenerApplicationStart", "App ID": "application_1_0001", "Timestamp": _ms(T0)},
              start(0, 0.0, {0: [], 1: [0]}, 0), start(1, 1.0, {6: []}, 1),
              start(2, 2.5, {1: [0], 2: [1], 3: [2]}, 0), start(3, 2.6, {4: []}, 0), *submitted]
    pd.DataFrame({"job_id": [0, 1], "submit_s": [0.0, 1.0], "end_s": [3.2, 1.7],
                  "status": ["succeeded", "succeeded"]}).to_csv(live / "jobs.csv", index=False)
    (live / "eventlogs").mkdir(parents=True)
    (live / "eventlogs" / "application_1_0001").write_text("".join(json.dumps(e) + "\n" for e in events))
    (live / "meta.json").write_text(json.dumps({"t0_epoch": T0, "state": "complete"}))
    pd.DataFrame({"job_id": [0, 0, 0, 0, 0, 1], "stage_id": [1, 0, 0, 3, 4, 6], "task_id": [3, 2, 1, 4, 5, 6],
                  "container_id": ["c1"] * 6, "launch_s": [1.2, 0.1, 0.1, 2.6, 2.7, 1.1],
                  "finish_s": [2.0, 1.0, 1.1, 3.0, 2.9, 1.6], "status": ["succeeded"] * 6}
                 ).to_csv(live / "tasks.csv", index=False)
    return live


def test_the_tasks_model_keeps_every_task_in_its_stages_with_sparks_parents(tmp_path: Path) -> None:
    live = write_staged_run(tmp_path)
    subs = [Submission(0, 0.0, "wc", WordCountJob("in", 1)), Submission(1, 1.0, "wc", WordCountJob("in", 1))]
    job, other = measured_jobs(live, subs, "tasks")
    # stages 0, 1, 3, 4 in order (tasks by launch, then id); 3 waits for 1 through skipped 2; C's
    # stage 4 waits for what had ended when C was submitted (0 and 1), not for B's stage 3
    assert job.durations == pytest.approx((1.0, 0.9, 0.8, 0.4, 0.2))
    assert job.stage_of == (0, 0, 1, 2, 3) and job.stage_parents == ((), (0,), (1,), (0, 1))
    assert job.estimate == pytest.approx(3.3 / 5)
    assert (other.durations, other.stage_of, other.stage_parents) == (pytest.approx((0.5,)), (0,), ((),))
    # the simulator plays the DAG, on two slots: stage 0 (1.0 beside 0.9), 1 (0.8), then 3 (0.4)
    # beside 4 (0.2): 2.2 s (without the stages, 3.3 s of work on two slots ends by 1.7 s)
    shape = uniform(2, 1)
    spec = shape.spec(0.0)
    falcon = create("falcon", PolicyEnv(spec, 1), config_for("falcon", {"masters": "1"}))  # one master: both nodes
    result = Simulation(shape.with_demands(apply([job], NONE)), falcon, spec).run()
    assert result.log.job_finish[0] == pytest.approx(2.2, abs=0.01)
    (live / "eventlogs" / "application_1_0001").write_text("")
    with pytest.raises(CompareError, match=r"job 0: stage\(s\) \[0, 1, 3, 4\] ran but no Spark job"):
        measured_jobs(live, subs, "tasks")


def test_the_stages_model_plays_each_stage_as_a_job_arriving_when_its_parents_end(tmp_path: Path) -> None:
    live = write_staged_run(tmp_path)
    subs = [Submission(0, 0.0, "wc", WordCountJob("in", 1)), Submission(1, 1.0, "wc", WordCountJob("in", 1))]
    play = stage_play(live, subs)
    # job 0's stages 0, 1, 3, 4, then job 1's 6; each after its parents (3 after 1 through skipped 2;
    # C's 4 after what had ended when C was submitted) by the gap from the last parent's last task
    # to its submission; a first stage by its delay after the job's live submission
    assert [j.durations for j in play.jobs] == [pytest.approx(d) for d in ((1.0, 0.9), (0.8,), (0.4,), (0.2,), (0.5,))]
    assert [j.after for j in play.jobs] == [(), (0,), (1,), (0, 1), ()]
    assert [j.after_gap for j in play.jobs] == pytest.approx([0.0, 0.05, 0.55, 0.65, 0.0])
    assert [j.submit for j in play.jobs] == pytest.approx([0.05, 0.0, 0.0, 0.0, 1.05])
    assert play.owner == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1} and play.tail == pytest.approx({0: 0.2, 1: 0.1})
    # what the live engine tells a policy: no estimate set (TPC-H, WordCount), and a stage's successors
    # are the later stages of its Spark job with their task counts
    assert {j.estimate for j in play.jobs} == {LIVE_ESTIMATE}
    assert play.jobs[0].successors == (Successor(1, LIVE_ESTIMATE, (-1,)),)
    assert play.jobs[1].successors == ()
    # FIFO on two slots: stage 0 ends 1.05; job 1's stage from 1.05 to 1.55; stage 1 from 1.10 to
    # 1.90; then 3 (arrives 2.45) to 2.85 and 4 (arrives 2.55) to 2.75; plus the tails
    frame = predict_stages(play, "fifo", {}, 2, 1, 1, NONE, 1.0, tmp_path / "sim.csv",
                           {j.job_id: j for j in measured_jobs(live, subs, "stages")})
    assert frame.set_index("job_id")["finish"].to_dict() == pytest.approx({0: 3.05, 1: 1.65})
    assert frame.set_index("job_id")["submit"].to_dict() == {0: 0.0, 1: 1.0}
    assert (tmp_path / "sim.csv").is_file()
    log = live / "eventlogs" / "application_1_0001"
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines()
                           if "StageSubmitted" not in line or '"Stage ID": 3' not in line))
    with pytest.raises(CompareError, match="job 0: stage 3 ran but its event log has no SparkListenerStageSubmitted"):
        stage_play(live, subs)


def wordcount_workload(tmp_path: Path) -> Path:
    """Two one-input WordCount jobs, a second apart: a workload without trace durations."""
    workload = tmp_path / "wc.toml"
    workload.write_text('name = "wc"\nseed = 1\njobs = 2\narrival = "fixed"\nmean_interarrival_s = 1.0\n'
                        '[inputs.i]\nkind = "wordcount"\nsize_mb = 1\nblock_mb = 1\n'
                        '[categories.c]\nkind = "wordcount"\ninput = "i"\nreduces = 1\nprobability = 1.0\n')
    return workload


def test_the_job_model_defaults_to_stages_only_where_the_workload_has_no_trace_durations(tmp_path: Path) -> None:
    wordcount = Comparison.prepare(wordcount_workload(tmp_path), ["stock"], 1, 2, None, None, {}, False, None)
    assert wordcount.job_model == "stages" and "measured from each live run (stages)" in wordcount.durations
    trace = Path(__file__).resolve().parents[2] / "workloads" / "examples" / "trace-tiny.toml"
    for model in (None, "tasks"):   # a trace plays its own durations, whatever the model
        traced = Comparison.prepare(trace, ["stock"], 1, 2, None, None, {}, False, None, model)
        assert traced.job_model is None and traced.durations == session.TRACE_DURATIONS and traced.jobs


def test_the_job_model_option_reaches_the_comparison_and_its_help_states_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[str | None] = []

    def prepare(*args: object, **kwargs: object) -> Comparison:
        given.append(args[-1])  # type: ignore[arg-type]
        raise CompareError("stopped before any live run")

    monkeypatch.setattr(Comparison, "prepare", prepare)
    workload = wordcount_workload(tmp_path)
    for extra in ([], ["--job-model", "critical-path"]):
        result = CliRunner().invoke(cli, ["sim-vs-live", str(workload), "--policy", "stock", *extra,
                                          "--out", str(tmp_path / "o")])
        assert result.exit_code == 1 and "stopped before any live run" in result.output
    assert given == [None, "critical-path"]
    help_text = " ".join(CliRunner().invoke(cli, ["sim-vs-live", "--help"]).output.split())
    assert "(serial), stages in sequence [default: stages]." in help_text


def test_a_workload_without_trace_durations_is_simulated_from_each_runs_measured_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock"], 1, 2, None, None, {}, False, None,
                                    "critical-path")
    assert comparison.cutoff is None and "measured from each live run (critical-path)" in comparison.durations

    seeds: list[int] = []

    def live(policy: str, seed: int, directory: Path, repeat: int) -> Path:
        seeds.append(seed)
        return write_run(directory / "live", preemption=False)

    monkeypatch.setattr(comparison, "_live", live)
    result = comparison.run(2, tmp_path / "out")
    assert seeds == [1, 2] and [r.seed for r in result.runs] == [1, 2]   # repeat R: the workload's seed + R - 1
    played = read_trace(tmp_path / "out" / "stock" / "repeat-1" / "sim.trace")
    assert [j.durations for j in played] == [pytest.approx((1.8 + 0.8,)), pytest.approx((0.6 + 0.5,))]
    run = result.runs[0]
    assert run.calibration.task_overhead_s == 0 and run.calibration.samples["tasks"] == 0
    # fifo on 1 x 2 slots: both jobs run at once, each its measured work plus the job overheads and
    # the launch's one-way network delay (calibrated)
    overheads = run.calibration.job_start_s + run.calibration.job_end_s + run.calibration.network_delay_s
    sim = pd.read_csv(tmp_path / "out" / "stock" / "repeat-1" / "sim.csv")
    assert list(sim["completion_time"]) == pytest.approx([2.6 + overheads, 1.1 + overheads], abs=1e-6)
    assert result.cutoff == pytest.approx(percentile([2.6, 1.1], 90))
    # whole runs: every attempt's work, 4.8 s live (3.7 s played), over 2 slots x the makespan
    assert run.live_totals == pytest.approx({"makespan_s": 2.7, "throughput_per_min": 60 * 2 / 2.7,
                                             "utilization": 4.8 / (2 * 2.7)})
    makespan = 2.6 + overheads
    assert run.sim_totals == pytest.approx({"makespan_s": makespan, "throughput_per_min": 120 / makespan,
                                            "utilization": 3.7 / (2 * makespan)})
    assert "whole runs (utilization" in result.text() and "makespan (s) live/sim" in result.text()
    assert "simulated durations: measured from each live run" in result.text()
    assert result.as_dict()["sim_durations"] == comparison.durations


def test_the_study_trace_is_the_generators_shrunk_trace(tmp_path: Path) -> None:
    """The placement study's trace file is what its documented command writes (docs/sim-to-real.md)."""
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "y.trace"
    result = CliRunner().invoke(cli, ["trace", "generate", "yahoo", "--jobs", "100", "--seed", "3", "--load", "0.9",
                                      "--nodes", "640", "--shrink", "0.05", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "shrunk x0.05: 265 tasks, largest job 39" in result.output
    assert out.read_text() == (root / "workloads" / "examples" / "traces" / "yahoo-testbed.trace").read_text()


def test_a_policy_the_simulator_cannot_run_stops_the_comparison_before_any_live_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = Path(__file__).resolve().parents[2] / "workloads" / "examples" / "trace-tiny.toml"

    def live(self: Comparison, policy: str, seed: int, directory: Path, repeat: int) -> Path:
        raise AssertionError(f"{policy} was run live")

    monkeypatch.setattr(Comparison, "_live", live)
    result = CliRunner().invoke(cli, ["sim-vs-live", str(trace), "--policy", "hawk", "--policy", "eagle",
                                      "--param", "queue_pick=newest", "--out", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output
    assert "eagle cannot be simulated on" in result.output and "queue_pick must be" in result.output
    assert "nothing was run" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_a_failed_simulation_keeps_the_live_run_and_the_other_policies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock", "hawk"], 1, 2, None, None, {}, False, None,
                                    "critical-path")
    real = session.predict

    def predict(jobs: list[Job], policy: str, *args: object, **kwargs: object) -> pd.DataFrame:
        if policy == "hawk":
            raise CompareError("hawk: 1 job(s) never finished in the simulation (first: [0])")
        return real(jobs, policy, *args, **kwargs)

    monkeypatch.setattr(comparison, "_live",
                        lambda policy, seed, directory, repeat: write_run(directory / "live", False))
    monkeypatch.setattr(session, "predict", predict)
    result = comparison.run(1, tmp_path / "out")
    stock, hawk = result.runs
    assert stock.sim_error is None and stock.sim["short"]["count"] + stock.sim["long"]["count"] == 2
    assert hawk.sim_error == "hawk: 1 job(s) never finished in the simulation (first: [0])"
    assert hawk.live == stock.live and math.isnan(hawk.sim["short"]["p50"]) and math.isnan(hawk.ratio("short", "p50"))
    assert "simulations that failed (their live figures stand):\n  hawk repeat 1: hawk: 1 job(s)" in result.text()
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [r["sim_error"] for r in saved["runs"]] == [None, hawk.sim_error]


def _complete(live: Path, policy: str, seed: int = 1, workload: str = "wc") -> Path:
    write_run(live, preemption=False)
    params = {} if policy == "stock" else {"seed": str(seed)}
    (live / "meta.json").write_text(json.dumps({"t0_epoch": T0, "state": "complete", "workload": workload,
                                                "policy": policy, "params": params}))
    return live


def test_resume_reuses_complete_runs_and_runs_again_only_the_rest(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """stock's run is complete and reused; hawk's was interrupted: moved aside, run again."""
    out = tmp_path / "out"
    _complete(out / "stock" / "repeat-1" / "live", "stock")
    interrupted = out / "hawk" / "repeat-1" / "live"
    interrupted.mkdir(parents=True)
    (interrupted / "meta.json").write_text(json.dumps({"state": "running"}))
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock", "hawk"], 1, 2, None, None, {}, False, None,
                                    "critical-path")
    comparison.resume = True
    replayed: list[tuple[str, int]] = []

    def replay(policy: str, seed: int, results: Path, estimates: Path | None = None) -> Path:
        replayed.append((policy, seed))
        return _complete(results, policy, seed)

    monkeypatch.setattr(comparison, "_replay", replay)
    result = comparison.run(1, out)
    assert replayed == [("hawk", 1)]
    assert (out / "hawk" / "repeat-1" / "live.incomplete-1" / "meta.json").is_file()
    assert [r.sim_error for r in result.runs] == [None, None] and (out / "results.json").is_file()


def test_a_stand_in_runs_live_through_the_replay_without_a_policy_seed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock-fair", "hawk"], 1, 2, None, None, {}, False,
                                    None)
    commands: list[list[str]] = []
    monkeypatch.setattr(session.subprocess, "Popen",
                        lambda command, **kwargs: commands.append(command) or SimpleNamespace(wait=lambda: 0, pid=-1))
    for policy in ("stock-fair", "hawk"):
        with pytest.raises(CompareError, match=f"the live run of {policy} ended with exit status 0, state not started"):
            comparison._replay(policy, 5, tmp_path / policy)
    fair, hawk = (" ".join(c[c.index("replay"):]) for c in commands)
    assert "--policy stock-fair" in fair and "seed=" not in fair
    assert "--policy hawk" in hawk and "--param seed=5" in hawk


def test_resume_refuses_another_comparisons_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _complete(out / "hawk" / "repeat-1" / "live", "hawk", seed=9)
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["hawk"], 1, 2, None, None, {}, False, None,
                                    "critical-path")
    comparison.resume = True
    with pytest.raises(CompareError, match=r"repeat-1/live/meta.json: a run of workload wc, policy hawk, seed 9; "
                                           r"--resume needs wc, hawk, seed 1 there"):
        comparison.run(1, out)


def test_a_run_whose_jobs_cannot_be_measured_keeps_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hawk's run lost job 1's tasks: its simulation cannot be played, stock's stands (a study of
    fifteen live runs once ended with no table at all on one such run)."""
    comparison = Comparison.prepare(wordcount_workload(tmp_path), ["stock", "hawk"], 1, 2, None, None, {}, False, None,
                                    "critical-path")

    def live(policy: str, seed: int, directory: Path, repeat: int) -> Path:
        run = write_run(directory / "live", preemption=False)
        if policy == "hawk":
            TASKS[TASKS["job_id"] == 0].to_csv(run / "tasks.csv", index=False)
        return run

    monkeypatch.setattr(comparison, "_live", live)
    stock, hawk = comparison.run(1, tmp_path / "out").runs
    assert stock.sim_error is None and "no succeeded task of job(s) [1]" in str(hawk.sim_error)
    assert hawk.live["short"]["count"] + hawk.live["long"]["count"] == 2


def test_a_task_shrunk_from_launch_to_finish_has_no_work_not_less(tmp_path: Path) -> None:
    """A real run's task (falcon, mission-study): shrunk over all its life, its work rounded to
    -7e-15 and stopped the simulation ("task durations must be finite and >= 0")."""
    t0, launch, finish = 1795779507.9438496, 44.40415048599243, 44.60815048217773
    assert finish - launch - ((t0 + finish) - (t0 + launch)) < 0   # the rounding, without the floor
    tasks = pd.DataFrame({"launch_s": [launch], "finish_s": [finish], "container_id": ["c"]})
    work = task_work(tasks, t0, {"c": [(t0 + 44.38098073005676, t0 + 44.71036171913147, 0.0)]})
    assert work.tolist() == [0.0]


@pytest.mark.parametrize("command", ["sim-vs-live", "replay"])
def test_a_minimum_share_without_preempt_is_refused(tmp_path: Path, command: str) -> None:
    result = CliRunner().invoke(cli, [command, str(wordcount_workload(tmp_path)), "--policy", "kairos",
                                      "--min-share", "0.02", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "the node agents' share is for --preempt only" in result.output
    assert "Traceback" not in result.output
