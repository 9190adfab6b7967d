"""The Spark job that replays one trace job: one task per duration, sleeping or spinning a CPU.

`sleep` occupies a task slot without using the CPU (the simulator's model of a task); `spin`
also keeps a core busy, so CPU-sharing mechanisms (Kairos' preemption by shrinking) act on it.
"""
from __future__ import annotations

import time

from pyspark import SparkContext


def hold(duration_s: float, mode: str) -> None:
    """Occupy the calling task for `duration_s` seconds of wall time."""
    if mode == "sleep":
        time.sleep(duration_s)
        return
    deadline = time.monotonic() + duration_s
    while time.monotonic() < deadline:
        pass


def run(sc: SparkContext, durations: tuple[float, ...], mode: str) -> None:
    """One partition (so one task) per duration; returns when every task has held its time."""
    sc.parallelize(list(durations), len(durations)).foreach(lambda d: hold(d, mode))
