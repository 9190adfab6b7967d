"""The docker-compose services' entry point run for real, without Docker.

Each service's `schedbridge testbed run-daemon ROLE` starts in one private network namespace
(only its own loopback), where a private /etc/hosts maps the service names and gives the
NodeManager a hostname of its own, as Docker's network would. The local testbed's ports are
untouched, so this runs beside it.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bridge.agent.client import AgentClient
from bridge.common.paths import hadoop_lib_dir
from tests import needs
from yarnclient import ResourceManagerClient, YarnError
from yarnclient.hdfs import hdfs_client, hdfs_writable

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NODE = "nm-compose-1"
HOSTS = f"127.0.0.1 localhost namenode datanode resourcemanager client\n127.0.0.2 {NODE}\n"
NAMENODE_URL = "http://namenode:9870"
ROLES = ("namenode", "datanode", "resourcemanager", "nodemanager")

# Runs as root inside `unshare --net --mount --uts`; $1 is the work directory, $2 the Python.
NAMESPACE_SCRIPT = f"""
set -eu
ip link set lo up
hostname {NODE}
mount --bind "$1/hosts" /etc/hosts
for role in {' '.join(ROLES)}; do
  "$(dirname "$2")/schedbridge" testbed run-daemon "$role" --home "$1/$role" \\
      --token-file "$1/token" > "$1/$role.log" 2>&1 &
done
status=0
"$2" -c 'import sys; from tests.integration.test_compose_services import probe; probe(sys.argv[1])' "$1" \\
  || status=$?
kill -TERM $(jobs -p) 2>/dev/null || true
wait
exit $status
"""


def probe(work: str) -> None:
    """Inside the namespace: wait for the cluster, use it through the service names, record it."""
    rm = ResourceManagerClient("http://resourcemanager:8088", user="root", timeout=(2, 10), retries=0)
    deadline = time.monotonic() + 150
    nodes: list[str] = []
    while time.monotonic() < deadline and not nodes:
        try:
            nodes = [n.node_id for n in rm.nodes(states=["RUNNING"])]
        except YarnError:
            pass
        time.sleep(1)
    # The NameNode may still be in safe mode, or without its DataNode, when YARN is up.
    while time.monotonic() < deadline and not hdfs_writable(NAMENODE_URL, user="root"):
        time.sleep(1)
    hdfs = hdfs_client(NAMENODE_URL, user="root", timeout=10)
    hdfs.write("/tmp/compose-probe.txt", data=b"through datanode:9864", overwrite=True)
    with hdfs.read("/tmp/compose-probe.txt") as reader:
        content = reader.read().decode()
    agent = AgentClient(f"http://{NODE}:8478", (Path(work) / "token").read_text().strip())
    services = yaml.safe_load((ROOT / "docker" / "docker-compose.yml").read_text())["services"]
    result = {"nodes": nodes, "hdfs": content, "agent_containers": agent.containers(),
              "health": {role: _health_check(services[role]["healthcheck"]["test"]) for role in ROLES}}
    (Path(work) / "result.json").write_text(json.dumps(result))


def _health_check(test: list[str]) -> int:
    """Run a docker-compose health check's `test` as Docker would; its exit code."""
    kind, *command = test
    argv = ["sh", "-c", command[0]] if kind == "CMD-SHELL" else command
    return subprocess.run(argv, capture_output=True, timeout=10).returncode


def _cgroup_v2_root_without_cpu() -> bool:
    """Where run-daemon nodemanager would delegate this host's own cgroup root: never here."""
    root = Path("/sys/fs/cgroup")
    return (root / "cgroup.controllers").is_file() and "cpu" not in (root / "cgroup.subtree_control").read_text()


@pytest.fixture(scope="module")
def compose_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    needs.root("a private network namespace (unshare) for the stack's addresses")
    assert shutil.which("unshare") and shutil.which("ip"), "unshare and ip (util-linux, iproute2) are not installed"
    if _cgroup_v2_root_without_cpu():
        pytest.skip("cgroup v2 root without the cpu controller: the agent's delegation is for containers")
    if not any(hadoop_lib_dir().glob("hadoop-yarn-server-nodemanager-*.jar")):
        pytest.fail(f"Hadoop jars missing in {hadoop_lib_dir()}: run `make setup`")
    work = tmp_path_factory.mktemp("compose")
    (work / "hosts").write_text(HOSTS)
    done = subprocess.run(["unshare", "--net", "--mount", "--uts", "bash", "-c", NAMESPACE_SCRIPT, "sb",
                           str(work), sys.executable], cwd=ROOT, capture_output=True, text=True, timeout=300)
    logs = "".join(f"\n--- {role}\n" + (work / f"{role}.log").read_text()[-3000:] for role in ROLES)
    assert done.returncode == 0, done.stdout + done.stderr + logs
    return {"result": json.loads((work / "result.json").read_text()), "logs": logs}


def test_every_role_starts_and_the_nodemanager_registers_under_its_hostname(compose_run: dict) -> None:
    assert compose_run["result"]["nodes"] == [f"{NODE}:45454"], compose_run["logs"]


def test_hdfs_is_writable_through_the_service_names(compose_run: dict) -> None:
    assert compose_run["result"]["hdfs"] == "through datanode:9864"


def test_the_node_agent_answers_beside_its_nodemanager_with_the_shared_token(compose_run: dict) -> None:
    assert compose_run["result"]["agent_containers"] == []


def test_every_services_docker_health_check_passes_on_the_running_daemons(compose_run: dict) -> None:
    assert compose_run["result"]["health"] == {role: 0 for role in ROLES}
