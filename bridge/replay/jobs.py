"""Running one submission inside a SparkSession, whatever its kind.

The same function runs a job in the shared application (on a replay thread) and in a
per-job application (`bridge.replay.child`), so both modes execute identical Spark work.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from bridge.drivers.estimates import JOB_NAME_PROP
from bridge.drivers.user_jobs import ESTIMATE_PROP
from workloads import tasksjob
from workloads.demands import DEMAND_PROP
from workloads.spec import Submission, TasksJob, TpchJob, WordCountJob, declared_demands
from workloads.tpch.spark import register_tables, run_query
from workloads.wordcount import job as wordcount


def job_group(job_id: int, alone: bool = False) -> str:
    """The Spark job group of a replayed job: how event-log records are traced back to it.

    ``alone``: the group of its run alone (`replay --measure-alone`), which the event-log reader
    does not trace to any job, so that run stays out of the replay's records."""
    return f"schedbridge-{'alone' if alone else 'job'}-{job_id}"


def _wordcount(spark: SparkSession, params: WordCountJob, inputs: dict[str, str]) -> wordcount.Digest | None:
    return wordcount.run(spark.sparkContext, inputs[params.input], params.reduces, params.extra_flops)


def _tpch(spark: SparkSession, params: TpchJob, inputs: dict[str, str]) -> list[tuple]:
    session = spark.newSession()  # its own temporary views: concurrent jobs may use other data
    register_tables(session, inputs[params.input])
    return run_query(session, params.query)


def _tasks(spark: SparkSession, params: TasksJob, inputs: dict[str, str]) -> None:
    """A trace job; its mean task duration is the policy's runtime estimate, as in the simulator."""
    sc = spark.sparkContext
    sc.setLocalProperty(ESTIMATE_PROP, repr(sum(params.durations) / max(len(params.durations), 1)))
    try:
        tasksjob.run(sc, params.durations, params.mode)
    finally:
        sc.setLocalProperty(ESTIMATE_PROP, None)  # type: ignore[arg-type]  # None removes it (Spark's doc; the stub says str)


_RUNNERS: dict[type, Callable[[SparkSession, Any, dict[str, str]], Any]] = {
    WordCountJob: _wordcount, TpchJob: _tpch, TasksJob: _tasks}


def run_job(spark: SparkSession, submission: Submission, inputs: dict[str, str], group: str) -> Any:
    """Run `submission` to completion under the job group ``group`` (`job_group`), on the calling
    thread; its answer (`bridge.replay.answers`): a query's rows, a WordCount's digest, None for a
    trace job. Its Spark jobs carry the submission's recurring name (``schedbridge.job``), the key
    its runtime estimate is learned and looked up under, and its declared task demands
    (``schedbridge.demand``), if any."""
    sc = spark.sparkContext
    sc.setJobGroup(group, submission.category, interruptOnCancel=True)
    sc.setLocalProperty(JOB_NAME_PROP, submission.recurring_name)
    demands = declared_demands(submission.params)
    # None removes a demand an earlier job on this thread set (Spark's doc; the stub says str)
    sc.setLocalProperty(DEMAND_PROP, None if demands is None else demands.to_property())  # type: ignore[arg-type]
    return _RUNNERS[type(submission.params)](spark, submission.params, inputs)
