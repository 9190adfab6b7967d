"""Shared helpers for the Spark plugin's integration tests: workloads, planners, a daemon process."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from bridge.drivers.spark.fifo import FifoPlanner
from bridge.common.tls import ServerTls
from bridge.drivers.spark.state import LiveCluster
from bridge.protocol.auth import client_handshake, new_nonce
from bridge.protocol.messages import LiveEvent, OfferRound, Placement, TaskEnd, TaskStart

T = TypeVar("T")
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


def finishes_within(spark, seconds: float, job: Callable[[], T]) -> T:
    """``job()``'s result, or the test fails once it has run ``seconds`` (its Spark jobs cancelled
    first, so the session still stops: a stalled job would otherwise hang the test's teardown)."""
    result: list[T] = []
    runner = threading.Thread(target=lambda: result.append(job()), daemon=True)
    runner.start()
    runner.join(seconds)
    if runner.is_alive():
        spark.sparkContext.cancelAllJobs()
        runner.join(30)
        pytest.fail(f"the job did not finish within {seconds:.0f} s")
    assert result, "the job raised (see its thread's traceback above)"
    return result[0]


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
                 params: Sequence[str] = (), tls: ServerTls | None = None, metrics: bool = False) -> None:
        """``metrics``: with ``--metrics-port 0``, its page's address in ``metrics_url``."""
        exe = Path(sys.executable).parent / "schedbridge"
        self.log = log
        self.token_file = log.parent / "daemon-token"  # created owner-only by serve; shared by a restart
        self._out = log.open("a")
        cmd = [str(exe), "serve", "--policy", policy, "--port", str(port), "--token-file", str(self.token_file),
               "--log-level", "DEBUG"]  # the tests read its per-round placement lines
        for p in params:
            cmd += ["--param", p]
        self.tls = tls
        if tls is not None:
            cmd += ["--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
        if metrics:
            cmd += ["--metrics-port", "0"]
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT)
        self.port = int(self.wait_for(r"on (?:tcp|tls)://127\.0\.0\.1:(\d+)").group(1))
        self.metrics_url = self.wait_for(r"metrics at (http://\S+/metrics)").group(1) if metrics else None

    @property
    def conf(self) -> dict[str, str]:
        """The Spark conf that points an application at this daemon."""
        if self.tls is None:
            return {"spark.schedbridge.endpoint": f"tcp://127.0.0.1:{self.port}",
                    "spark.schedbridge.token.file": str(self.token_file)}
        return {"spark.schedbridge.endpoint": f"tls://localhost:{self.port}",
                "spark.schedbridge.tls.ca": str(self.tls.cert), "spark.schedbridge.token.file": str(self.token_file)}

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


class HistoryServer:
    """Spark's History Server (pyspark's ``spark-class``) on loopback, on a free port, reading the
    event logs of ``log_dir`` with the plugin's jar on its classpath; logs to ``log``, stopped by its pid."""

    def __init__(self, log_dir: Path, jar: Path, log: Path) -> None:
        import pyspark

        home = Path(pyspark.__file__).parent
        props = log.with_suffix(".properties")
        props.write_text(f"spark.history.fs.logDirectory={log_dir.as_uri()}\nspark.history.ui.port=0\n"
                         "spark.history.fs.update.interval=1s\n")
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_DAEMON_CLASSPATH": str(jar),
               "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "384m"}
        self.log = log
        self._out = log.open("a")
        command = [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.history.HistoryServer",
                   "--properties-file", str(props)]
        self.proc = subprocess.Popen(command, stdout=self._out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 120
        while not (m := re.search(r"started at http://[^:]+:(\d+)", log.read_text())):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the History Server did not start: {log.read_text()[-3000:]}")
            time.sleep(0.2)
        self.url = f"http://127.0.0.1:{m.group(1)}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._out.close()


class Squatter:
    """A client with the daemon's token that plays, with a snapshot each, every local-mode
    application id (``local-<ms>``) from its start on, ahead of the clock (at most ``lead_ms``):
    whichever millisecond a local application then starts in, its id was played first."""

    def __init__(self, address: tuple[str, int], token: str, lead_ms: int = 5000) -> None:
        self.key, self.lead_ms = new_nonce(), lead_ms
        self.played: dict[str, float] = {}  # id -> when (time.monotonic())
        self.reach_ms = 0  # the last id's millisecond
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(address, token), daemon=True)
        self._thread.start()

    def ahead_ms(self) -> int:
        """How far into the future its ids reach."""
        return self.reach_ms - int(time.time() * 1000)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self, address: tuple[str, int], token: str) -> None:
        with socket.create_connection(address, timeout=10) as s, s.makefile("rwb") as f:
            client_handshake(f, token, "squatter", self.key)
            f.write(json.dumps({"v": 2, "kind": "attach", "app": "squatter", "policy": "spark-fifo",
                                "params": {}}).encode() + b"\n")
            f.flush()
            assert json.loads(f.readline())["attached"]
            ms = self.reach_ms = int(time.time() * 1000)
            while not self._stop.is_set():
                if self.ahead_ms() > self.lead_ms:
                    time.sleep(0.05)
                    continue
                batch = [f"local-{ms + i}" for i in range(100)]
                f.write(b"".join(self._round(app) for app in batch))
                f.flush()
                for app in batch:
                    assert "assign" in json.loads(f.readline())
                    self.played[app] = time.monotonic()
                ms += len(batch)
                self.reach_ms = ms - 1

    @staticmethod
    def _round(app: str) -> bytes:
        return json.dumps({"v": 2, "kind": "round", "app": app, "round": 1, "now_ms": 1, "cpus_per_task": 1,
                           "slots": [{"executor": "driver", "host": "localhost", "free": 2}],
                           "stages": [{"stage": 0, "attempt": 0, "job": 0, "tasks": 6, "pending": 6, "running": 0}],
                           "events": [], "snapshot": {"executors": [], "running": [], "jobs": []}}).encode() + b"\n"


def hawk_grants_over_two_executors(log: str) -> list[tuple[int, str, int, str]]:
    """(stage, executor, tasks, Hawk's general executor then) per grant a host's log shows while its
    state held two executors. The state is rebuilt whenever a snapshot comes (at the start, after a
    failed call), so each grant is judged against the nodes of the rebuild before it; Hawk's general
    partition is the highest node ids, the second of two."""
    granted: list[tuple[int, str, int, str]] = []
    for world in re.split(r"(?=rebuilt over )", log):
        nodes = re.match(r"rebuilt over 2 executors x \d+ slots, nodes: \S+ (\S+)", world)
        if nodes:
            general = nodes[1].split("/", 1)[1]
            granted += [(int(stage), ex, int(n), general)
                        for stage, ex, n in re.findall(r"s(\d+)\.\d+->(\S+?)x(\d+)", world)]
    return granted
