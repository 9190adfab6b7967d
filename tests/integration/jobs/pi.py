"""Monte Carlo estimate of pi, as in Spark's own example ``pi.py`` (pyspark's package ships no
examples, so this is our copy of the computation): ``pi.py [PARTITIONS] [--executors N] [--out F]``.

It waits until N executors registered (so a policy sees the whole cluster before the first
task), prints ``Pi is roughly X`` and writes X to ``--out``.
"""
from __future__ import annotations

import argparse
import random
import time
from operator import add
from pathlib import Path

from pyspark.sql import SparkSession


def inside(seed: int) -> int:
    rng = random.Random(seed)
    x, y = rng.random() * 2 - 1, rng.random() * 2 - 1
    return 1 if x * x + y * y <= 1 else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("partitions", type=int, nargs="?", default=2)
    ap.add_argument("--executors", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    spark = SparkSession.builder.appName("PythonPi").getOrCreate()
    deadline = time.monotonic() + 240
    while spark.sparkContext._jsc.sc().getExecutorIds().size() < args.executors:
        if time.monotonic() > deadline:
            raise SystemExit(f"fewer than {args.executors} executors after 240 s")
        time.sleep(0.5)
    n = 10_000 * args.partitions
    count = spark.sparkContext.parallelize(range(n), args.partitions).map(inside).reduce(add)
    estimate = 4.0 * count / n
    print(f"Pi is roughly {estimate:f}")
    if args.out is not None:
        args.out.write_text(f"{estimate}\n")
    spark.stop()


if __name__ == "__main__":
    main()
