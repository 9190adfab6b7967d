"""Replays on the real local testbed: a shared application and one application per job (with a
failing job), both read back by `report`. (Replays under the other policies: the shared demo's
sim-vs-live runs, and the `--preempt` tests.)"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.report.cli import report
from bridge.replay.cli import build_plan
from bridge.replay.launchers import WARM_UP_GROUP
from bridge.replay.runner import Replay
from tests.integration.process_output import failure_excerpt
from workloads.spec import Submission, WordCountJob
from yarnclient.resourcemanager import ResourceManagerClient

pytestmark = pytest.mark.integration

WORKLOAD = """
name = "it-small"
seed = 5
jobs = 4
arrival = "fixed"
mean_interarrival_s = 3.0

[inputs.wc]
kind = "wordcount"
size_mb = 2
block_mb = 1

[inputs.db]
kind = "tpch"
scale_factor = 0.01

[categories.wc]
kind = "wordcount"
input = "wc"
reduces = 2
probability = 0.5

[categories.q]
kind = "tpch"
input = "db"
queries = [6]
probability = 0.5
"""


@pytest.fixture(scope="module")
def workload_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("workload") / "it-small.toml"
    path.write_text(WORKLOAD)
    return path


def replay_under(policy: str, workload_file: Path, results: Path, testbed) -> Path:
    """The real command in its own process (a shared application's JVM must see the cluster's
    HADOOP_CONF_DIR when it starts, which an earlier in-process SparkSession would prevent)."""
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "replay",
               str(workload_file), "--policy", policy, "--out", str(results),
               "--hadoop-conf-dir", str(testbed.conf_dir)]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    assert "replay complete" in done.stdout
    return results


@pytest.fixture(scope="module")
def shared_run(testbed, workload_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return replay_under("fifo", workload_file, tmp_path_factory.mktemp("runs") / "fifo", testbed)


@pytest.fixture(scope="module")
def per_job_run(testbed, workload_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The per-job mode in-process: a job whose input is missing, then a WordCount job."""
    plan, _ = build_plan(workload_file, "fifo", "per-job", tmp_path_factory.mktemp("per-job") / "r",
                         testbed.conf_dir, {})
    subs = (Submission(0, 0.0, "bad", WordCountJob("missing", 1)),
            Submission(1, 1.0, "wc", WordCountJob("wc", 1)))
    plan = replace(plan, submissions=subs, inputs={**plan.inputs, "missing": f"{testbed.fs_default}/no/such/file"})
    assert Replay(plan, ResourceManagerClient(testbed.rm_url)).run() == "complete"
    return plan.results


def assert_consistent(results: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    jobs, tasks = pd.read_csv(results / "jobs.csv"), pd.read_csv(results / "tasks.csv")
    done = jobs[jobs["status"] == "succeeded"]
    assert (done["submit_s"] <= done["start_s"]).all() and (done["start_s"] <= done["end_s"]).all()
    assert (tasks["launch_s"] <= tasks["finish_s"]).all()
    assert set(tasks["job_id"]) == set(done["job_id"])
    counts = tasks.groupby("job_id").size()
    assert (done.set_index("job_id")["n_tasks"] == counts.loc[done["job_id"]]).all()
    assert tasks["node"].str.match(r"^[\w.-]+:\d+$").all()  # YARN node ids: placements known
    return jobs, tasks


def assert_policy_placed(plugin: dict, recorded_tasks: int) -> None:
    """The plugin's counters in meta.json: every recorded task launched by some path (the warm-up
    job's are counted too), at least 90% by the policy; a fallback round or a failed report (a policy
    call past its 50 ms deadline on this loaded 2-core machine) is a fault, counted and named, never
    silent: the last one is named exactly when one was counted (BridgeStats, replay's own summary)."""
    launched = plugin["placed_tasks"] + plugin["fallback_tasks"]
    assert launched >= recorded_tasks and plugin["placed_tasks"] >= 0.9 * launched, plugin
    faults = plugin["fallback_rounds"] + plugin["failed_reports"]
    assert (faults == 0) == (plugin["last_failure"] == ""), plugin


def test_a_shared_application_gives_complete_consistent_results(shared_run: Path) -> None:
    jobs, tasks = assert_consistent(shared_run)
    assert len(jobs) == 4 and (jobs["status"] == "succeeded").all()
    meta = json.loads((shared_run / "meta.json").read_text())
    assert meta["state"] == "complete"
    assert_policy_placed(meta["plugin"], len(tasks))
    utilization = pd.read_csv(shared_run / "utilization.csv")
    assert (utilization["vcores_allocated"] <= utilization["vcores_total"]).all(), utilization
    assert utilization["run_vcores_allocated"].max() > 0, utilization  # the sampler saw the run's containers
    wordcount = jobs[jobs["kind"] == "wordcount"]
    # 2 MB in 1 MB blocks -> 2 map tasks, plus 2 reduce tasks
    assert len(wordcount) > 0 and (wordcount["n_tasks"] == 4).all()
    checked = pd.read_csv(shared_run / "answers.csv")   # TPC-H against DuckDB, WordCount against a count
    assert checked["answer"].tolist() == ["correct"] * 4 and set(checked["kind"]) == {"wordcount", "tpch"}, checked
    assert meta["answers"] == {"correct": 4, "wrong": 0, "missing": 0, "none": 0}


def test_every_executor_runs_sql_in_the_warm_up_before_time_0(shared_run: Path) -> None:
    """The shared application's warm-up (`launchers.warm_up`) runs Spark SQL on every
    executor, outside the replayed jobs' groups: without it a cold executor's first query tasks
    cost several times the CPU of its later ones, which charges a policy for its executor count."""
    events = [json.loads(line) for log in (shared_run / "eventlogs").rglob("*") if log.is_file()
              for line in log.open()]
    warm_sql_stages = {stage for e in events if e["Event"] == "SparkListenerJobStart"
                       and e["Properties"].get("spark.jobGroup.id") == WARM_UP_GROUP
                       and "spark.sql.execution.id" in e["Properties"] for stage in e["Stage IDs"]}
    executors = {e["Executor ID"] for e in events if e["Event"] == "SparkListenerExecutorAdded"}
    warmed = {e["Task Info"]["Executor ID"] for e in events
              if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in warm_sql_stages}
    assert executors and warmed == executors, (warmed, executors)


@pytest.mark.long  # make test-long: a live variant (one application per job, one failing)
def test_per_job_mode_records_a_failed_job_and_continues(testbed, per_job_run: Path) -> None:
    jobs, tasks = assert_consistent(per_job_run)
    assert list(jobs["status"]) == ["failed", "succeeded"]
    # each application hosted fifo beside its own driver (they fell back to Spark before) and said so
    plugin = json.loads((per_job_run / "meta.json").read_text())["plugin"]
    assert plugin["applications"] == 2
    assert_policy_placed(plugin, len(tasks))
    assert "exit" in jobs.loc[0, "error"]
    # the second application's answer came back through its file and was checked
    assert pd.read_csv(per_job_run / "answers.csv")["answer"].tolist() == ["missing", "correct"]
    live = ResourceManagerClient(testbed.rm_url).apps(states=["NEW", "SUBMITTED", "ACCEPTED", "RUNNING"])
    assert not [a for a in live if a.name.startswith("schedbridge-it-small")]


@pytest.mark.long  # make test-long: needs the per-job run
def test_report_on_the_two_runs(shared_run: Path, per_job_run: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(report, [str(shared_run), str(per_job_run), "--out", str(tmp_path),
                                         "--cutoff", "1000000"])  # every job short: its rows are all jobs
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "report.csv", index_col=0)
    assert list(table.columns) == ["fifo shared (live)", "fifo per-job (live)"]
    for label, run in zip(table.columns, (shared_run, per_job_run)):
        jobs = pd.read_csv(run / "jobs.csv")
        done = jobs[jobs["status"] == "succeeded"]
        expected = {"jobs": len(jobs), "succeeded": len(done), "failed": int((jobs["status"] == "failed").sum()),
                    "short mean JCT (s)": float(np.mean(done["end_s"] - done["submit_s"]))}
        for measure, value in expected.items():
            assert table.loc[measure, label] == pytest.approx(value, rel=1e-9), (measure, label)
    for name in ("jct_cdf.png", "slowdown_cdf.png", "utilization.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


LEARN_WORKLOAD = """
name = "it-learn"
seed = 5
jobs = 2
arrival = "fixed"
mean_interarrival_s = 12.0

[inputs.wc]
kind = "wordcount"
size_mb = 1
block_mb = 1

[categories.wc]
kind = "wordcount"
input = "wc"
reduces = 1
probability = 1.0
"""


@pytest.mark.long  # make test-long: a live variant (learn); make test runs estimates from a file live, in the demo
def test_learn_tells_a_recurring_job_what_its_finished_run_took(testbed, tmp_path: Path) -> None:
    """Two runs of one WordCount, the second submitted 12 s after the first (which ends in a few):
    with learn=true the policy host tells the first the default estimate and the second the mean
    of the first's successful task times, as the event log has them."""
    (tmp_path / "learn.toml").write_text(LEARN_WORKLOAD)
    results = tmp_path / "fifo"
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "replay", str(tmp_path / "learn.toml"),
               "--policy", "fifo", "--param", "learn=true", "--out", str(results),
               "--hadoop-conf-dir", str(testbed.conf_dir)]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    told = pd.read_csv(results / "user-jobs.csv").set_index("occurrence")
    first, second = told.loc["schedbridge-job-0"], told.loc["schedbridge-job-1"]
    assert (first["key"], first["source"], first["estimate_s"]) == ("job:wc", "default", 1.0)
    assert (second["key"], second["source"]) == ("job:wc", "learned"), told
    tasks = pd.read_csv(results / "tasks.csv")
    ran = tasks[(tasks["job_id"] == 0) & (tasks["status"] == "succeeded")]
    # the host times a task from the scheduler's report of its end, a few ms before the listener's
    # finish time that the event log keeps (measured: 12 ms on a 2.8 s mean)
    assert second["estimate_s"] == pytest.approx((ran["finish_s"] - ran["launch_s"]).mean(), abs=0.05)
    assert json.loads((results / "meta.json").read_text())["estimates"]["learned"] == 1
