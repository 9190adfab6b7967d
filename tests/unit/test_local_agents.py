"""Stopping the replay's node agents restores their containers, whether the agent is alive or not."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bridge.testbed import local_agents
from bridge.testbed.layout import default_layout
from bridge.testbed.local_agents import stop_agent


class Popen:
    def __init__(self, returncode: int | None) -> None:
        self.returncode = returncode

    def poll(self) -> int | None:
        return self.returncode


class Agent:
    """The parts of `bridge.agent.trial.AgentProcess` that `stop_agent` uses, recording the calls."""

    def __init__(self, returncode: int | None, on_term: int = 0, on_restore: int = 0) -> None:
        self.proc, self.url, self.log_path = Popen(returncode), "http://127.0.0.1:1", Path("/nonexistent.log")
        self.on_term, self.on_restore = on_term, on_restore
        self.calls: list[str] = []

    def signal(self, signum: int) -> int:
        self.calls.append(signal.Signals(signum).name)
        return self.on_term

    def restore_only(self) -> int:
        self.calls.append("restore-only")
        return self.on_restore

    def stop(self) -> None:
        self.calls.append("stop")


@pytest.fixture
def record(tmp_path: Path) -> Path:
    path = tmp_path / "replay-1.json"
    path.write_text("{}")
    return path


def test_a_running_agent_restores_itself_on_sigterm(record: Path) -> None:
    agent = Agent(returncode=None)
    stop_agent(agent, record)
    assert agent.calls == ["SIGTERM", "stop"] and not record.exists()


def test_a_dead_agent_is_restored_from_its_state_file(record: Path) -> None:
    agent = Agent(returncode=-9)                 # SIGKILLed during the run
    stop_agent(agent, record)
    assert agent.calls == ["restore-only", "stop"] and not record.exists()


def test_an_agent_whose_restores_fail_keeps_its_record(record: Path, caplog: pytest.LogCaptureFixture,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_agents, "RESTORE_PAUSE_S", 0.0)
    agent = Agent(returncode=None, on_term=1, on_restore=1)
    stop_agent(agent, record)
    assert agent.calls == ["SIGTERM", "restore-only", "restore-only", "restore-only", "stop"]
    assert "restoring its containers failed (exit 1, 3 tries); see /nonexistent.log" in caplog.text
    assert record.exists()                       # for `schedbridge testbed restore`


def _record_agent(layout_home: Path, name: str, pid: int, state_dir: Path) -> Path:
    settings = {"nm_url": "http://127.0.0.1:1", "state_file": str(state_dir / f"{name}.json"),
                "cgroup_parent": f"sb-test-{name}", "local_dirs": [], "apps": ["application_1_0001"]}
    record = layout_home / "agents" / f"{name}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"pid": pid, "agent": settings}))
    return record


def test_restore_stops_only_a_pid_still_running_the_recorded_agent(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDBRIDGE_TESTBED", str(tmp_path))
    restored: list[str] = []

    def restore_only(proc: local_agents.AgentProcess) -> bool:
        restored.append(proc.args[proc.args.index("--state-file") + 1])
        return True

    monkeypatch.setattr(local_agents, "_restore_only", restore_only)
    layout = default_layout()
    orphan = _record_agent(layout.home, "replay-orphan", 0, tmp_path)
    args = local_agents._agent(json.loads(orphan.read_text())["agent"]).args
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args])  # the orphan
    state_file = str(tmp_path / "replay-orphan.json")
    deadline = time.monotonic() + 10  # it looks like the agent once /proc shows its command line
    while not local_agents._runs_agent(stand_in.pid, state_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert local_agents._runs_agent(stand_in.pid, state_file), Path(f"/proc/{stand_in.pid}/cmdline").read_bytes()
    _record_agent(layout.home, "replay-orphan", stand_in.pid, tmp_path)
    _record_agent(layout.home, "replay-reused", os.getpid(), tmp_path)   # that pid now runs something else
    _record_agent(layout.home, "bench-1", os.getpid(), tmp_path)         # another label: left alone
    try:
        assert local_agents.restore_recorded_agents(layout, "replay", grace_s=5) == (2, [])
        assert stand_in.wait(timeout=5) == -signal.SIGTERM
    finally:
        stand_in.kill()
    assert sorted(restored) == [str(tmp_path / "replay-orphan.json"), str(tmp_path / "replay-reused.json")]
    assert [p.name for p in (layout.home / "agents").iterdir()] == ["bench-1.json"]


class Restartable:
    """An `AgentProcess` whose process is a real `sleep`: SIGKILL it and the watch must start another."""

    def __init__(self, fail_restarts: bool = False) -> None:
        self.url, self.nm_url, self.log_path = "http://127.0.0.1:1", "http://127.0.0.1:2", Path("/nonexistent.log")
        self.fail_restarts = fail_restarts
        self.proc = self._spawn()
        self.starts = 1

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["sleep", "120"])

    def restart(self) -> str:
        self.starts += 1
        if self.fail_restarts:
            raise AssertionError("agent did not start")
        self.proc = self._spawn()
        return self.url


def _wait(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_watch_restarts_a_killed_agent_and_records_its_new_pid(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    agent, record = Restartable(), tmp_path / "replay-1.json"
    watch = local_agents.AgentWatch(every_s=0.02)
    watch.add(agent, record, {"state_file": "s"})  # type: ignore[arg-type]
    watch.start()
    try:
        first = agent.proc
        first.kill()
        _wait(lambda: agent.starts == 2 and record.exists())
        assert agent.proc.poll() is None and agent.proc.pid != first.pid
        assert json.loads(record.read_text()) == {"pid": agent.proc.pid, "agent": {"state_file": "s"}}
        assert watch.restarts == {agent.url: 1} and "restart 1 of at most" in caplog.text
    finally:
        watch.stop()
        agent.proc.kill()
    agent.proc.wait()
    time.sleep(0.1)
    assert agent.starts == 2  # a stopped watch restarts nothing


def test_the_watch_gives_up_after_its_restarts(tmp_path: Path) -> None:
    agent = Restartable(fail_restarts=True)
    agent.proc.kill()
    watch = local_agents.AgentWatch(every_s=0.01)
    watch.add(agent, tmp_path / "r.json", {})  # type: ignore[arg-type]
    watch.start()
    try:
        _wait(lambda: agent.starts == 1 + local_agents.MAX_RESTARTS)
        time.sleep(0.1)
    finally:
        watch.stop()
    assert agent.starts == 1 + local_agents.MAX_RESTARTS
