"""How a replayed job reaches the cluster: as a job of one shared Spark application, or as its
own Spark application. Both run `bridge.replay.jobs.run_job`, so the Spark work is identical.

A launcher's `run` blocks on the calling (replay) thread until the job ends and reports an
`Outcome`; `cancel_all` makes every running `run` return soon with status "killed". With
``alone=True`` the job runs under its alone group (`jobs.job_group`), outside the replay's
records: `replay --measure-alone` times it.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pyspark.sql import SparkSession

from bridge.drivers.planners import RoundPlanner
from bridge.nodes.cluster_agents import NodeAgents
from bridge.plugin import inprocess as spark_inprocess
from bridge.replay import child
from bridge.replay.jobs import job_group, run_job
from bridge.replay.policy import open_session, submit_command
from bridge.replay.preemption import PreemptiveSession
from policies.framework.registry import stand_in
from workloads.spec import Submission, TpchJob, submission_to_json

TERMINATE_GRACE_S = 30.0
STATS_KEY = "spark.schedbridge.stats.file"
WARM_UP_GROUP = "schedbridge-warm-up"  # the job group of what runs before time 0, never replayed
SQL_WARM_UP_ROUNDS = 3  # enough for the tasks' code to reach its compiled form on every executor (JIT)
POOL_PROP = "spark.scheduler.pool"  # the local property that puts a thread's Spark jobs in a scheduler pool


@dataclass(frozen=True)
class Outcome:
    status: str  # succeeded | failed | killed
    error: str = ""
    answer: Any = None  # what the job computed (`bridge.replay.answers`), if it succeeded


class Launcher(Protocol):
    def run(self, submission: Submission, alone: bool = False) -> Outcome: ...

    def cancel_all(self) -> None: ...

    def close(self) -> None: ...

    def estimates_used(self) -> list[dict[str, object]]:
        """Each user job's runtime estimate as the policy was told it (rows), where this process
        hosted the policy."""
        ...

    def demand_faults(self) -> Mapping[str, int]:
        """Declared task demands the policy could not use as given, by kind, where this process
        hosted the policy."""
        ...


_EXCEPTION_LINE = re.compile(r"^[\w.$]+(Error|Exception)\b")


def failure_summary(text: str) -> str:
    """The most telling line of a failure: the last line naming an exception, else the last line."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    named = [line for line in lines if _EXCEPTION_LINE.match(line)]
    return (named or lines or [""])[-1][:500]


def runs_sql(submissions: Sequence[Submission]) -> bool:
    """True if any of the jobs runs Spark SQL (a TPC-H query), which the warm-up then rehearses."""
    return any(s.kind == TpchJob.kind for s in submissions)


def warm_up(spark: SparkSession, sql: bool) -> None:
    """Start every executor's Python workers and, with ``sql``, run Spark SQL's shuffle,
    aggregation, join and sort on each before time 0, as a long-running application would have;
    outside any replayed job group, so it is not recorded. Without the SQL rounds a cold
    executor's first query tasks cost several times the CPU of later ones (measured under Kairos'
    8 executors: a query's first tasks on an executor 2-9x its later ones), which charges a policy
    for the number of executors it runs, not for its decisions; a workload without queries skips
    them (about 7 s of start-up)."""
    sc = spark.sparkContext
    sc.setJobGroup(WARM_UP_GROUP, "warm-up")
    slots = max(sc.defaultParallelism, 1) * 2
    sc.parallelize(range(slots), slots).map(lambda x: x).count()
    for _ in range(SQL_WARM_UP_ROUNDS if sql else 0):
        facts = spark.range(0, 100_000, numPartitions=slots).selectExpr("id % 997 AS k", "id AS v")
        keys = spark.range(0, 997, numPartitions=slots).selectExpr("id AS k", "id * 2 AS w")
        facts.groupBy("k").agg({"v": "sum", "*": "count"}).join(keys, "k").orderBy("k").collect()


class SharedApplication:
    """Jobs as concurrent Spark jobs of one long-running application (the Sparrow/Eagle setting)."""

    def __init__(self, policy: str, conf: dict[str, str], env: dict[str, str],
                 inputs: dict[str, str], sql: bool, preempt: tuple[NodeAgents, Path] | None = None) -> None:
        """``sql``: some replayed job runs Spark SQL (``runs_sql``), so the warm-up rehearses it;
        ``preempt``: run the policy's node scheduler live (`--preempt`) through these agents, its
        files in that directory."""
        os.environ.update(env)  # read by the Spark JVM that the session launches
        self._preemptive: PreemptiveSession | None = None
        before = spark_inprocess.attached()
        if preempt is None:
            self.spark = open_session(policy, conf, conf["spark.app.name"])
        else:
            self._preemptive = PreemptiveSession(policy, conf, conf["spark.app.name"], preempt[1], preempt[0])
            self.spark = self._preemptive.spark
        host = spark_inprocess.attached()
        self._host = host if host is not before else None  # stock Spark attaches none
        warm_up(self.spark, sql)
        self._inputs = inputs
        self._cancelled = threading.Event()
        self._stand_in = stand_in(policy)

    def run(self, submission: Submission, alone: bool = False) -> Outcome:
        self._enter_pool(submission.job_id)
        try:
            answer = run_job(self.spark, submission, self._inputs, job_group(submission.job_id, alone))
        except Exception as exc:  # noqa: BLE001 - any job failure is a result, not a crash
            status = "killed" if self._cancelled.is_set() else "failed"
            return Outcome(status, failure_summary(str(exc)))
        return Outcome("succeeded", answer=answer)

    def _enter_pool(self, job_id: int) -> None:
        """Put this thread's Spark jobs, those of the job about to run, in the job's own scheduler
        pool when the stand-in asks for one (`StandIn.pool`: Spark's FAIR scheduler then shares
        the executors between replayed jobs, not between their Spark jobs)."""
        pool = self._stand_in.pool(job_id) if self._stand_in is not None else None
        if pool is not None:
            self.spark.sparkContext.setLocalProperty(POOL_PROP, pool)

    def cancel_all(self) -> None:
        self._cancelled.set()
        self.spark.sparkContext.cancelAllJobs()

    def close(self) -> None:
        if self._preemptive is not None:
            self._preemptive.close()
        else:
            self.spark.stop()

    @property
    def _planner(self) -> RoundPlanner | None:
        """The planner of the policy host this process ran (None under stock Spark)."""
        return None if self._host is None else self._host.planner

    def estimates_used(self) -> list[dict[str, object]]:
        planner = self._planner
        return [] if planner is None else planner.estimates_used()

    def demand_faults(self) -> Mapping[str, int]:
        planner = self._planner
        return {} if planner is None else planner.demand_faults()


def _label(submission: Submission, alone: bool) -> str:
    """A per-job application's name suffix, counters and log file: ``job-<id>``, ``alone-<id>``."""
    return f"{'alone' if alone else 'job'}-{submission.job_id}"


class PerJobApplications:
    """Each job as its own Spark application, submitted with `spark-submit` (client mode)."""

    def __init__(self, policy: str, conf: dict[str, str], env: dict[str, str],
                 inputs: dict[str, str], log_dir: Path) -> None:
        os.environ.update(env)  # the plugin's submit wrapper reads HADOOP_CONF_DIR from here
        self._policy, self._conf, self._env, self._inputs = policy, conf, env, inputs
        self._log_dir = log_dir
        self._procs: dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def command(self, submission: Submission, alone: bool = False) -> list[str]:
        """`spark-submit` of the job's application; ``alone``: its run alone, under its own name."""
        label = _label(submission, alone)
        app_name = f"{self._conf['spark.app.name']}-{label}"
        conf = {**self._conf, "spark.app.name": app_name}
        if STATS_KEY in conf:  # one counters file per application
            conf[STATS_KEY] = str(Path(conf[STATS_KEY]).with_name(f"{label}.json"))
        args = ["--deploy-mode", "client"]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        return submit_command(self._policy, [
            *args, child.__file__, self._policy, app_name, submission_to_json(submission),
            json.dumps(self._inputs), job_group(submission.job_id, alone), str(self._answer_path(submission, alone))])

    def _answer_path(self, submission: Submission, alone: bool) -> Path:
        """Where the job's application leaves its answer (`bridge.replay.child`)."""
        return self._log_dir / f"{_label(submission, alone)}.answer.pickle"

    def run(self, submission: Submission, alone: bool = False) -> Outcome:
        log_path = self._log_dir / f"{_label(submission, alone)}.log"
        with self._lock:
            if self._cancelled.is_set():
                return Outcome("killed")
            with log_path.open("w") as log:
                proc = subprocess.Popen(self.command(submission, alone), env=self._env, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            self._procs[submission.job_id] = proc
        code = proc.wait()
        with self._lock:
            del self._procs[submission.job_id]
        if code == 0:
            answer = self._answer_path(submission, alone)
            return Outcome("succeeded", answer=pickle.loads(answer.read_bytes()) if answer.is_file() else None)
        status = "killed" if self._cancelled.is_set() else "failed"
        return Outcome(status, f"exit {code}: {failure_summary(log_path.read_text(errors='replace'))}")

    def cancel_all(self) -> None:
        """Terminate every child we started (its shutdown hook stops its YARN application)."""
        with self._lock:
            self._cancelled.set()
            procs = list(self._procs.values())
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(TERMINATE_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()

    def close(self) -> None:
        """Nothing to release: each application ended with its job."""

    def estimates_used(self) -> list[dict[str, object]]:
        """Each application's policy host ran beside its own driver: none here."""
        return []

    def demand_faults(self) -> Mapping[str, int]:
        """Each application's policy host ran beside its own driver: its log says them."""
        return {}
