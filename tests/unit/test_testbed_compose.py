"""What a compose container does before and while running its daemons: the shared token, the
cgroup v2 delegation for the node agent, the commands per role and the foreground supervisor."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bridge.testbed import compose, foreground
from bridge.testbed.cgroupdelegate import DelegationError, delegate_cpu
from bridge.testbed.foreground import Command

NM_HOST = "3f2a9c1b7d4e"  # a NodeManager container's hostname (its short container id)


# --- the agents' token -------------------------------------------------------------------------
def test_token_is_created_once_and_then_reused(tmp_path: Path) -> None:
    path = tmp_path / "run" / "agent-token"
    first = compose.ensure_token(path).read_text()
    assert compose.ensure_token(path).read_text() == first
    assert len(first.strip()) >= 16  # the agent's minimum
    assert [p.name for p in path.parent.iterdir()] == ["agent-token"]  # no temporary left behind


# --- cgroup delegation -------------------------------------------------------------------------
def _cgroup_v2(root: Path, subtree: str = "", controllers: str = "cpuset cpu io memory pids") -> Path:
    root.mkdir()
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text(subtree + "\n")
    (root / "cgroup.procs").write_text("1\n")
    return root


def test_v2_container_root_moves_to_a_leaf_and_enables_cpu(tmp_path: Path) -> None:
    root = _cgroup_v2(tmp_path / "cg")
    assert delegate_cpu(root) is True
    assert (root / "init" / "cgroup.procs").read_text() == "1"
    assert (root / "cgroup.subtree_control").read_text() == "+cpu"


def test_nothing_to_delegate_on_v1_or_when_cpu_is_already_enabled(tmp_path: Path) -> None:
    (tmp_path / "v1" / "cpu").mkdir(parents=True)
    assert delegate_cpu(tmp_path / "v1") is False
    root = _cgroup_v2(tmp_path / "cg", subtree="cpu memory")
    assert delegate_cpu(root) is False
    assert not (root / "init").exists()


def test_an_unwritable_or_cpu_less_tree_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DelegationError, match="cpu controller is not available"):
        delegate_cpu(_cgroup_v2(tmp_path / "nocpu", controllers="memory pids"))
    root = _cgroup_v2(tmp_path / "ro")
    (root / "init").write_text("")  # where the leaf must go: an unwritable tree fails like this
    with pytest.raises(DelegationError, match="privileged"):
        delegate_cpu(root)


# --- what each role runs -----------------------------------------------------------------------
def _role(role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Command]:
    monkeypatch.setattr(compose, "delegate_cpu", lambda: False)  # never touch this host's cgroups
    layout = compose.compose_layout(tmp_path, nm_host=NM_HOST)
    compose.render(role, layout)
    return compose.role_commands(role, layout, "fifo", tmp_path / "token", lambda _: None)


def _commands(role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    return [command.argv for command in _role(role, tmp_path, monkeypatch)]


def test_nodemanager_runs_its_daemon_and_an_agent_under_its_own_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nm, agent = _commands("nodemanager", tmp_path, monkeypatch)
    assert nm[-1] == "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
    options = dict(zip(agent[2:-1:2], agent[3:-1:2]))
    assert agent[1] == "agent" and agent[-1] == "--insecure"  # on the compose network, without TLS
    assert options["--host"] == NM_HOST and options["--nm-url"] == f"http://{NM_HOST}:8042"
    assert options["--cgroup-parent"] == f"schedbridge-{NM_HOST}"  # replicas never share groups
    assert Path(options["--token-file"]).read_text().strip()
    site = ET.parse(tmp_path / "conf-nm" / "nodemanager-1" / "yarn-site.xml").getroot()
    local_dirs = next(p.findtext("value") for p in site.iter("property")
                      if p.findtext("name") == "yarn.nodemanager.local-dirs")
    assert options["--nm-local-dir"] == local_dirs


def test_the_agent_starts_only_once_its_nodemanager_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nm, agent = _role("nodemanager", tmp_path, monkeypatch)
    assert nm.after_url is None
    assert agent.after_url == "http://127.0.0.1:8042/ws/v1/node/info"  # the compose health check's URL
    assert agent.restart and not nm.restart  # a dead agent comes back; the NodeManager's exit ends the unit


def test_client_serves_the_chosen_policy_on_loopback_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [serve] = _commands("client", tmp_path, monkeypatch)
    assert serve[1:] == ["serve", "--policy", "fifo", "--host", "127.0.0.1"]
    assert (tmp_path / "token").is_file()  # the client talks to the agents with the same token


def test_datanode_runs_only_its_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [datanode] = _commands("datanode", tmp_path, monkeypatch)
    assert datanode[-1] == "org.apache.hadoop.hdfs.server.datanode.DataNode"
    assert f"{tmp_path / 'conf'}:" in datanode[datanode.index("-cp") + 1]


# --- the foreground supervisor -----------------------------------------------------------------
def _supervisor(*scripts: str, after_url: str | None = None, timeout_s: float = 300,
                restart: bool = False) -> subprocess.Popen[str]:
    """The supervisor over `scripts`; every script but the first waits for `after_url` if given and,
    with `restart`, is restarted (after 0.05 s rather than the default pause) when it exits."""
    commands = [([sys.executable, "-c", script], after_url if i else None, restart and i > 0)
                for i, script in enumerate(scripts)]
    code = ("import sys; from bridge.testbed import foreground as f; f.RESTART_PAUSE_S = 0.05; "
            f"sys.exit(f.supervise([f.Command(*c) for c in {commands!r}], ready_timeout_s={timeout_s}))")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


SLEEPER = "import os, time; os.write(1, b'ready\\n'); time.sleep(120)"  # one write: lines never interleave


def test_the_first_process_to_exit_stops_the_others_and_gives_the_exit_code() -> None:
    proc = _supervisor(SLEEPER, "import sys; sys.exit(3)")
    assert proc.wait(timeout=60) == 3  # well before the sleeper's two minutes


def test_stop_signals_reach_every_process() -> None:
    proc = _supervisor(SLEEPER, SLEEPER)
    assert [proc.stdout.readline(), proc.stdout.readline()] == ["ready\n", "ready\n"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM


# A daemon that starts answering HTTP on port {port} after 1.5 s.
SLOW_DAEMON = """import http.server, time
time.sleep(1.5)
http.server.HTTPServer(("127.0.0.1", {port}), http.server.SimpleHTTPRequestHandler).serve_forever()"""


def test_a_later_process_waits_for_the_url_of_an_earlier_one() -> None:
    with socket.socket() as probe:  # a free port, nothing listening on it until the daemon does
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = "import os, time; os.write(1, b'started\\n'); time.sleep(120)"
    begin = time.monotonic()
    proc = _supervisor(SLOW_DAEMON.format(port=port), started, after_url=f"http://127.0.0.1:{port}/")
    assert proc.stdout.readline() == "started\n"
    assert time.monotonic() - begin >= 1.5  # not before the daemon answered
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM


def test_a_url_that_never_answers_stops_the_container() -> None:
    proc = _supervisor(SLEEPER, "print('never started')", after_url="http://127.0.0.1:9/", timeout_s=2)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert proc.stdout.read() == "ready\n"


def test_a_restarted_process_comes_back_while_the_others_keep_running(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    crash_twice = (f"import os, time; f = open({str(starts)!r}, 'a'); f.write('x'); f.close()\n"
                   f"n = os.path.getsize({str(starts)!r})\n"
                   "time.sleep(120) if n >= 3 else os.kill(os.getpid(), 9)")
    proc = _supervisor(SLEEPER, crash_twice, restart=True)
    assert proc.stdout.readline() == "ready\n"
    deadline = time.monotonic() + 60
    while (not starts.exists() or starts.stat().st_size < 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert starts.read_text() == "xxx" and proc.poll() is None  # killed twice, running the third time
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert proc.stdout.read() == ""  # the sleeper was never restarted
    assert proc.stderr.read().count("restarting it") == 2


def test_a_crash_loop_stops_the_container_with_the_last_exit_code() -> None:
    proc = _supervisor(SLEEPER, "import sys; sys.exit(7)", restart=True)
    assert proc.wait(timeout=60) == 7
    err = proc.stderr.read()
    assert err.count("restarting it") == foreground.MAX_RESTARTS and "stopping the container" in err
