"""Monte Carlo estimate of pi, as in Spark's own example ``pi.py`` (pyspark's package ships no
examples, so this is our copy of the computation):
``pi.py [PARTITIONS] [--executors N] [--out F] [--sleep-ms MS] [--times F] [--together DIR]
[--probe NAME ARCHIVED MODULE --probe-out F]``.

It waits until N executors registered (so a policy sees the whole cluster before the first
task), prints ``Pi is roughly X`` and writes X to ``--out`` and the job's wall time to ``--times``.
``--probe NAME ARCHIVED MODULE`` runs one more job whose tasks report what a task sees of its
container: the file NAME in its working directory (as ``--files F#NAME`` ships it), the file
ARCHIVED (inside an ``--archives A#DIR``), MODULE's ``VALUE`` (``--py-files``) and its Python's
marker variable ``PROBE_PYTHON`` (set by a ``PYSPARK_PYTHON`` wrapper), as JSON to ``--probe-out``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import time
from operator import add
from pathlib import Path

from pyspark.sql import SparkSession


def inside(seed: int) -> int:
    rng = random.Random(seed)
    x, y = rng.random() * 2 - 1, rng.random() * 2 - 1
    return 1 if x * x + y * y <= 1 else 0


def partition(seeds, sleep_s: float):
    """One task's share; ``sleep_s`` makes tasks hold their slot without using a core."""
    if sleep_s > 0:
        time.sleep(sleep_s)
    return [sum(inside(s) for s in seeds)]


def probe(name: str, archived: str, module: str) -> list[dict[str, str]]:
    """One task's view of its container: a shipped file, a file of an unpacked archive and a
    module shipped by ``--py-files``, each by the name the submission gave it."""
    return [{"file": Path(name).read_text().strip(), "python": os.environ.get("PROBE_PYTHON", ""),
             "archive": Path(archived).read_text().strip(), "module": importlib.import_module(module).VALUE}]


def wait_for_the_others(directory: Path, me: str, timeout_s: float = 300) -> None:
    """A barrier between applications: each marks itself ready, then waits for the expected number,
    so their jobs start together (not while another one's JVMs are still starting)."""
    (directory / f"{me}.ready").touch()
    expected = int((directory / "expected").read_text())
    deadline = time.monotonic() + timeout_s
    while len(list(directory.glob("*.ready"))) < expected:
        if time.monotonic() > deadline:
            raise SystemExit(f"fewer than {expected} applications ready in {directory} after {timeout_s} s")
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("partitions", type=int, nargs="?", default=2)
    ap.add_argument("--executors", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--sleep-ms", type=int, default=0, help="each task also sleeps this long")
    ap.add_argument("--times", type=Path, help="write the job's wall time (s) here")
    ap.add_argument("--together", type=Path, metavar="DIR",
                    help="start the job only once every application named in DIR/expected is ready there")
    ap.add_argument("--probe", nargs=3, metavar=("NAME", "ARCHIVED", "MODULE"),
                    help="a shipped file, a file in a shipped archive and a shipped module, seen by every task")
    ap.add_argument("--probe-out", type=Path)
    args = ap.parse_args()
    spark = SparkSession.builder.appName("PythonPi").getOrCreate()
    deadline = time.monotonic() + 240
    while spark.sparkContext._jsc.sc().getExecutorIds().size() < args.executors:
        if time.monotonic() > deadline:
            raise SystemExit(f"fewer than {args.executors} executors after 240 s")
        time.sleep(0.5)
    if args.together is not None:
        wait_for_the_others(args.together, spark.sparkContext.applicationId)
    n = 10_000 * args.partitions
    sleep_s = args.sleep_ms / 1000
    start = time.monotonic()
    count = spark.sparkContext.parallelize(range(n), args.partitions).mapPartitions(
        lambda seeds: partition(seeds, sleep_s)).reduce(add)
    if args.times is not None:
        args.times.write_text(f"{time.monotonic() - start}\n")
    estimate = 4.0 * count / n
    print(f"Pi is roughly {estimate:f}")
    if args.out is not None:
        args.out.write_text(f"{estimate}\n")
    if args.probe is not None and args.probe_out is not None:
        names = args.probe
        seen = spark.sparkContext.parallelize(range(4), 4).mapPartitions(lambda _: probe(*names)).collect()
        args.probe_out.write_text(json.dumps(seen))
    spark.stop()


if __name__ == "__main__":
    main()
