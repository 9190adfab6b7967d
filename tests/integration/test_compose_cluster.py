"""The docker-compose testbed built and run for real (issue 21), as docker/README.md describes it:
the image built without any registry but the package registries, `up`, every service healthy,
3 NodeManagers RUNNING, WordCount through stock Spark and through the bridge with correct counts,
Kairos' `replay --preempt` suspending and resuming real containers through the NodeManagers' own
agents (the client's $SCHEDBRIDGE_AGENTS), one agent SIGKILLed mid-run and restarted by its
container's supervisor, every container and node left as it was, a bridge
application under `spark.schedbridge.policy=kairos` whose containers those agents resize,
the deployment guide from a gateway container, and `down -v` leaving nothing of the project behind.
(Scaling is the fixture's own `up --scale nodemanager=3`.)

Where no Docker engine runs, as root it installs Debian's and starts one (tests/integration/
docker_engine.py); otherwise it skips, saying why. Its own project name and free host ports let it
run beside the local testbed (8088/9870) and beside a developer's compose cluster.

Marked `long`: `make test-long` runs this file (CI runs it after `make test`), so that the second
Hadoop cluster's minutes of CPU stay out of `make test` on a two-core machine.
"""
from __future__ import annotations

import io
import json
import os
import random
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from tests.integration import docker_engine, gateway
from tests.integration.docker_engine import Engine, Unavailable, run
from tests.integration.gateway import Gateway, guide_steps
from tests.integration.jobs.burn import burn
from tests.integration.test_replay_preempt_testbed import WORKLOAD
from yarnclient import ResourceManagerClient

pytestmark = [pytest.mark.integration, pytest.mark.long]

DOCKER = docker_engine.ROOT / "docker"
NODEMANAGERS = 3
OTHER_SERVICES = 4  # namenode, datanode, resourcemanager, client
READY = {"healthy", "running"}  # "running": a service without a health check (the client)
LABEL = "com.docker.compose.project"  # Compose v1 and v2 both label what a project creates


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    engine: Engine
    project: str
    files: list[Path]
    env: dict[str, str]

    @property
    def rm(self) -> ResourceManagerClient:
        return ResourceManagerClient(f"http://127.0.0.1:{self.env['SCHEDBRIDGE_RM_PORT']}", user="root",
                                     timeout=(5, 20))

    def compose(self, *args: str, timeout: float = 600, check: bool = True,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        files = [arg for path in self.files for arg in ("--file", str(path))]
        return run([*self.engine.compose, "--project-name", self.project, *files, *args], timeout=timeout,
                   check=check, env=self.env, stdin=stdin)

    def client(self, *argv: str, timeout: float = 600, stdin: str | None = None) -> str:
        """A command in the client container (its environment: the cluster's conf, the agents file)."""
        return self.compose("exec", "-T", "client", *argv, timeout=timeout, stdin=stdin).stdout

    def helper(self, *args: str, stdin: str | None = None) -> object:
        return json.loads(self.client("python", "-m", "tests.integration.compose_client", *args, stdin=stdin))

    def health(self) -> dict[str, str]:
        """Container name -> its health ("healthy", "starting", ...), or its state without one
        (the client has no health check: "running" is as good as it gets)."""
        ids = self.engine.run("ps", "--all", "--quiet", "--filter", f"label={LABEL}={self.project}").stdout.split()
        if not ids:
            return {}
        fmt = "{{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}"
        rows = [line.split() for line in self.engine.run("inspect", "--format", fmt, *ids).stdout.splitlines()]
        return {row[0].lstrip("/"): row[2] if row[1] == "running" and len(row) > 2 else row[1] for row in rows}

    def wait_healthy(self, count: int, timeout_s: float = 600) -> None:
        deadline = time.monotonic() + timeout_s
        while (health := self.health()) and not (len(health) == count and set(health.values()) <= READY):
            stopped = [name for name, state in health.items() if state not in {*READY, "starting"}]
            if stopped or time.monotonic() > deadline:
                logs = self.compose("logs", "--tail", "40", check=False).stdout[-6000:]
                raise AssertionError(f"not {count} healthy containers: {health}\n{logs}")
            time.sleep(3)
        assert len(health) == count, health

    def running_nodes(self, count: int, timeout_s: float = 120) -> list[str]:
        """The RUNNING NodeManagers once there are `count` (registration follows health closely)."""
        deadline = time.monotonic() + timeout_s
        while len(nodes := [n.node_id for n in self.rm.nodes(states=["RUNNING"])]) != count:
            assert time.monotonic() < deadline, f"RUNNING NodeManagers: {nodes}, expected {count}"
            time.sleep(2)
        return nodes

    def leftovers(self) -> dict[str, list[str]]:
        """Containers, networks and volumes of this project that still exist."""
        label = f"label={LABEL}={self.project}"
        return {kind: found for kind, argv in (("containers", ["ps", "--all", "--quiet", "--filter", label]),
                                              ("networks", ["network", "ls", "--quiet", "--filter", label]),
                                              ("volumes", ["volume", "ls", "--quiet", "--filter", label]))
                if (found := self.engine.run(*argv).stdout.split())}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = time.monotonic()
    try:
        engine = docker_engine.engine(tmp_path_factory.mktemp("docker"))
    except Unavailable as exc:
        pytest.skip(f"compose testbed not run: {exc}")
    try:
        base = docker_engine.base_image(engine)
        docker_engine.build(engine, base)
        files = [DOCKER / "docker-compose.yml"]
        if docker_engine.privileged_refused(engine, base):
            files.append(DOCKER / "docker-compose.unprivileged.yml")
        # COMPOSE_HTTP_TIMEOUT: Compose v1 gives up on the engine after 60 s by default, and on vfs
        # removing a container copies nothing but deletes a full tree (seen: `down` timed out on a
        # loaded machine while removing the client)
        env = {"SCHEDBRIDGE_RM_PORT": str(_free_port()), "SCHEDBRIDGE_NAMENODE_PORT": str(_free_port()),
               "COMPOSE_HTTP_TIMEOUT": "600"}
        docker_engine.require_disk(engine, docker_engine.IMAGE, OTHER_SERVICES + NODEMANAGERS)
        found = Cluster(engine, f"sbit{os.getpid()}", files, env)
        try:
            found.compose("up", "--detach", "--no-build", "--scale", f"nodemanager={NODEMANAGERS}")
            found.wait_healthy(OTHER_SERVICES + NODEMANAGERS)
            print(f"compose cluster healthy {time.monotonic() - started:.0f} s after the start; "
                  + "; ".join(engine.notes))
            yield found
        finally:
            found.compose("down", "--volumes", "--remove-orphans", check=False)
    finally:
        engine.stop()


def test_every_service_is_healthy_and_three_nodemanagers_run(cluster: Cluster) -> None:
    assert len(cluster.running_nodes(NODEMANAGERS)) == NODEMANAGERS


# WordCount's input: seeded words, so the counts are known here.
WORDS = [f"w{i}" for i in range(40)]
TEXT = "\n".join(" ".join(random.Random(line).choices(WORDS, k=12)) for line in range(3000)) + "\n"


@pytest.fixture(scope="module")
def wordcount_input(cluster: Cluster) -> str:
    assert cluster.helper("put", "/it/words.txt", stdin=TEXT) == {"bytes": len(TEXT.encode())}
    return "hdfs:///it/words.txt"


def test_stock_spark_wordcount_is_correct(cluster: Cluster, wordcount_input: str) -> None:
    cluster.client("spark-submit", "--master", "yarn", "workloads/wordcount/submit.py", wordcount_input,
                   "hdfs:///it/stock")
    assert cluster.helper("counts", "/it/stock") == dict(Counter(TEXT.split()))


def test_bridge_wordcount_is_correct_and_placed_by_the_policy(cluster: Cluster, wordcount_input: str) -> None:
    cluster.client("schedbridge", "submit", "--master", "spark-schedbridge://yarn", "--num-executors", "3",
                   "--policy", "eagle", "--conf", "spark.schedbridge.stats.file=/tmp/it-stats.json",
                   "--conf", "spark.schedbridge.deadline=5s",   # placement is the claim, not a loaded round's latency
                   "workloads/wordcount/submit.py", wordcount_input, "hdfs:///it/bridge")
    assert cluster.helper("counts", "/it/bridge") == dict(Counter(TEXT.split()))
    stats = json.loads(cluster.client("cat", "/tmp/it-stats.json"))
    # one map task (the input is one block) and two reduce tasks, every one placed by Eagle
    assert stats["policy"] == "eagle" and stats["placed_tasks"] >= 3, stats
    assert stats["fallback_tasks"] == 0 and stats["unmanaged_tasks"] == 0, stats


def test_kairos_preempts_through_the_nodemanagers_agents_and_restores_everything(cluster: Cluster) -> None:
    vcores_before = {n.node_id: n.vcores_total for n in cluster.rm.nodes()}
    cluster.client("sh", "-c", "cat > /tmp/it-preempt.toml", stdin=WORKLOAD)
    with ThreadPoolExecutor(1) as pool:
        replay = pool.submit(cluster.client, "schedbridge", "replay", "/tmp/it-preempt.toml", "--policy", "kairos",
                             "--preempt", "--param", "w=2", "--out", "/tmp/it-kairos", timeout=900)
        lifted_s = _kill_a_throttling_agent(cluster)
        replay.result()
    print(f"kairos on compose: a SIGKILLed agent's throttles were lifted {lifted_s:.1f} s after the kill")
    jobs = pd.read_csv(io.StringIO(cluster.client("cat", "/tmp/it-kairos/jobs.csv")))
    assert len(jobs) == 3 and (jobs["status"] == "succeeded").all(), jobs
    commands = json.loads(cluster.client("cat", "/tmp/it-kairos/preemption.json"))
    suspended = {c["container"] for c in commands if c["action"] == "suspend" and c["status"] == "ok"}
    resumed = {c["container"] for c in commands if c["action"] == "resume" and c["status"] == "ok"}
    assert suspended and resumed, commands  # a resume sent while the agent was down fails; its successor lifted it
    print(f"kairos on compose: {len(suspended)} container(s) suspended, {len(resumed)} resumed")
    agents = cluster.helper("agents")
    assert len(agents) == NODEMANAGERS
    throttled = [c for containers in agents.values() for c in containers if c["share"] is not None or c["frozen"]]
    assert throttled == []
    assert {n.node_id: n.vcores_total for n in cluster.rm.nodes()} == vcores_before


def _kill_a_throttling_agent(cluster: Cluster, lift_within_s: float = 30.0) -> float:
    """SIGKILL the agent of a node while it holds a container throttled, mid-run; the seconds until
    its successor, restarted by the container's supervisor, has lifted what it left."""
    status = cluster.helper("throttling", "600")
    assert isinstance(status, dict) and status, "no agent throttled a container within 600 s"
    container = str(status["host"])  # a replica's hostname is its container's short id
    cluster.engine.run("exec", container, "sh", "-c", 'kill -KILL "$1"', "sh", str(status["pid"]))
    killed = time.monotonic()
    while True:
        logs = cluster.engine.run("logs", container)
        if "left by a previous run" in logs.stdout + logs.stderr:
            return time.monotonic() - killed
        assert time.monotonic() - killed < lift_within_s, \
            f"{status['node']}: no restarted agent lifted the throttles within {lift_within_s} s"
        time.sleep(0.5)


def test_a_bridge_application_under_kairos_is_preempted_through_the_agents(cluster: Cluster) -> None:
    """`--conf spark.schedbridge.policy=kairos` (via `submit --policy kairos`): 6 one-core executors
    on 3 NodeManagers of N = 1, so some node holds two tasks, which take turns by container resize
    through that node's agent (the client's $SCHEDBRIDGE_AGENTS); right results, and every
    container and node as it was afterwards."""
    vcores_before = {n.node_id: n.vcores_total for n in cluster.rm.nodes()}
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    executors = 2 * NODEMANAGERS
    cluster.client("schedbridge", "submit", "--master", "spark-schedbridge://yarn",
                   "--num-executors", str(executors), "--policy", "kairos", "--param", "node_cores=1",
                   "--param", "w=2", "--conf", "spark.executor.cores=1", "--conf", "spark.executor.memory=512m",
                   "--conf", "spark.dynamicAllocation.enabled=false",
                   "tests/integration/jobs/burn.py", str(executors), "/tmp/it-burn.json", timeout=900)
    assert json.loads(cluster.client("cat", "/tmp/it-burn.json")) == [burn(i) for i in range(executors)]
    logs = cluster.compose("logs", "--no-color", "--timestamps", "nodemanager").stdout
    shrunk = [line for line in logs.splitlines() if "share=0.1" in line and line.split("|", 1)[-1].split()[0] >= since]
    assert shrunk, logs[-3000:]  # an agent really held a container at the minimum share
    print(f"kairos through the plugin on compose: {len(shrunk)} resize(s) to the minimum share")
    agents = cluster.helper("agents")
    throttled = [c for containers in agents.values() for c in containers if c["share"] is not None or c["frozen"]]
    assert throttled == []
    assert {n.node_id: n.vcores_total for n in cluster.rm.nodes()} == vcores_before


class TestDeployGuide:
    """docs/deploy.md's gateway steps, run as written there, from a gateway container with Java,
    Python, a Spark distribution and the wheel only (tests/integration/gateway.py): in client mode
    by Spark's own spark-submit, in cluster mode with a packed environment. Each application ends
    SUCCEEDED in the ResourceManager, and its event log (in HDFS, as operators keep them) holds a
    placement by the policy for every task Spark started. Class-scoped: the gateway is gone before
    `down`, which removes the network it joined."""

    EVENTS = "/it/gateway-events"

    @pytest.fixture(scope="class")
    def gateway(self, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
        started = time.monotonic()
        image = docker_engine.build_gateway(cluster.engine, docker_engine.base_image(cluster.engine))
        docker_engine.require_disk(cluster.engine, image, 1)
        client = cluster.compose("ps", "--quiet", "client").stdout.split()[0]
        found = gateway.start(cluster.engine, image, f"{cluster.project}_hadoop", client,
                              tmp_path_factory.mktemp("gateway"))
        try:
            steps = guide_steps()
            for name in ("install", "defaults"):
                done = found.sh(steps[name])
                assert done.returncode == 0, f"step {name}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            cluster.helper("mkdir", self.EVENTS)
            # the guide's steps claim placement by the policy: a round past the default 50 ms deadline
            # falls back to Spark (tested in test_sparkplugin_local.py), which a loaded run has caused
            # (one task of 20, fresh-clone run 23), so the policy's call gets room here
            logs = found.sh("printf '%s\\n' 'spark.eventLog.enabled true' 'spark.eventLog.compress false' "
                            "'spark.eventLog.rolling.enabled false' 'spark.schedbridge.deadline 5s' "
                            f"'spark.eventLog.dir hdfs://{self.EVENTS}' >> /opt/spark/conf/spark-defaults.conf")
            assert logs.returncode == 0, logs.stderr
            print(f"gateway ready {time.monotonic() - started:.0f} s after its start")
            yield found
        finally:
            found.stop()

    def _run_step(self, cluster: Cluster, found: Gateway, name: str) -> str:
        """Run the guide's step `name`; the one application it ran, checked as the class says."""
        before = {log["app"] for log in self._logs(cluster)}
        done = found.sh(guide_steps()[name])
        assert done.returncode == 0, f"step {name}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        new = [log for log in self._logs(cluster) if log["app"] not in before]
        assert len(new) == 1, new
        log = new[0]
        final = cluster.rm.app(str(log["app"]))
        assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final
        started, placed = log["started"], log["placed"]
        assert len(started) >= 20 and {p[0] for p in placed} == set(started), log  # pi.py's 20 partitions
        assert {(p[1], p[2]) for p in placed} == {("hawk", "POLICY")}, log
        return done.stdout

    def _logs(self, cluster: Cluster) -> list[dict[str, object]]:
        found = cluster.helper("placements", self.EVENTS)
        assert isinstance(found, list)
        return found

    def test_client_mode_by_spark_submit_is_placed_by_hawk(self, cluster: Cluster, gateway: Gateway) -> None:
        assert "Pi is roughly 3.1" in self._run_step(cluster, gateway, "client-mode")

    def test_cluster_mode_with_a_packed_environment_is_placed_by_hawk(self, cluster: Cluster,
                                                                      gateway: Gateway) -> None:
        self._run_step(cluster, gateway, "cluster-mode")


def test_down_leaves_nothing_of_the_project_behind(cluster: Cluster) -> None:
    cluster.compose("down", "--volumes", "--remove-orphans")
    assert cluster.leftovers() == {}
