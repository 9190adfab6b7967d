"""A PySpark driver for the live preemption test: one one-core executor runs one CPU-bound task.

    python spark_spin_job.py APP_NAME STOP_FILE

The task does floating-point work until STOP_FILE exists (at most 300 s), then returns the sum of
squares of its partition; the driver prints ``RESULT <sum>``. Stopping on a file rather than after a
fixed amount of work keeps the task alive for the whole measurement on a host of any speed.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

from pyspark import SparkConf, SparkContext

N = 1000


def spin_then_sum(stop_file: str, rows: Iterator[int]) -> Iterator[int]:
    deadline, x = time.time() + 300, 0.5
    while not os.path.exists(stop_file) and time.time() < deadline:
        for _ in range(20_000):
            x = (x * 1.000001 + 0.1) % 7.0
    yield sum(r * r for r in rows)


def main() -> None:
    app_name, stop_file = sys.argv[1], sys.argv[2]
    conf = (SparkConf().setMaster("yarn").setAppName(app_name)
            .set("spark.executor.instances", "1").set("spark.dynamicAllocation.enabled", "false"))
    sc = SparkContext(conf=conf)
    try:
        total = sc.parallelize(range(N), 1).mapPartitions(lambda rows: spin_then_sum(stop_file, rows)).sum()
        print(f"RESULT {total}", flush=True)
    finally:
        sc.stop()


if __name__ == "__main__":
    main()
