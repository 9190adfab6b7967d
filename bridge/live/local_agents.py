"""Node agents for the local testbed, started for one application and stopped with it.

On a real cluster `schedbridge agent` runs on every NodeManager host; on the local testbed all
NodeManagers share this host, so the bridge can start one agent per NodeManager itself. Each
manages only the given application's containers, under a token made for this run. Needs root
(the agents write cgroups).
"""
from __future__ import annotations

import os
import secrets
import signal
from contextlib import ExitStack
from pathlib import Path

from bridge.agent.client import AgentClient
from bridge.agent.trial import AgentProcess
from bridge.testbed.layout import ClusterLayout
from yarnclient import ResourceManagerClient


class AgentsNeedRoot(PermissionError):
    """Raised before anything starts when this process cannot write cgroups."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise AgentsNeedRoot("node-side preemption starts node agents, which write cgroups: run as root")


def start_local_agents(stack: ExitStack, layout: ClusterLayout, rm: ResourceManagerClient, app_id: str,
                       work: Path, label: str) -> dict[str, AgentClient]:
    """One agent per NodeManager of ``layout``, managing only ``app_id``'s containers; keyed by the
    NodeManager's web address as the RM reports it. ``stack`` stops them (each restores first)."""
    require_root()
    token = secrets.token_hex(16)
    web_addresses = [n.http_address for n in rm.nodes()]
    agents = {}
    for nm in layout.nodemanagers:
        address = next(a for a in web_addresses if a.endswith(f":{nm.webapp_port}"))
        proc = AgentProcess(nm.webapp_url, work / f"agent-{nm.index}.json", f"sb-{label}-{nm.index}",
                            (layout.nm_dir(nm) / "local",), apps=(app_id,), token=token)
        stack.callback(stop_agent, proc)
        agents[address] = AgentClient(proc.start(), token, timeout_s=10)
    return agents


def stop_agent(proc: AgentProcess) -> None:
    """SIGTERM (the agent restores every container it touched), then make sure it is gone; if its
    restore failed (a group still busy with exiting processes), run the restore once more."""
    if proc.proc is not None and proc.proc.poll() is None and proc.signal(signal.SIGTERM) != 0:
        proc.restore_only()
    proc.stop()
