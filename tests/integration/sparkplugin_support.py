"""Shared helpers for the Spark plugin's integration tests: workloads, planners, a daemon process."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bridge.drivers.spark_fifo import FifoPlanner
from bridge.drivers.spark_state import LiveCluster
from bridge.protocol.messages import LiveEvent, OfferRound, Placement, TaskEnd, TaskStart

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon")
LINES = [" ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 8)) for i in range(400)]
SQL = """
SELECT k, COUNT(*) AS n, SUM(v) AS s
FROM (SELECT id % 7 AS k, id * 3 AS v FROM range(2000)) t
JOIN (SELECT id AS k2 FROM range(5)) d ON t.k = d.k2
GROUP BY k ORDER BY k
"""


def wordcount(spark, partitions: int = 6) -> list[tuple[str, int]]:
    rdd = spark.sparkContext.parallelize(LINES, partitions)
    return sorted(rdd.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b).collect())


def sql_rows(spark) -> list[tuple]:
    return [tuple(r) for r in spark.sql(SQL).collect()]


def slow_sum(spark, tasks: int, seconds: float, group: str) -> int:
    """A one-stage job of ``tasks`` tasks, each sleeping ``seconds``; returns sum(range(tasks))."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)

    def work(it):
        time.sleep(seconds)
        return [sum(it)]

    return sum(sc.parallelize(range(tasks), tasks).mapPartitions(work).collect())


def assert_no_task_lost_or_repeated(spark, group: str) -> None:
    """Every stage of the group's jobs completed each task once, with no failed attempt."""
    tracker = spark.sparkContext.statusTracker()
    for job in tracker.getJobIdsForGroup(group):
        for stage in tracker.getJobInfo(job).stageIds:
            info = tracker.getStageInfo(stage)
            assert info.numFailedTasks == 0, info
            assert info.numCompletedTasks == info.numTasks, info


class RecordingPlanner(FifoPlanner):
    """FIFO that also records every task start/end it is told about."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: dict[int, TaskStart] = {}
        self.ends: dict[int, TaskEnd] = {}

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        for ev in events:
            if isinstance(ev, TaskStart):
                self.starts[ev.task] = ev
            elif isinstance(ev, TaskEnd):
                self.ends[ev.task] = ev
        return super().plan(rnd, events, cluster)


class DaemonProcess:
    """``schedbridge serve`` in a subprocess, logging to a file; stopped by its pid."""

    def __init__(self, log: Path, port: int = 0, policy: str = "spark-fifo",
                 params: Sequence[str] = ()) -> None:
        exe = Path(sys.executable).parent / "schedbridge"
        self.log = log
        self.token_file = log.parent / "daemon-token"  # created owner-only by serve; shared by a restart
        self._out = log.open("a")
        cmd = [str(exe), "serve", "--policy", policy, "--port", str(port), "--token-file", str(self.token_file)]
        for p in params:
            cmd += ["--param", p]
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT)
        self.port = int(self.wait_for(r"on (?:tcp|tls)://127\.0\.0\.1:(\d+)").group(1))

    @property
    def conf(self) -> dict[str, str]:
        """The Spark conf that points an application at this daemon."""
        return {"spark.schedbridge.endpoint": f"tcp://127.0.0.1:{self.port}",
                "spark.schedbridge.token.file": str(self.token_file)}

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.log.read_text())
            if m:
                return m
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited: {self.log.read_text()}")
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} not in daemon log: {self.log.read_text()}")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        self._out.close()
