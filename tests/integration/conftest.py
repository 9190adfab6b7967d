"""Session fixtures: the real local Hadoop cluster (`testbed`), started once per test session, and
one reduced `schedbridge demo` on it (`demo_run`, tests/integration/demo_run.py), which every test
of sim-vs-live, of the demo and of Kairos' own-agent `--preempt` replay reads.

A testbed that was already running (a developer's `schedbridge testbed up`) is reused and left
running; one this session started is stopped at the end. Before each test that uses it, every
NodeManager must be RUNNING (`_nodemanagers_running`): an UNHEALTHY one (a disk below its free-space
floor) gets no containers, and an application would wait for them until the test's time limit.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bridge.target.default import register_default
from bridge.testbed.cluster import Testbed, TestbedError
from bridge.testbed.layout import ClusterLayout, default_layout
from bridge.testbed.spark import spark_env
from bridge.testbed.target import LocalTestbed
from tests.integration.demo_run import DemoRun, run_demo

# Longer than a NodeManager's disk check interval (2 min): a node that recovers is seen recovered.
NODES_RUNNING_WAIT_S = 150


@dataclass(frozen=True)
class RunningTestbed:
    bed: Testbed

    @property
    def layout(self) -> ClusterLayout:
        return self.bed.layout

    @property
    def conf_dir(self) -> Path:
        return self.layout.conf_dir

    @property
    def rm_url(self) -> str:
        return self.layout.rm_url

    @property
    def hdfs_url(self) -> str:
        """WebHDFS base URL (for the `hdfs` package)."""
        return self.layout.webhdfs_url

    @property
    def fs_default(self) -> str:
        """`hdfs://host:port`, for Spark paths."""
        return self.layout.fs_default

    def spark_env(self) -> dict[str, str]:
        return spark_env(self.layout)


@pytest.fixture(scope="session", autouse=True)
def default_cluster() -> Iterator[None]:
    """The session stands in for the command line: a command run in-process (``build_plan``) given
    the testbed's conf dir, or none, talks to the local testbed with its Spark defaults."""
    register_default(LocalTestbed)
    yield
    register_default(None)


@pytest.fixture(scope="session")
def testbed() -> RunningTestbed:
    bed = Testbed(default_layout())
    was_running = all(bed.running().values())
    bed.up(timeout_s=180)
    yield RunningTestbed(bed)
    if not was_running:
        bed.down()


@pytest.fixture(autouse=True)
def _nodemanagers_running(request: pytest.FixtureRequest) -> None:
    if "testbed" not in request.fixturenames:
        return
    try:
        request.getfixturevalue("testbed").bed.wait_nodes_running(NODES_RUNNING_WAIT_S)
    except TestbedError as exc:
        pytest.fail(f"the testbed is not ready for this test: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def demo_run(testbed: RunningTestbed, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    return run_demo(testbed, tmp_path_factory.mktemp("demo"))
