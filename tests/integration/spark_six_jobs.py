"""A local PySpark session of six jobs, its event log written as Spark 4 writes it by default (a
rolled folder of zstd-compressed parts): how the committed fixture
`tests/fixtures/eventlog_v2_local-1795745106206/` that `tests/unit/test_trace_import.py` imports was
made (`python -m tests.integration.spark_six_jobs DIR`). Not a test: rerun it when Spark's event-log
format may have changed, and commit its output in place of the fixture.

The six jobs, one after another on `local[2]`: one stage; a shuffle (two stages); the same shuffle
read again (its map stage skipped: computed by the job before); sleeping tasks of different lengths;
a join (two stages: PySpark unions both sides into one map stage); one more single stage.
"""
from __future__ import annotations

import sys
import time
from operator import add
from pathlib import Path

JOBS = 6


def _nap(x: int) -> int:
    time.sleep(0.05 * (x % 4 + 1))
    return x


def run(events: Path) -> str:
    """Run the six jobs with event logging into ``events``; the application id."""
    from pyspark.sql import SparkSession

    events.mkdir(parents=True, exist_ok=True)
    spark = (SparkSession.builder.master("local[2]").appName("schedbridge-six-jobs")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", events.resolve().as_uri())
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "512m")
             .config("spark.hadoop.fs.defaultFS", "file:///").getOrCreate())
    try:
        sc = spark.sparkContext
        numbers = sc.parallelize(range(100), 4)
        assert numbers.sum() == 4950
        counts = numbers.map(lambda x: (x % 5, 1)).reduceByKey(add, 3)
        assert sorted(counts.collect()) == [(k, 20) for k in range(5)]
        assert counts.count() == 5
        assert sc.parallelize(range(8), 8).map(_nap).count() == 8
        left, right = numbers.map(lambda x: (x % 10, x)), sc.parallelize([(k, -k) for k in range(10)], 2)
        assert left.join(right, 3).count() == 100
        assert sc.parallelize(range(10), 2).map(lambda x: x * x).max() == 81
        return sc.applicationId
    finally:
        spark.stop()


if __name__ == "__main__":
    print(run(Path(sys.argv[1])))
