"""A PySpark application for the Spark plugin's YARN tests: WordCount, SQL, TPC-H and a long job.

Run by spark-submit / `schedbridge submit` (the master comes from the command line). Writes its
results and the stage ids of its long job as JSON to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pyspark.sql import SparkSession

from tests.integration.sparkplugin_support import slow_sum, sql_rows, wordcount
from workloads.tpch.compare import plain
from workloads.tpch.spark import register_tables, run_query


def wait_for_executors(spark: SparkSession, n: int, timeout_s: float = 240.0) -> None:
    """Jobs start once all executors registered, so the policy sees the whole cluster."""
    deadline = time.monotonic() + timeout_s
    while spark.sparkContext._jsc.sc().getExecutorIds().size() < n:
        if time.monotonic() > deadline:
            raise SystemExit(f"fewer than {n} executors after {timeout_s} s")
        time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tpch", type=Path, required=True)
    ap.add_argument("--queries", default="1,6")
    ap.add_argument("--executors", type=int, default=2)
    args = ap.parse_args()
    spark = SparkSession.builder.appName("sparkplugin-app").getOrCreate()
    sc = spark.sparkContext
    try:
        wait_for_executors(spark, args.executors)
        register_tables(spark, args.tpch.resolve().as_uri())  # NodeManagers share this host
        out = {"wordcount": wordcount(spark), "sql": sql_rows(spark),
               "tpch": {q: [[plain(v) for v in r] for r in run_query(spark, int(q))] for q in args.queries.split(",")}}
        sc.setLocalProperty("schedbridge.estimate", "100")
        out["long_sum"] = slow_sum(spark, 8, 0.3, "long")
        tracker = sc.statusTracker()
        out["long_stages"] = sorted(s for j in tracker.getJobIdsForGroup("long")
                                    for s in tracker.getJobInfo(j).stageIds)
        out["scheduler"] = sc._jsc.sc().taskScheduler().getClass().getSimpleName()
        out["app"] = sc.applicationId
        args.out.write_text(json.dumps(out, default=str))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
