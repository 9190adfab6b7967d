"""CPU-bound tasks, one per executor: ``burn.py EXECUTORS OUT``.

It waits until EXECUTORS executors registered (so a node scheduler sees them all before the first
task), runs one task per executor that spins for a few CPU seconds, and writes the tasks' values to
OUT as JSON.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

STEPS = 3_000_000  # float steps per task: a few CPU seconds at full share


def burn(index: int) -> float:
    x = 0.5 + index
    for _ in range(STEPS):
        x = (x * 1.000001 + 0.1) % 7.0
    return round(x, 6)


def main() -> None:
    executors, out = int(sys.argv[1]), Path(sys.argv[2])
    spark = SparkSession.builder.appName("schedbridge-burn").getOrCreate()
    sc = spark.sparkContext
    deadline = time.monotonic() + 300
    while sc._jsc.sc().getExecutorIds().size() < executors:
        if time.monotonic() > deadline:
            raise SystemExit(f"fewer than {executors} executors after 300 s")
        time.sleep(0.5)
    out.write_text(json.dumps(sc.parallelize(range(executors), executors).map(burn).collect()))
    spark.stop()


if __name__ == "__main__":
    main()
