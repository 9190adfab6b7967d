"""A preempting controller SIGKILLed mid-run on the real testbed leaves nothing behind, with no
command run by hand: within the suspends' lease every container its node agents held shrunk is back
at full CPU (the agents lift throttles nobody renews), and the NodeManagers advertise their own
vcores again in the RM (the vcores guard restores them from the record). Two controllers:
`schedbridge serve --policy kairos --agents FILE`, and the policy host beside a driver
(`spark.schedbridge.agents`), killed with the driver's whole process group. The agents are an
operator's (test_replay_preempt_agents_file.py's fixture), with a 5 s lease in the agents file."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.agent.client import AgentClient
from bridge.agent.leases import DEFAULT_LEASE_S
from bridge.agent.trial import AgentProcess
from tests.integration.test_replay_preempt_agents_file import operator_agents  # noqa: F401 - a fixture
from tests.integration.test_replay_preempt_testbed import vcores
from yarnclient.resourcemanager import ResourceManagerClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
JOBS = Path(__file__).resolve().parent / "jobs"
SCHEDBRIDGE = str(Path(sys.executable).parent / "schedbridge")
LEASE_S = 5.0
SLACK_S = 3.0  # the agents' reconcile interval (1 s) and a loaded host's scheduling
APP_NAME = "schedbridge-burn"
KAIROS = ["--policy", "kairos", "--param", "node_cores=1", "--param", "w=2"]  # serve's and submit's alike


def leased(agents_file: Path) -> Path:
    """The operator's agents file with a short lease (top-level keys go before its [nodes] table)."""
    agents_file.write_text(f"lease_s = {LEASE_S}\n" + agents_file.read_text())
    return agents_file


def clients(agents: dict[str, AgentProcess]) -> list[AgentClient]:
    return [AgentClient(agent.url, agent.token, timeout_s=5) for agent in agents.values()]


def throttled(agents: list[AgentClient]) -> list[dict]:
    return [c for agent in agents for c in agent.containers() if c.get("share") is not None or c.get("frozen")]


def wait_until(probe: Callable[[], object], timeout_s: float, what: str, every_s: float = 0.2) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def burn_app(args: list[str], out: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """4 one-core executors of the burn job, in a session of its own (the driver and its host)."""
    command = [SCHEDBRIDGE, "submit", "--master", "spark-schedbridge://yarn", "--num-executors", "4", *args,
               "--conf", "spark.executor.cores=1", "--conf", "spark.dynamicAllocation.enabled=false",
               "--conf", "spark.locality.wait=0s", "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}",
               str(JOBS / "burn.py"), "4", str(out)]
    with log.open("w") as err:
        return subprocess.Popen(command, env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True)


def running(app: subprocess.Popen, folder: Path) -> bool:
    """True while the application runs; its ending (e.g. refused at start) fails the test at once."""
    if app.poll() is not None:
        raise AssertionError(f"the application ended with {app.returncode}: "
                             f"{(folder / 'app.log').read_text()[-3000:]}")
    return True


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the session this test started (by its recorded pid)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def kill_burn_apps(rm: ResourceManagerClient, before: set[str]) -> None:
    for app in rm.apps(states=["NEW", "SUBMITTED", "ACCEPTED", "RUNNING"]):
        if app.app_id not in before and app.name == APP_NAME:
            rm.kill(app.app_id)


def assert_restored_without_help(agents: list[AgentClient], rm: ResourceManagerClient, vcores_before: dict,
                                 record: Path, killed_at: float) -> None:
    """Within the lease every container is at full CPU again; the vcores follow (the guard)."""
    wait_until(lambda: not throttled(agents), LEASE_S + SLACK_S, "every container back at full CPU")
    print(f"containers at full CPU {time.monotonic() - killed_at:.1f} s after the kill")
    wait_until(lambda: vcores(rm) == vcores_before, 60, "the NodeManagers' own vcores in the RM")
    print(f"vcores restored {time.monotonic() - killed_at:.1f} s after the kill")
    wait_until(lambda: not record.exists(), 10, "the guard to remove the vcores record")


def test_the_default_lease_is_under_a_minute() -> None:
    assert DEFAULT_LEASE_S <= 60


@pytest.mark.long  # make test-long: crash recovery
def test_sigkill_of_serve_mid_run_leaves_no_throttle_and_no_raised_vcores(testbed, operator_agents,  # noqa: F811
                                                                         tmp_path: Path) -> None:
    agents_file, processes = operator_agents
    leased(agents_file)
    agents, rm = clients(processes), ResourceManagerClient(testbed.rm_url)
    vcores_before, apps_before = vcores(rm), {a.app_id for a in rm.apps()}
    token_file, serve_log = tmp_path / "serve-token", tmp_path / "serve.log"
    with serve_log.open("w") as log:
        serve = subprocess.Popen([SCHEDBRIDGE, "serve", *KAIROS, "--port", "0", "--token-file", str(token_file),
                                  "--agents", str(agents_file)],
                                 env={**testbed.spark_env(), "PYTHONPATH": str(ROOT)},  # this checkout's bridge
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    app = None
    try:
        port = wait_until(lambda: re.search(r"on tcp://127\.0\.0\.1:(\d+)", serve_log.read_text()), 60,
                          "serve to listen").group(1)  # type: ignore[union-attr]
        assert vcores(rm) == {node: v + 1 for node, v in vcores_before.items()}  # Q = 1 more while it runs
        app = burn_app(["--conf", f"spark.schedbridge.endpoint=tcp://127.0.0.1:{port}",
                        "--conf", f"spark.schedbridge.token.file={token_file}", *KAIROS],
                       tmp_path / "out.json", testbed.spark_env(), tmp_path / "app.log")
        held = wait_until(lambda: running(app, tmp_path) and throttled(agents), 600, "Kairos to suspend a container")
        os.killpg(serve.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        serve.wait(timeout=30)
        assert_restored_without_help(agents, rm, vcores_before, tmp_path / "vcores.json", killed_at)
        expired = {c["id"] for agent in agents for c in agent.containers() if c.get("lease_expired_at")}
        assert {c["id"] for c in held} & expired, (held, expired)  # the leases did it, not a clean stop
    finally:
        if serve.poll() is None:
            kill_group(serve)
        if app is not None:
            kill_group(app)
        kill_burn_apps(rm, apps_before)


@pytest.mark.long  # make test-long: crash recovery
def test_sigkill_of_a_driver_with_kairos_beside_it_leaves_no_throttle_and_no_raised_vcores(
        testbed, operator_agents, tmp_path: Path) -> None:  # noqa: F811
    agents_file, processes = operator_agents
    leased(agents_file)
    agents, rm = clients(processes), ResourceManagerClient(testbed.rm_url)
    vcores_before, apps_before = vcores(rm), {a.app_id for a in rm.apps()}
    app = burn_app([*KAIROS, "--conf", f"spark.schedbridge.agents={agents_file}",
                    "--conf", f"spark.schedbridge.host.log={tmp_path / 'host.log'}"],
                   tmp_path / "out.json", testbed.spark_env(), tmp_path / "app.log")
    try:
        wait_until(lambda: running(app, tmp_path) and throttled(agents), 600, "Kairos to suspend a container")
        assert vcores(rm) != vcores_before  # raised while the host runs
        os.killpg(app.pid, signal.SIGKILL)  # the driver and the policy host beside it
        killed_at = time.monotonic()
        app.wait(timeout=30)
        assert_restored_without_help(agents, rm, vcores_before, tmp_path / "vcores.json", killed_at)
    finally:
        kill_group(app)
        kill_burn_apps(rm, apps_before)
