"""Node-agent benchmark on this host's cgroups (v1), without YARN: suspend / resume / freeze latency
from the bridge's command to its effect as the kernel's cgroup accounting shows it, and the agent's own
CPU overhead. Prints figures; asserts nothing.

    schedbridge bench agent [--trials 20] [--containers 8] [--idle-s 30]

Effects: suspend = the group's `cpu.stat` nr_throttled first increments (CFS throttles once the
0.1-core quota of the current period is used up); resume = the group's `cpuacct.usage` first grows, the
command being sent while the throttled group sits idle in its CFS period; freeze = `freezer.state` reads
FROZEN; thaw = usage first grows after resuming a frozen group. Overhead = the agent process's
utime+stime, idle (reconciling every second over `--containers` containers) and per command.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

from bridge.agent.client import AgentClient
from bridge.agent.trial import (
    CGROUP_ROOT,
    IDLE,
    TOKEN,
    AgentProcess,
    FakeContainer,
    FakeNodeManager,
    proc_cpu_ns,
    remove_groups,
    usage_file,
    wait_for,
)
from bridge.common.metrics import median, percentile

APP = "container_1763800000000_0007_01_{:06d}"


def proc_cpu_s(pid: int) -> float:
    return proc_cpu_ns([pid]) / 1e9


def poll_until(probe: Callable[[], bool], timeout_s: float = 2.0) -> float:
    """Monotonic time at which `probe` first holds, polling as fast as Python allows."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if probe():
            return time.monotonic()
    raise TimeoutError("effect not observed")


def throttled_gap(read_ns: Callable[[], int], flat_s: float = 0.005, timeout_s: float = 2.0) -> None:
    """Wait until the throttled group sits in the idle part of a CFS period (usage flat for `flat_s`)."""
    last, since = read_ns(), time.monotonic()
    deadline = since + timeout_s
    while time.monotonic() < deadline:
        used = read_ns()
        if used != last:
            last, since = used, time.monotonic()
        elif time.monotonic() - since >= flat_s:
            return
    raise TimeoutError("no throttled gap observed")


def summary(values_s: list[float]) -> str:
    ms = [v * 1000 for v in values_s]
    return (f"median {median(ms):.1f} ms, p90 {percentile(ms, 90):.1f} ms, "
            f"max {max(ms):.1f} ms (n={len(ms)})")


def above(read: Callable[[], int], baseline: int) -> Callable[[], bool]:
    """An effect test: has `read()` grown past the `baseline` taken before the command?"""
    return lambda: read() > baseline


def measure(client: AgentClient, cid: str, parent: str, trials: int) -> dict[str, list[float]]:
    """Per trial: suspend, resume (sent inside a throttled gap), freeze, thaw; each timed to its effect."""
    cpu_dir, usage = CGROUP_ROOT / "cpu" / parent / cid, usage_file(parent, cid)
    freezer = CGROUP_ROOT / "freezer" / parent / cid / "freezer.state"

    def throttles() -> int:
        return int((cpu_dir / "cpu.stat").read_text().split()[3])  # "nr_periods N nr_throttled M ..."

    def read_ns() -> int:
        return int(usage.read_text())

    out: dict[str, list[float]] = {}

    def timed(name: str, command: Callable[[], object], effect: Callable[[], bool]) -> None:
        t0 = time.monotonic()
        command()
        out.setdefault(name + "_rtt", []).append(time.monotonic() - t0)
        out.setdefault(name, []).append(poll_until(effect) - t0)

    for _ in range(trials):
        client.resume(cid)
        time.sleep(0.2)
        before = throttles()
        timed("suspend", lambda: client.suspend(cid), above(throttles, before))
        throttled_gap(read_ns)
        used = read_ns()
        timed("resume", lambda: client.resume(cid), above(read_ns, used))
        timed("freeze", lambda: client.suspend(cid, freeze=True), lambda: freezer.read_text().strip() == "FROZEN")
        time.sleep(0.05)
        used = read_ns()
        timed("thaw", lambda: client.resume(cid), above(read_ns, used))
    return out


def overhead(agent: AgentProcess, client: AgentClient, cid: str, parent: str, trials: int,
             idle_s: float) -> tuple[dict[str, list[float]], float, float]:
    """Latencies, the agent's idle CPU (cores) and its CPU per command (s)."""
    assert agent.proc is not None, "the agent is started"
    pid = agent.proc.pid
    cpu0 = proc_cpu_s(pid)
    time.sleep(idle_s)
    idle_core = (proc_cpu_s(pid) - cpu0) / idle_s
    cpu0, t0 = proc_cpu_s(pid), time.monotonic()
    results = measure(client, cid, parent, trials)
    per_command = (proc_cpu_s(pid) - cpu0 - idle_core * (time.monotonic() - t0)) / (5 * trials)
    return results, idle_core, per_command


@click.command("agent")
@click.option("--trials", default=20, show_default=True)
@click.option("--containers", default=8, show_default=True, help="Containers on the node (1 spins, rest sleep)")
@click.option("--idle-s", default=30.0, show_default=True, help="Window for the agent's idle overhead")
def agent(trials: int, containers: int, idle_s: float) -> None:
    """Node agent on this host's cgroups (v1, root): suspend/resume/freeze latency, CPU overhead."""
    parent = f"sbbench-{os.getpid()}"
    ids = [APP.format(i + 2) for i in range(containers)]
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "local"
        nm = FakeNodeManager()
        nm.states.update({cid: "RUNNING" for cid in ids})
        fakes = [FakeContainer(local, ids[0])] + [FakeContainer(local, cid, program=IDLE) for cid in ids[1:]]
        agent = AgentProcess(nm.url, Path(tmp) / "state.json", parent, (local,), reconcile_interval=1.0)
        try:
            agent.start()
            client = AgentClient(agent.url, TOKEN, timeout_s=10)
            wait_for(lambda: sum(c["managed"] for c in client.containers()) == len(ids), 15,
                     "the agent to adopt every container")
            results, idle_core, per_command = overhead(agent, client, ids[0], parent, trials, idle_s)
        finally:
            agent.stop()
            for fake in fakes:
                fake.kill()
            nm.close()
            remove_groups(parent)
    processes = sum(1 for p in os.listdir("/proc") if p.isdigit())
    print(f"host: {os.cpu_count()} cores, {processes} processes, load {os.getloadavg()[0]:.2f}")
    for key in ("suspend", "resume", "freeze", "thaw"):
        print(f"{key:8s} command->effect {summary(results[key])}; round trip {summary(results[key + '_rtt'])}")
    print(f"agent idle overhead: {100 * idle_core:.2f}% of one core ({containers} containers, reconcile 1 s)")
    print(f"agent CPU per command: {1000 * per_command:.2f} ms")
    print(json.dumps({k: [round(v * 1000, 2) for v in vs] for k, vs in results.items()}))

