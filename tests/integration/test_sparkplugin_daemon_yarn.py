"""One `schedbridge serve` daemon shared by two applications on the testbed, whose executors are
both numbered 1 and 2. The second used to sit idle, its slots held for the first one's stages,
until the first one's last task ended. Now each finishes with a correct result, its tasks placed by
the policy, without many rounds in which its free slots were held back while its tasks waited and
without the watchdog. Live under Eagle, whose churn across applications was the worst measured;
the unit test `test_two_applications_in_one_daemon_get_only_their_own_slots` covers fifo, sparrow,
hawk and eagle against a fake Spark. Job times are reported, not bounded: a benchmark measures
them (docs/benchmarks-spark.md: 1.1-1.4x alone on this 2-core machine, where even stock Spark's two
applications take 1.3-1.75x)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.process_output import failure_excerpt
from tests.integration.sparkplugin_support import DaemonProcess

pytestmark = [pytest.mark.integration, pytest.mark.long]  # make test-long; make test: one application through serve

ROOT = Path(__file__).resolve().parents[2]
PI = Path(__file__).resolve().parent / "jobs" / "pi.py"
SCHEDBRIDGE = str(Path(sys.executable).parent / "schedbridge")
PARTITIONS, SLEEP_MS = 40, 500
# Rounds with free slots of its own held back while its tasks waited: 0 for each of the four
# policies since the plugin attributes launches by executor (up to 6 seen for fifo before, in one
# CI run); the starvation this guards against (the 22-25 s idle, re-offered every
# 100 ms) would be some 200; eagle's churn across applications measured 125.
MAX_HELD_ROUNDS = 25


@pytest.fixture(scope="module")
def env(testbed) -> dict[str, str]:
    return {**testbed.spark_env(), "PYTHONPATH": str(ROOT)}


def start(daemon: DaemonProcess, policy: str, out: Path, env: dict[str, str], together: Path) -> subprocess.Popen:
    cmd = [SCHEDBRIDGE, "submit", "--master", "spark-schedbridge://yarn", "--num-executors", "2",
           "--conf", f"spark.schedbridge.policy={policy}",
           *[arg for key, value in daemon.conf.items() for arg in ("--conf", f"{key}={value}")],
           "--conf", f"spark.schedbridge.stats.file={out / 'stats.json'}",
           "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}", str(PI), str(PARTITIONS), "--executors", "2",
           "--sleep-ms", str(SLEEP_MS), "--out", str(out / "pi.txt"), "--times", str(out / "seconds.txt"),
           "--together", str(together)]
    out.mkdir()
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=(out / "stderr.txt").open("w"))


def barrier(directory: Path, expected: int) -> Path:
    directory.mkdir()
    (directory / "expected").write_text(str(expected))
    return directory


def finish(proc: subprocess.Popen, out: Path) -> float:
    """The application's job time, after checking it ended well with a correct result."""
    assert proc.wait(timeout=900) == 0, failure_excerpt((out / "stderr.txt").read_text())
    assert math.isclose(float((out / "pi.txt").read_text()), math.pi, abs_tol=0.05)
    stats = json.loads((out / "stats.json").read_text())
    launched = stats["placed_tasks"] + stats["fallback_tasks"]  # a round past its deadline is a fault, counted
    assert launched >= PARTITIONS and stats["placed_tasks"] >= 0.9 * launched, stats
    assert stats["held_rounds"] <= MAX_HELD_ROUNDS and stats["watchdog_rounds"] == 0, stats  # never starved
    return float((out / "seconds.txt").read_text())


def test_two_applications_through_one_daemon_each_get_their_own_slots(env, tmp_path) -> None:
    policy = "eagle"
    daemon = DaemonProcess(tmp_path / "daemon.log", policy=policy)
    try:
        pair = barrier(tmp_path / "b2", 2)  # the two jobs start together, once both have their executors
        both = [start(daemon, policy, tmp_path / name, env, pair) for name in ("first", "second")]
        together = [finish(proc, tmp_path / name) for proc, name in zip(both, ("first", "second"))]
    finally:
        daemon.kill()
    print(f"{policy}: jobs together {together[0]:.1f} s and {together[1]:.1f} s")
    log = daemon.log.read_text()
    assert log.count(" attached") == 2 and log.count(" detached") == 2, log[-3000:]  # each state dropped at its end
