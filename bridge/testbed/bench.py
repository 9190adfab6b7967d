"""Benchmark: testbed cold start (jars cached, fresh state) until every NodeManager is RUNNING,
and the testbed's total resident memory. Prints figures; asserts nothing.

    schedbridge bench testbed [--runs 2] [--nodemanagers 2]

Runs on shifted ports in a temporary home, so it does not disturb a running testbed.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click

from bridge.testbed.cluster import Testbed
from bridge.testbed.layout import local_layout


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@click.command("testbed")
@click.option("--runs", default=2, show_default=True)
@click.option("--nodemanagers", default=2, show_default=True)
@click.option("--base-port", default=1000, show_default=True, help="Port shift from the defaults.")
def testbed(runs: int, nodemanagers: int, base_port: int) -> None:
    """Testbed cold start until every NodeManager runs, and its resident memory."""
    for run in range(1, runs + 1):
        with tempfile.TemporaryDirectory(prefix="schedbridge-bench-") as home:
            bed = Testbed(local_layout(Path(home), nodemanagers=nodemanagers, base_port=base_port))
            started = time.monotonic()
            try:
                bed.up(timeout_s=300)
                ready_s = time.monotonic() - started
                time.sleep(5)  # let the JVMs settle after start-up
                per_daemon = {name: rss_mb(pid) for name, pid in bed.running().items() if pid}
            finally:
                bed.down()
        total = sum(per_daemon.values())
        detail = ", ".join(f"{name} {mb:.0f}" for name, mb in per_daemon.items())
        click.echo(f"run {run}: cold start to {nodemanagers} NodeManagers RUNNING and HDFS writable: "
                   f"{ready_s:.1f} s; resident memory {total:.0f} MB ({detail})")

