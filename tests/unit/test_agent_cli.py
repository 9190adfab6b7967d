"""`schedbridge agent` refuses bad setups with a clear message, not a traceback."""
from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.agent.cgroups import CgroupV1
from bridge.agent.cli import TOKEN_ENV, agent
from bridge.agent.client import AgentClient
from bridge.agent.state import Managed, StateFile
from bridge.agent.trial import SCHEDBRIDGE, wait_for
from bridge.agent.trial import FakeNodeManager as TrialNodeManager
from tests.certs import make_cert
from tests.unit.agent_fakes import CID, LOCAL, container_tree
from tests.unit.test_agent_cgroups import v1_root

TOKEN = "s3cret-token-0123456789"


def run(tmp_path: Path, *args: str, token: str | None = TOKEN):
    env = {TOKEN_ENV: token} if token else {TOKEN_ENV: ""}
    base = ["--nm-url", "http://127.0.0.1:9", "--state-file", str(tmp_path / "s.json"),
            "--cgroup-root", str(v1_root(tmp_path)), "--proc-root", str(tmp_path)]
    return CliRunner().invoke(agent, base + list(args), env=env)


def test_missing_token_is_a_usage_error(tmp_path: Path) -> None:
    result = run(tmp_path, token=None)
    assert result.exit_code == 2 and "no shared token" in result.output


@pytest.mark.parametrize("mode", [0o604, 0o602])
def test_a_token_file_every_user_can_read_or_write_is_refused(tmp_path: Path, mode: int) -> None:
    token_file = tmp_path / "agent.token"
    token_file.write_text(TOKEN)
    token_file.chmod(mode)
    result = run(tmp_path, "--token-file", str(token_file), token=None)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"token file {token_file} is readable or writable by every user; chmod o-rw it" in result.output
    assert "--token-file" in result.output
    assert not (tmp_path / "s.json").exists()  # refused before anything was touched


def test_a_non_loopback_listen_needs_tls_or_insecure(tmp_path: Path) -> None:
    result = run(tmp_path, "--host", "10.255.255.1")
    assert result.exit_code == 2 and "refuses to listen on '10.255.255.1' without TLS" in result.output
    assert "--tls-cert and --tls-key" in result.output and not (tmp_path / "s.json").exists()
    cert = make_cert(tmp_path)
    result = run(tmp_path, "--tls-cert", str(cert.cert))
    assert result.exit_code == 2 and "--tls-cert and --tls-key go together" in result.output
    result = run(tmp_path, "--tls-cert", str(cert.cert), "--tls-key", str(cert.cert))
    assert result.exit_code == 2 and f"cannot load the TLS certificate {cert.cert}" in result.output
    assert "Traceback" not in result.output


def test_missing_cgroup_controller_is_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(agent, ["--nm-url", "http://127.0.0.1:9", "--cgroup-root", str(tmp_path / "none"),
                                        "--state-file", str(tmp_path / "s.json")],
                                env={TOKEN_ENV: "s3cret-token-0123456789"})
    assert result.exit_code == 1 and "no usable cgroup CPU controller" in result.output


# -- start-up order and the node lock, with the real `schedbridge agent` process on fake /proc and cgroup trees --

PARENT = "sb"


@pytest.fixture
def fake_node(tmp_path: Path) -> Iterator[FakeNode]:
    nm = TrialNodeManager()
    nm.states[CID] = "RUNNING"
    proc = tmp_path / "proc"
    container_tree(proc)
    try:
        yield FakeNode(tmp_path, v1_root(tmp_path), proc, nm.url)
    finally:
        nm.close()


@dataclass
class FakeNode:
    """A node of fake trees: `root` (cgroup v1), `proc` (one container, CID), an NM REST fake at `nm_url`."""

    base: Path
    root: Path
    proc: Path
    nm_url: str

    def args(self, *extra: str) -> list[str]:
        return [str(SCHEDBRIDGE), "agent", "--nm-url", self.nm_url, "--port", "0",
                "--state-file", str(self.base / "state.json"), "--cgroup-root", str(self.root),
                "--cgroup-parent", PARENT, "--proc-root", str(self.proc), "--nm-local-dir", str(LOCAL),
                "--reconcile-interval", "60", *extra]

    def quota(self) -> str:
        return (self.root / "cpu" / PARENT / CID / "cpu.cfs_quota_us").read_text()

    def leave_a_throttle(self) -> None:
        """What a crashed agent leaves: a group at 0.1 core and the state file naming it."""
        cg = CgroupV1(self.root, PARENT, self.proc)
        cg.create(CID)
        cg.set_share(CID, 0.1)
        StateFile(self.base / "state.json").save({CID: Managed(origin={"cpu": "/"}, share=0.1)})

    def snapshot(self) -> dict[str, str]:
        """Every file under the node (cgroup files, state file) with its content."""
        files = (p.relative_to(self.base) for p in sorted(self.base.rglob("*")) if p.is_file() and not p.is_symlink())
        return {str(rel): (self.base / rel).read_text() for rel in files if rel.parts[0] != "proc"}


def run_agent(args: list[str], timeout_s: float = 20.0) -> subprocess.CompletedProcess[str]:
    """The agent must refuse and exit by itself; one that serves instead is a failure (and is killed)."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout_s,
                              env=dict(os.environ, **{TOKEN_ENV: TOKEN}))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the agent kept running instead of refusing: {' '.join(args)}")


@pytest.mark.parametrize("host", ["0", "0x0", "::", "0.0.0.0", "::ffff:0.0.0.0"])
def test_wildcard_hosts_are_refused_before_anything_else(fake_node: FakeNode, host: str) -> None:
    fake_node.leave_a_throttle()
    before = fake_node.snapshot()
    result = run_agent(fake_node.args("--host", host))
    assert result.returncode == 2 and "--host" in result.stderr and "wildcard" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert fake_node.snapshot() == before  # the leftover throttle is untouched: nothing ran before the check


def test_second_agent_refuses_to_start_and_changes_nothing(fake_node: FakeNode) -> None:
    first, client = start_agent(fake_node)
    try:
        client.suspend(CID)
        before = fake_node.snapshot()
        assert fake_node.quota() == "10000"

        second = run_agent(fake_node.args())
        assert second.returncode == 1 and f"another agent (pid {first.pid})" in second.stderr, second.stderr
        assert fake_node.snapshot() == before  # the first agent's throttle and state are untouched
        assert client.resume(CID)["throttled"] is False and fake_node.quota() == "-1"  # and it still serves
    finally:
        first.kill()
        first.wait(timeout=10)


def test_a_port_in_use_is_refused_before_leftovers_are_touched(fake_node: FakeNode) -> None:
    fake_node.leave_a_throttle()
    before = fake_node.snapshot()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = run_agent(fake_node.args("--port", port))  # the last --port wins
    assert result.returncode == 1 and f"cannot listen on --host 127.0.0.1 --port {port}" in result.stderr, result.stderr
    after = fake_node.snapshot()
    del after["state.json.lock"]  # taken before the bind, as it must be
    assert after == before  # the restore comes only after the bind


def start_agent(node: FakeNode) -> tuple[subprocess.Popen[str], AgentClient]:
    proc = subprocess.Popen(node.args(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, **{TOKEN_ENV: TOKEN}))
    line = proc.stdout.readline()
    assert "listening on" in line, f"the agent did not start: {line!r}"
    client = AgentClient(line.split()[-1], TOKEN, timeout_s=5)
    # its first reconciliation (the only one: --reconcile-interval 60) adopts CID; wait until it is done
    wait_for(lambda: client.container(CID)["managed"], 10, "the agent to adopt the container")
    return proc, client


def test_restart_after_sigkill_restores_the_quota(fake_node: FakeNode) -> None:
    first, client = start_agent(fake_node)
    try:
        client.suspend(CID)
        first.kill()  # SIGKILL: no clean-up, the throttle stays, and the kernel drops the lock
        first.wait(timeout=10)
        assert fake_node.quota() == "10000"
        restarted, client = start_agent(fake_node)
        try:
            assert fake_node.quota() == "-1"  # (a fake group cannot be rmdir'ed; real ones are, in
            assert client.node()["cpus"] >= 1  # tests/integration/test_agent_cgroups.py) and it serves
        finally:
            restarted.kill()
            restarted.wait(timeout=10)
    finally:
        first.kill()
        first.wait(timeout=10)


def test_restore_only_needs_only_the_state_file(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "state.json")
    state.save({CID: Managed(origin={"cpu": "/"}, share=0.1)})  # its group is already gone (e.g. a reboot)
    result = CliRunner().invoke(agent, ["--restore-only", "--state-file", str(state.path),
                                        "--cgroup-root", str(v1_root(tmp_path)), "--cgroup-parent", PARENT],
                                env={TOKEN_ENV: ""})
    assert result.exit_code == 0, result.output
    assert state.load() == {}


UNIT = Path(__file__).resolve().parents[2] / "deploy" / "systemd" / "schedbridge-agent.service"


def unit_settings() -> dict[str, str]:
    text = UNIT.read_text().replace("\\\n", " ")
    lines = (line.strip() for line in text.splitlines())
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def test_systemd_unit_restarts_and_its_stop_restore_works_as_written(tmp_path: Path) -> None:
    unit = unit_settings()
    assert unit["Restart"] == "always" and unit["KillSignal"] == "SIGTERM"
    options = {opt for param in agent.params for opt in param.opts}
    for key in ("ExecStart", "ExecStopPost"):
        assert {word for word in unit[key].split() if word.startswith("--")} <= options, key
    state = StateFile(tmp_path / "state.json")
    state.save({CID: Managed(origin={"cpu": "/"}, share=0.1)})
    stop_post = unit["ExecStopPost"].replace("${SCHEDBRIDGE_AGENT_PORT}", "8478").replace(
        "$SCHEDBRIDGE_AGENT_STATE_ARGS", f"--state-file {state.path} --cgroup-root {v1_root(tmp_path)}").split()
    assert stop_post[1:3] == ["agent", "--restore-only"]
    result = CliRunner().invoke(agent, stop_post[2:], env={TOKEN_ENV: ""})
    assert result.exit_code == 0, result.output
    assert state.load() == {}
