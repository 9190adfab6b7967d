"""An agents file on the real testbed treated as any cluster: the test starts a `schedbridge agent`
per NodeManager itself (as an operator's services would run) and writes an agents file.
`schedbridge serve --agents FILE` raises and restores the vcores around its life; an agent that
does not answer stops the replay before anything is submitted.

Preempting through an agents file (`replay --preempt` and a bridge application under Kairos, each
suspending and resuming real containers through agents it did not start, the cluster left as it
was) runs on the compose cluster, whose NodeManagers run their own agents:
`test_compose_cluster.py`. It ran here too, once per lane; the compose cluster is the real case."""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.agent.trial import AgentProcess
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
