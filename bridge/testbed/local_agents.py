"""Node agents for the local testbed, started for one application and stopped with it.

On a real cluster `schedbridge agent` runs on every NodeManager host; on the local testbed all
NodeManagers share this host, so the bridge can start one agent per NodeManager itself
(``LocalTestbedAgents``: the testbed's own agents, when no agents file names others). Each
manages only the given application's containers, under a token made for this run. Needs root
(the agents write cgroups). Each running agent has a record beside the testbed (its pid and how it
was started), so that if the run is killed, `schedbridge testbed restore` can stop it and restore
its containers. An agent that dies mid-run is restarted on its port by an `AgentWatch` (as
systemd or the compose supervisor does on a real node), and the successor lifts what it left.
"""
from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import subprocess
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from bridge.common import atomic
from bridge.agent.client import AgentClient
from bridge.agent.service import DEFAULT_MIN_SHARE
from bridge.agent.trial import AgentProcess
from bridge.testbed.layout import ClusterLayout
from yarnclient import ResourceManagerClient

log = logging.getLogger(__name__)
RESTORE_PAUSE_S = 3.0
WATCH_EVERY_S = 0.5
MAX_RESTARTS = 5


class LocalTestbedAgents:
    """The local testbed without an agents file: one agent per NodeManager, started for the run on
    this host (as root) and stopped with it; ``bridge.nodes.cluster_agents.NodeAgents``."""

    def __init__(self, layout: ClusterLayout, label: str, min_share: float | None = None) -> None:
        """``min_share``: cores a shrunk container keeps (None: the agent's default)."""
        self.layout, self.label = layout, label
        self.min_share = DEFAULT_MIN_SHARE if min_share is None else min_share
        self.rm = ResourceManagerClient(layout.rm_url, user=layout.user)
        self.vcores_record = layout.vcores_record
        self.origin = "node agents started for the run on the local testbed"

    def prepare(self) -> None:
        require_root()

    def open(self, stack: ExitStack, app_id: str, work: Path) -> dict[str, AgentClient]:
        return start_local_agents(stack, self.layout, self.rm, app_id, work, self.label, self.min_share)


class AgentsNeedRoot(PermissionError):
    """Raised before anything starts when this process cannot write cgroups."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise AgentsNeedRoot("node-side preemption starts node agents, which write cgroups: run as root")


def start_local_agents(stack: ExitStack, layout: ClusterLayout, rm: ResourceManagerClient, app_id: str,
                       work: Path, label: str, min_share: float = DEFAULT_MIN_SHARE) -> dict[str, AgentClient]:
    """One agent per NodeManager of ``layout``, managing only ``app_id``'s containers; keyed by the
    NodeManager's web address as the RM reports it. ``stack`` stops them (each restores first).
    Agents of the same label that a killed run left are stopped and restored first."""
    require_root()
    _, failed = restore_recorded_agents(layout, label)
    for failure in failed:
        log.error("a killed run's node agent: %s", failure)
    token = secrets.token_hex(16)
    web_addresses = [n.http_address for n in rm.nodes()]
    agents, watch = {}, AgentWatch()
    for nm in layout.nodemanagers:
        address = next(a for a in web_addresses if a.endswith(f":{nm.webapp_port}"))
        settings = {"nm_url": nm.webapp_url, "state_file": str(work / f"agent-{nm.index}.json"),
                    "cgroup_parent": f"sb-{label}-{nm.index}", "local_dirs": [str(layout.nm_dir(nm) / "local")],
                    "apps": [app_id], "min_share": min_share}
        proc, record = _agent(settings, token), agent_records(layout) / f"{label}-{nm.index}.json"
        stack.callback(stop_agent, proc, record)
        agents[address] = AgentClient(proc.start(), token, timeout_s=10)
        record.parent.mkdir(parents=True, exist_ok=True)
        _record(proc, record, settings)
        watch.add(proc, record, settings)
    watch.start()
    stack.callback(watch.stop)  # first: no restart may race the agents' stop
    return agents


def _record(proc: AgentProcess, record: Path, settings: dict) -> None:
    assert proc.proc is not None, "start() launched it"
    atomic.write_text(record, json.dumps({"pid": proc.proc.pid, "agent": settings}))


class AgentWatch:
    """Restarts a run's agents that die (killed, crashed) on their own port, so that no container
    stays throttled until the run ends: the successor lifts what its predecessor left on start.
    Each restart is logged with its count; an agent that died MAX_RESTARTS times is left down and
    its commands fail, counted by the preemptor."""

    def __init__(self, every_s: float = WATCH_EVERY_S) -> None:
        self.every_s = every_s
        self.watched: list[tuple[AgentProcess, Path, dict]] = []
        self.restarts: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agent-watch", daemon=True)

    def add(self, proc: AgentProcess, record: Path, settings: dict) -> None:
        self.watched.append((proc, record, settings))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            for proc, record, settings in self.watched:
                if proc.proc is not None and proc.proc.poll() is not None and not self._stop.is_set():
                    self._restart(proc, record, settings)

    def _restart(self, proc: AgentProcess, record: Path, settings: dict) -> None:
        count = self.restarts.get(proc.url, 0)
        if count >= MAX_RESTARTS:
            return
        self.restarts[proc.url] = count + 1
        assert proc.proc is not None
        log.warning("node agent %s (NodeManager %s) exited with %s; restarting it (restart %d of at most %d)",
                    proc.url, proc.nm_url, proc.proc.returncode, count + 1, MAX_RESTARTS)
        try:
            proc.restart()
        except (AssertionError, OSError) as exc:  # start() raises AssertionError when no "listening" line comes
            log.error("node agent %s did not restart: %s; see %s", proc.url, exc, proc.log_path)
            return
        _record(proc, record, settings)


def agent_records(layout: ClusterLayout) -> Path:
    """One file per running agent of a run: its pid and settings (never the token)."""
    return layout.home / "agents"


def _agent(settings: dict, token: str = "") -> AgentProcess:
    return AgentProcess(settings["nm_url"], Path(settings["state_file"]), settings["cgroup_parent"],
                        tuple(Path(d) for d in settings["local_dirs"]), apps=tuple(settings["apps"]), token=token,
                        min_share=settings.get("min_share", DEFAULT_MIN_SHARE))


def stop_agent(proc: AgentProcess, record: Path) -> None:
    """SIGTERM (the agent restores every container it touched and removes its groups), then make sure
    it is gone. An agent that died earlier (killed, crashed) restored nothing, and one whose restore
    failed (a group still busy with exiting processes) left some of it: both are finished from the
    agent's state file by `schedbridge agent --restore-only`. The record goes once all is restored."""
    alive = proc.proc is not None and proc.proc.poll() is None
    restored = (alive and proc.signal(signal.SIGTERM) == 0) or _restore_only(proc)
    proc.stop()
    if restored:
        record.unlink(missing_ok=True)


def _restore_only(proc: AgentProcess, attempts: int = 3) -> bool:
    """`agent --restore-only`; tried again after a pause, since a group stays busy while its
    processes exit (a container YARN is killing, slowly at the minimum share)."""
    for attempt in range(attempts):
        if attempt:
            time.sleep(RESTORE_PAUSE_S)
        try:
            code = proc.restore_only()
        except subprocess.TimeoutExpired:
            code = -1
        if code == 0:
            return True
    log.error("node agent %s: restoring its containers failed (exit %d, %d tries); see %s",
              proc.url or "(not started)", code, attempts, proc.log_path)
    return False


def restore_recorded_agents(layout: ClusterLayout, label: str = "*",
                            grace_s: float = 30.0) -> tuple[int, list[str]]:
    """Stop the agents a killed run left behind (by their recorded pid, only while that pid is still
    that agent) and restore their containers; returns (agents handled, failures)."""
    records, failed = sorted(agent_records(layout).glob(f"{label}-*.json")), []
    for record in records:
        try:
            saved = json.loads(record.read_text())
            proc = _agent(saved["agent"])
            _stop_pid(int(saved["pid"]), saved["agent"]["state_file"], grace_s)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            failed.append(f"{record}: {exc}")
            continue
        if _restore_only(proc):
            record.unlink()
        else:
            failed.append(f"{record}: restore failed, see {proc.log_path}")
    return len(records), failed


def _stop_pid(pid: int, state_file: str, grace_s: float) -> None:
    """SIGTERM ``pid`` if it is still the agent of ``state_file`` (a reused pid is left alone);
    SIGKILL after ``grace_s``."""
    if not _runs_agent(pid, state_file):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _runs_agent(pid, state_file):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.1)


def _runs_agent(pid: int, state_file: str) -> bool:
    """``pid`` is a live `schedbridge agent` with this state file (unique to one agent of one run)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    pairs = set(zip(argv, argv[1:]))
    return state != "Z" and "agent" in argv and ("--state-file", state_file) in pairs
