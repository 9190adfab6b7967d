"""`schedbridge replay --policy P --preempt` on the real testbed, for each family of preempting
policy: the policy's node scheduler suspends and resumes real executor containers through node
agents the replay starts, every job finishes, and the cluster is left as it was (vcores restored,
agents stopped, no application running). Kairos (least attained service, by quantum) is the shared
demo's run (its preemption comparison is exactly such a replay, on WordCount jobs); Falcon (by
runtime estimate and priority) replays a trace of spinning tasks here. Big-C takes the same generic
path as Falcon (its registry entry's Preempts): tests/unit/test_node_engine.py drives both.
Then crash recovery: an agent SIGKILLed mid-run (the run restarts it and its successor lifts its
throttles), and a replay SIGKILLed mid-run whose raised vcores `testbed restore` puts back."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from bridge.history.events import ExecutorAdded
from bridge.history.logs import log_lines
from tests import needs
from tests.integration.demo_run import KAIROS_Q, DemoRun
from tests.integration.process_output import failure_excerpt
from yarnclient.resourcemanager import ResourceManagerClient

pytestmark = pytest.mark.integration

# Three CPU-stretched WordCount jobs close together: 2 map + 2 reduce tasks each, so the six
# executors (N = 2 per NodeManager, Q = 1) hold more tasks than N per node and Kairos suspends.
WORKLOAD = """
name = "it-preempt"
seed = 3
jobs = 3
arrival = "fixed"
mean_interarrival_s = 1.0

[inputs.wc]
kind = "wordcount"
size_mb = 2
block_mb = 1

[categories.wc]
kind = "wordcount"
input = "wc"
reduces = 2
extra_flops = 200
probability = 1.0
"""


def require_root() -> None:
    needs.root("the replay's node agents resize containers through cgroups")


def vcores(rm: ResourceManagerClient) -> dict[str, int]:
    """Every NodeManager's advertised vcores, by node id."""
    return {n.node_id: n.vcores_total for n in rm.nodes()}


def configured_vcores(testbed) -> list[int]:
    """The vcores the testbed's layout gives its NodeManagers, sorted: what YARN must advertise
    once every raise is undone."""
    return sorted(nm.vcores for nm in testbed.layout.nodemanagers)


def executors_per_nodemanager(results: Path) -> dict[str, int]:
    """How many executors the run's application had on each NodeManager (web address), from its
    event log: where YARN really placed them."""
    [log] = (results / "eventlogs").iterdir()
    added = (line.event for line in log_lines(log) if line.event and line.event.get("Event") == ExecutorAdded.NAME)
    return dict(Counter(e["Executor Info"]["Attributes"]["NM_HTTP_ADDRESS"] for e in added))


def containers_in_event_log(results: Path) -> set[str]:
    """The containers the run's event log says were suspended and the agent applied it: the
    host's replies tell the plugin, which posts them for Spark's event log and the schedbridge tab."""
    [log] = (results / "eventlogs").iterdir()
    told = (line.event for line in log_lines(log)
            if line.event and line.event.get("Event") == "org.schedbridge.spark.BridgeEvents$ContainerChange")
    return {e["container"] for e in told if e["suspend"] and e["ok"]}


def assert_preempted_and_left_clean(results: Path, rm: ResourceManagerClient, testbed, per_node: int,
                                    jobs: int) -> None:
    """A `--preempt` replay's results: every job succeeded, some container was really suspended and
    each suspended one resumed (and the event log names suspended ones), the executors were N + Q per
    NodeManager, every agent restored its containers before it stopped, and the cluster holds nothing
    of the run."""
    table = pd.read_csv(results / "jobs.csv")
    assert len(table) == jobs and (table["status"] == "succeeded").all(), table
    meta = json.loads((results / "meta.json").read_text())
    assert meta["state"] == "complete" and meta["preempt"] is True
    commands = json.loads((results / "preemption.json").read_text())
    suspended = {c["container"] for c in commands if c["action"] == "suspend" and c["status"] == "ok"}
    resumed = {c["container"] for c in commands if c["action"] == "resume" and c["status"] == "ok"}
    assert suspended, commands
    assert suspended <= resumed  # every suspended container got its CPU back
    assert containers_in_event_log(results) & suspended  # the last ones may end after the last reply
    assert containers_in_event_log(results) <= suspended
    assert executors_per_nodemanager(results) == {n.http_address: per_node for n in rm.nodes()}
    states = list(results.glob("agent-*.json"))
    assert len(states) == len(testbed.layout.nodemanagers)  # one agent per NodeManager
    for state in states:  # each agent restored its containers before it stopped
        containers = json.loads(state.read_text())["containers"].values()
        assert all(c["share"] is None and not c["frozen"] for c in containers), state
    assert sorted(vcores(rm).values()) == configured_vcores(testbed)
    app_ids = set(table["app_id"].dropna())
    assert app_ids and not [a for a in rm.apps(states=["RUNNING", "ACCEPTED"]) if a.app_id in app_ids]


@pytest.mark.long  # make test-long: reads the shared demo run
def test_kairos_resizes_real_containers_and_leaves_the_cluster_clean(demo_run: DemoRun, testbed) -> None:
    """The demo's Kairos run: 2 one-core executors on 2 NodeManagers, so N = 1 per node, plus Q."""
    rm = ResourceManagerClient(testbed.rm_url)
    nodes = len(testbed.layout.nodemanagers)
    assert_preempted_and_left_clean(demo_run.live_dir("preemption", "kairos"), rm, testbed, 2 // nodes + KAIROS_Q,
                                    jobs=4)


# A trace for the policies that preempt by runtime estimate (the replay gives each trace job its
# mean task duration as its estimate): a long job fills the four slots (2 per NodeManager), then
# two short jobs arrive and must preempt long tasks to run. Tasks spin, so a shrunk container
# really loses its CPU.
TRACE = """0 4 12 12 12 12 12
3 2 2 2 2
4 1 2 2
"""
TRACE_WORKLOAD = """
name = "it-preempt-trace"
seed = 3

[trace]
path = "it.trace"
time_scale = 1.0
task_mode = "spin"
"""

@pytest.mark.long  # make test-long: a replay of its own (make test resizes containers through the agent tests)
def test_falcon_resizes_real_containers_and_leaves_the_cluster_clean(testbed, tmp_path: Path) -> None:
    """Falcon with delta = 0, so any waiting task that beats a running one preempts it."""
    require_root()
    rm = ResourceManagerClient(testbed.rm_url)
    workload, results = tmp_path / "it-preempt.toml", tmp_path / "results"
    workload.write_text(TRACE_WORKLOAD)
    (tmp_path / "it.trace").write_text(TRACE)
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "replay", str(workload),
               "--policy", "falcon", "--preempt", "--param", "delta=0", "--out", str(results)]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    assert_preempted_and_left_clean(results, rm, testbed, 2 + 1, jobs=3)  # N = 2 per node, Q = 1


# -- crash recovery ------------------------------------------------------------------------------

# Longer jobs than above, so the run goes on well after an agent is killed.
LONG_WORKLOAD = WORKLOAD.replace('"it-preempt"', '"it-crash"').replace("extra_flops = 200", "extra_flops = 400")
CONTROLLERS = ("cpu", "cpuacct", "freezer")


def _start_replay(testbed, workload: Path, results: Path) -> subprocess.Popen:
    """The replay, its output in files beside ``results`` (a pipe nobody reads would stall it)."""
    with results.with_suffix(".out").open("w") as out, results.with_suffix(".err").open("w") as err:
        return subprocess.Popen(_replay(workload, results), env=testbed.spark_env(), stdout=out, stderr=err)


def _replay(workload: Path, results: Path) -> list[str]:
    return [sys.executable, "-c", "from bridge.cli import main; main()", "replay", str(workload),
            "--policy", "kairos", "--preempt", "--param", "w=2", "--out", str(results)]


def _pids_naming(text: str) -> list[int]:
    """Processes whose command line names ``text`` (a path inside this test's own tmp dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _container_pids(app_id: str) -> list[int]:
    """Processes of ``app_id``'s YARN containers (their environment names a container of it)."""
    marker = ("CONTAINER_ID=container_" + app_id.removeprefix("application_") + "_").encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _throttled(state_file: Path) -> list[str]:
    try:
        containers = json.loads(state_file.read_text())["containers"]
    except (OSError, ValueError, KeyError):
        return []
    return [cid for cid, c in containers.items() if c["share"] is not None]


def _groups(parent: str) -> list[Path]:
    return [p for c in CONTROLLERS if (p := Path("/sys/fs/cgroup") / c / parent).exists()]


def _eventually(probe, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _wait_for(replay: subprocess.Popen, probe, timeout_s: float, what: str, every_s: float = 0.5):
    """Poll ``probe`` while ``replay`` runs; fail naming ``what`` (and the replay's output if it ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := probe():
            return value
        if replay.poll() is not None:
            raise AssertionError(f"the replay ended (exit {replay.returncode}) before {what}:\n"
                                 + failure_excerpt(Path(replay.args[-1]).with_suffix(".err").read_text()))
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


@pytest.mark.long  # make test-long: crash recovery
def test_a_killed_agent_is_restarted_and_leaves_no_throttle_process_or_group(testbed, tmp_path: Path) -> None:
    require_root()
    workload, results = tmp_path / "it-crash.toml", tmp_path / "results"
    workload.write_text(LONG_WORKLOAD)
    replay = _start_replay(testbed, workload, results)
    try:
        def throttled_agent() -> Path | None:
            return next((s for s in sorted(results.glob("agent-*.json")) if _throttled(s)), None)

        victim = _wait_for(replay, throttled_agent, 600, "an agent to throttle a container", every_s=0.2)
        [agent_pid] = _pids_naming(str(victim))
        killed_at = time.monotonic()
        os.kill(agent_pid, signal.SIGKILL)
        # The run restarts its agent on the same port; the successor lifts what the dead one left.
        agent_log = victim.with_suffix(".log")
        _wait_for(replay, lambda: "left by a previous run" in agent_log.read_text(errors="replace"), 30,
                  "the restarted agent to lift its predecessor's throttles", every_s=0.1)
        print(f"the killed agent's throttles were lifted {time.monotonic() - killed_at:.1f} s after SIGKILL")
        assert _pids_naming(str(victim)) not in ([], [agent_pid])
        replay.wait(timeout=900)
    finally:
        if replay.poll() is None:
            replay.kill()
    err = results.with_suffix(".err").read_text()
    assert replay.returncode == 0, failure_excerpt(err)
    app_id = pd.read_csv(results / "jobs.csv")["app_id"].dropna().iloc[0]
    # The Spark driver's JVM and the containers may take a few seconds to exit; leftovers never do.
    assert _eventually(lambda: not _pids_naming(str(results))), f"still running: {_pids_naming(str(results))}"
    assert _eventually(lambda: not _container_pids(app_id)), \
        f"processes of {app_id}'s containers still alive: {_container_pids(app_id)}"
    assert not _groups("sb-replay-1") and not _groups("sb-replay-2"), "a group of the run remains"
    assert not _throttled(victim), f"{victim} still records a throttle"
    assert "restarting it (restart 1 of" in err
    output = results.with_suffix(".out").read_text() + err  # commands sent while it was down: one summary line
    failed_lines = [line for line in output.splitlines() if "failed" in line and "preemption" in line]
    assert len(failed_lines) <= 1 and all("preemption command(s) failed" in line for line in failed_lines), \
        failed_lines


@pytest.mark.long  # make test-long: crash recovery
def test_vcores_of_a_killed_replay_are_restored_by_testbed_restore(testbed, tmp_path: Path) -> None:
    require_root()
    rm = ResourceManagerClient(testbed.rm_url)
    before = vcores(rm)
    workload, results = tmp_path / "it-crash.toml", tmp_path / "results"
    workload.write_text(LONG_WORKLOAD)
    replay = _start_replay(testbed, workload, results)
    try:
        _wait_for(replay, lambda: vcores(rm) != before, 300, "the vcores raise")
        _wait_for(replay, lambda: (results / "jobs.csv").exists() and ",running," in (results / "jobs.csv").read_text(),
                  600, "the first job to start (the agents are up by then)")
    finally:
        replay.kill()
        replay.wait(timeout=30)
    for app in rm.apps(states=["NEW", "SUBMITTED", "ACCEPTED", "RUNNING"]):
        if "it-crash" in app.raw.get("name", ""):
            rm.kill(app.app_id)
    assert vcores(rm) != before  # nothing restored them
    assert _pids_naming(str(results)), "the killed replay's agents should have outlived it"
    restore = subprocess.run([sys.executable, "-c", "from bridge.cli import main; main()", "testbed", "restore"],
                             env=testbed.spark_env(), capture_output=True, text=True, timeout=300)
    assert restore.returncode == 0, restore.stderr
    assert "2 of 2 node agent(s) stopped" in restore.stdout, restore.stdout
    assert vcores(rm) == before
    assert _eventually(lambda: not _pids_naming(str(results))), f"still running: {_pids_naming(str(results))}"
    assert not _groups("sb-replay-1") and not _groups("sb-replay-2"), "a group of the run remains"
