"""Preemption through an agents file on the real testbed treated as any cluster: the test starts a
`schedbridge agent` per NodeManager itself (as an operator's services would run) and writes an
agents file. `replay --preempt --agents FILE` preempts through those agents, not through agents of
its own, and so does a plain bridge application (`schedbridge submit --policy kairos` with
`spark.schedbridge.agents`, the policy host beside the driver): Kairos really suspends and resumes
executor containers, the results are right, and the cluster is left as it was; `schedbridge serve`
raises and restores the vcores around its life. An agent that does not answer stops the replay
before anything is submitted."""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from bridge.agent.client import AgentClient
from bridge.agent.trial import AgentProcess
from tests.integration.jobs.burn import burn
from tests.integration.process_output import failure_excerpt
from tests.integration.test_replay_preempt_testbed import WORKLOAD, require_root, vcores
from yarnclient.resourcemanager import ResourceManagerClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
JOBS = Path(__file__).resolve().parent / "jobs"
SCHEDBRIDGE = str(Path(sys.executable).parent / "schedbridge")


@pytest.fixture
def operator_agents(testbed, tmp_path: Path) -> Iterator[tuple[Path, dict[str, AgentProcess]]]:
    """One real agent per NodeManager, with its own token file, and the agents file naming them;
    stopped (SIGTERM: each restores its containers) by the pid this fixture started."""
    require_root()
    token_file = tmp_path / "agent.token"
    token_file.write_text(secrets.token_hex(24) + "\n")
    token_file.chmod(0o600)
    rm = ResourceManagerClient(testbed.rm_url)
    addresses = [n.http_address for n in rm.nodes(states=["RUNNING"])]
    agents: dict[str, AgentProcess] = {}
    stopped: dict[str, int | None] = {}
    try:
        for nm in testbed.layout.nodemanagers:
            address = next(a for a in addresses if a.endswith(f":{nm.webapp_port}"))
            agents[address] = AgentProcess(nm.webapp_url, tmp_path / f"agent-{nm.index}.json", f"sb-it21-{nm.index}",
                                           (testbed.layout.nm_dir(nm) / "local",), token=token_file.read_text().strip())
            agents[address].start()
        nodes = "\n".join(f'"{address}" = "{agent.url}"' for address, agent in agents.items())
        path = tmp_path / "agents.toml"
        path.write_text(f'token_file = "agent.token"\nvcores_record = "vcores.json"\n[nodes]\n{nodes}\n')
        yield path, agents
    finally:  # stop what was started before judging how it stopped, so no failure hides another
        for address, agent in agents.items():
            if agent.proc is not None and agent.proc.poll() is None:
                stopped[address] = agent.signal(signal.SIGTERM)
    for address, code in stopped.items():
        assert code == 0, f"agent of {address} exited {code}: {agents[address].log()[-2000:]}"


def replay(workload: Path, results: Path, agents_file: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "replay", str(workload),
               "--policy", "kairos", "--param", "w=2", "--preempt", "--agents", str(agents_file), "--out", str(results)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


def test_kairos_preempts_through_the_agents_the_file_names(testbed, operator_agents, tmp_path: Path) -> None:
    agents_file, agents = operator_agents
    rm = ResourceManagerClient(testbed.rm_url)
    vcores_before = vcores(rm)
    workload, results = tmp_path / "it-preempt.toml", tmp_path / "results"
    workload.write_text(WORKLOAD)
    done = replay(workload, results, agents_file, testbed.spark_env())
    assert done.returncode == 0, failure_excerpt(done.stderr)
    assert f"replay: node agents from --agents {agents_file}" in done.stderr

    jobs = pd.read_csv(results / "jobs.csv")
    assert len(jobs) == 3 and (jobs["status"] == "succeeded").all()
    commands = json.loads((results / "preemption.json").read_text())
    suspended = {c["container"] for c in commands if c["action"] == "suspend" and c["status"] == "ok"}
    resumed = {c["container"] for c in commands if c["action"] == "resume" and c["status"] == "ok"}
    assert suspended, commands
    assert suspended <= resumed  # every suspended container got its CPU back
    assert {c["node"] for c in commands} <= set(agents)
    assert not list(results.glob("agent-*.json"))  # the replay started no agents of its own
    assert vcores(rm) == vcores_before
    assert not (tmp_path / "vcores.json").exists()  # the record goes once every node is restored
    assert all(agent.proc is not None and agent.proc.poll() is None for agent in agents.values())  # not its to stop
    for agent in agents.values():  # the operator's agents hold nothing throttled after the run
        containers = json.loads(Path(agent.log_path.with_suffix(".json")).read_text())["containers"].values()
        assert all(c["share"] is None and not c["frozen"] for c in containers), agent.log_path


def test_an_agent_that_does_not_answer_stops_the_replay_before_it_submits(testbed, tmp_path: Path) -> None:
    rm = ResourceManagerClient(testbed.rm_url)
    apps_before = {a.app_id for a in rm.apps()}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    (tmp_path / "agent.token").write_text(secrets.token_hex(24))
    (tmp_path / "agent.token").chmod(0o600)
    agents_file = tmp_path / "agents.toml"
    agents_file.write_text(f'token_file = "agent.token"\ntimeout_s = 2\nurl = "http://127.0.0.1:{closed}"\n')
    workload = tmp_path / "it-preempt.toml"
    workload.write_text(WORKLOAD)
    env = dict(testbed.spark_env(), SCHEDBRIDGE_AGENTS=str(agents_file))
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "from bridge.cli import main; main()", "replay", str(workload),
                           "--policy", "kairos", "--preempt", "--out", str(tmp_path / "results")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - start < 60
    assert "2 of 2 not usable" in done.stderr and "AgentUnavailable" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert {a.app_id for a in rm.apps()} == apps_before  # nothing was submitted
    assert os.path.exists(agents_file)


def watch_shares(agents: dict[str, AgentProcess], stop: threading.Event, seen: set[str]) -> None:
    """Every container any agent reports held below full share, until ``stop``."""
    clients = [AgentClient(agent.url, agent.token, timeout_s=5) for agent in agents.values()]
    while not stop.wait(0.2):
        for client in clients:
            seen.update(c["id"] for c in client.containers() if c.get("share") is not None)


def test_a_bridge_application_under_kairos_is_preempted_through_the_agents_file(testbed, operator_agents,
                                                                                tmp_path: Path) -> None:
    """4 one-core executors on 2 NodeManagers of N = 1, Q = 1: some node holds two tasks, which take
    turns by container resize; the host beside the driver does it through the file's agents."""
    agents_file, agents = operator_agents
    rm = ResourceManagerClient(testbed.rm_url)
    vcores_before = vcores(rm)
    out, host_log = tmp_path / "out.json", tmp_path / "host.log"
    command = [SCHEDBRIDGE, "submit", "--master", "spark-schedbridge://yarn", "--num-executors", "4",
               "--policy", "kairos", "--param", "node_cores=1", "--param", "w=2",
               "--conf", f"spark.schedbridge.agents={agents_file}", "--conf", f"spark.schedbridge.host.log={host_log}",
               "--conf", "spark.executor.cores=1", "--conf", "spark.dynamicAllocation.enabled=false",
               "--conf", "spark.locality.wait=0s", "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}",
               str(JOBS / "burn.py"), "4", str(out)]
    stop, throttled = threading.Event(), set()
    watcher = threading.Thread(target=watch_shares, args=(agents, stop, throttled), daemon=True)
    watcher.start()
    try:
        done = subprocess.run(command, env={**testbed.spark_env(), "PYTHONPATH": str(ROOT)}, capture_output=True,
                              text=True, timeout=900)
    finally:
        stop.set()
        watcher.join(timeout=30)
    log = host_log.read_text() if host_log.exists() else ""
    assert done.returncode == 0, failure_excerpt(done.stderr) + log[-3000:]
    assert json.loads(out.read_text()) == [burn(i) for i in range(4)]
    assert throttled, log[-3000:]  # some container really ran at the minimum share
    assert vcores(rm) == vcores_before
    assert not (tmp_path / "vcores.json").exists()
    for agent in agents.values():  # nothing left throttled
        client = AgentClient(agent.url, agent.token, timeout_s=5)
        assert all(c.get("share") is None and not c.get("frozen") for c in client.containers())


def test_serve_hosts_kairos_on_the_agents_and_restores_the_vcores_when_stopped(testbed, operator_agents,
                                                                                tmp_path: Path) -> None:
    """`schedbridge serve --policy kairos --agents FILE`: the NodeManagers advertise Q = 1 more vcore
    while it runs, and their own vcores again after SIGTERM."""
    agents_file, _ = operator_agents
    rm = ResourceManagerClient(testbed.rm_url)
    vcores_before = vcores(rm)
    env = {**testbed.spark_env(), "SCHEDBRIDGE_TOKEN": secrets.token_hex(16)}
    with (tmp_path / "serve.log").open("w") as log:
        proc = subprocess.Popen([SCHEDBRIDGE, "serve", "--policy", "kairos", "--port", "0",
                                 "--agents", str(agents_file)],
                                env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while "schedbridge serve: policy" not in (tmp_path / "serve.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
        assert "preempting on 2 NodeManager(s) through their agents, N = 4" in (tmp_path / "serve.log").read_text()
        assert vcores(rm) == {node: v + 1 for node, v in vcores_before.items()}
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0, (tmp_path / "serve.log").read_text()
    assert vcores(rm) == vcores_before
    assert not (tmp_path / "vcores.json").exists()
