"""Live preemption on the real testbed: a CPU-bound Spark task's YARN container is suspended and
resumed through `bridge.nodes.preemption` and a real `schedbridge agent`, the agent survives SIGKILL
without leaving a throttle behind, and Kairos' N+Q admission raises and restores node vcores.
(Kairos taking turns live through the plugin is test_replay_preempt_agents_file.py's bridge
application and the shared demo's `--preempt` replay.)

The agent is restricted to this test's application (`--app`), so other users' containers on the
shared testbed are never adopted. CPU is measured from cgroup accounting over ~1 s windows and
judged against an uncapped control spinner running at the same time (the host is shared and busy).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bridge.agent.client import AgentClient
from bridge.agent.errors import ContainerNotRunning, UnknownContainer
from bridge.agent.trial import (
    CGROUP_ROOT,
    FULL_RATIO,
    TOKEN,
    AgentProcess,
    assert_full_share,
    cpu_rate,
    remove_groups,
    share_of_control,
    usage_file,
    wait_for,
)
from bridge.nodes.node_capacity import RaisedVcores
from bridge.nodes.preemption import ContainerPreemptor, ContainerRef
from bridge.testbed.layout import NodeManagerSpec
from tests import needs
from tests.integration import spark_spin_job
from yarnclient import NodeManagerClient, ResourceManagerClient

pytestmark = pytest.mark.integration

MIN_SHARE = 0.1
SUSPENDED_MAX = MIN_SHARE * 1.5  # one CFS period of slack over a 1 s window


@dataclass
class SpinningJob:
    proc: subprocess.Popen[str]
    app_id: str
    nm: NodeManagerSpec
    container: str
    stop_file: Path


def _executor_container(testbed, app_id: str) -> tuple[NodeManagerSpec, str] | None:
    key = f"_{app_id.split('_', 1)[1]}_"
    for nm in testbed.layout.nodemanagers:
        for c in NodeManagerClient(nm.webapp_url, timeout=(5, 10)).containers():
            if key in c.container_id and c.state == "RUNNING" and not c.container_id.endswith("_000001"):
                return nm, c.container_id
    return None


def _app_id(rm: ResourceManagerClient, name: str) -> str | None:
    return next((a.app_id for a in rm.apps(states=["RUNNING"]) if a.name == name), None)


@pytest.fixture
def job(testbed, tmp_path: Path) -> Iterator[SpinningJob]:
    needs.cgroup_v1_cpu("the agent resizes the container's cpu cgroup")
    name, stop_file = f"schedbridge-it-preempt-{os.getpid()}", tmp_path / "stop"
    rm = ResourceManagerClient(testbed.rm_url, user=testbed.layout.user)
    with (tmp_path / "driver.log").open("w") as log:
        proc = subprocess.Popen([sys.executable, spark_spin_job.__file__, name, str(stop_file)],
                                env=testbed.spark_env(), stdout=subprocess.PIPE, stderr=log, text=True,
                                start_new_session=True)
    app_id = None
    try:
        app_id = wait_for(lambda: _app_id(rm, name), 240, "the Spark application", every_s=1.0)
        nm, cid = wait_for(lambda: _executor_container(testbed, app_id), 240, "the executor container",
                           every_s=1.0)
        yield SpinningJob(proc, app_id, nm, cid, stop_file)
    finally:
        stop_file.touch()
        try:
            proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this fixture started
            proc.wait(timeout=30)
        if app_id is not None and rm.app(app_id).state not in ("FINISHED", "KILLED", "FAILED"):
            rm.kill(app_id)


@pytest.mark.long  # make test-long: crash recovery
def test_spark_task_container_suspends_resumes_and_survives_agent_crash(testbed, job: SpinningJob,
                                                                         tmp_path: Path) -> None:
    parent = f"sbtest-live-{os.getpid()}"
    agent = AgentProcess(job.nm.webapp_url, tmp_path / "agent.json", parent,
                         (testbed.layout.nm_dir(job.nm) / "local",), MIN_SHARE, apps=(job.app_id,))
    control = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    ref = ContainerRef(job.nm.webapp_url, job.container)
    quota = CGROUP_ROOT / "cpu" / parent / job.container / "cpu.cfs_quota_us"

    def usage_ns() -> int:
        return int(usage_file(parent, job.container).read_text())

    try:
        preemptor = ContainerPreemptor({job.nm.webapp_url: AgentClient(agent.start(), TOKEN, timeout_s=10)})
        wait_for(lambda: usage_file(parent, job.container).exists(), 30, "adoption of the executor container")
        wait_for(lambda: share_of_control(usage_ns, control.pid) >= FULL_RATIO, 180,
                 "the task to spin at full share", every_s=0.1)

        assert preemptor.suspend(ref).ok
        assert preemptor.commands[-1].seconds < 1.0
        assert cpu_rate(usage_ns) <= SUSPENDED_MAX
        assert preemptor.resume(ref).ok
        assert_full_share(usage_ns, control.pid)

        assert preemptor.suspend(ref).ok
        agent.signal(signal.SIGKILL)
        assert quota.read_text().strip() == str(int(MIN_SHARE * 100_000))  # the crash left the throttle
        assert cpu_rate(usage_ns) <= SUSPENDED_MAX
        preemptor = ContainerPreemptor({job.nm.webapp_url: AgentClient(agent.start(), TOKEN, timeout_s=10)})
        wait_for(lambda: quota.exists() and quota.read_text().strip() == "-1", 30, "re-adoption at full size")
        assert_full_share(usage_ns, control.pid)

        client = preemptor.agents[job.nm.webapp_url]
        unknown = job.container.rsplit("_", 1)[0] + "_999999"
        with pytest.raises(UnknownContainer, match=unknown):
            client.resize(unknown, 0.5)
        assert preemptor.suspend(ContainerRef(job.nm.webapp_url, unknown)).code.value == "skip"

        job.stop_file.touch()
        out, _ = job.proc.communicate(timeout=180)
        assert f"RESULT {sum(i * i for i in range(spark_spin_job.N))}" in out
        wait_for(lambda: not quota.exists(), 60, "release of the finished container", every_s=0.5)
        with pytest.raises(ContainerNotRunning, match=job.container):
            client.resize(job.container, 0.5)
        assert agent.signal(signal.SIGTERM) == 0
        assert not (CGROUP_ROOT / "cpu" / parent).exists()
    finally:
        control.kill()
        control.wait(timeout=10)
        agent.stop()
        remove_groups(parent)


def test_raised_vcores_are_restored(testbed, tmp_path: Path) -> None:
    rm = ResourceManagerClient(testbed.rm_url, user=testbed.layout.user)
    before = {n.node_id: n.vcores_total for n in rm.nodes(states=["RUNNING"])}
    record = tmp_path / "vcores.json"
    with RaisedVcores(rm, 2, record):
        assert record.exists()
        assert {n.node_id: n.vcores_total for n in rm.nodes(states=["RUNNING"])} == \
            {node: v + 2 for node, v in before.items()}
    assert {n.node_id: n.vcores_total for n in rm.nodes(states=["RUNNING"])} == before
    assert not record.exists()
