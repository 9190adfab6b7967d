"""The agents file: parsed and checked with errors naming the file, key or line; every agent asked
before a run (real HTTP against a real agent server on loopback), within the timeout."""
from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path, PurePosixPath

import pytest

import sparkplugin
from bridge.agent.procfs import TreeFinder
from bridge.agent.server import AgentServer, listen_address
from bridge.agent.service import NodeAgent
from bridge.agent.state import StateFile
from bridge.drivers.node_engine import NodePlanner
from bridge.drivers.spark.engine import EnginePlanner
from bridge.nodes import cluster_agents
from bridge.agent.leases import DEFAULT_LEASE_S
from tests.certs import make_cert
from bridge.nodes.cluster_agents import AgentsConfigError, ConfiguredAgents, agents_for, load
from bridge.nodes.preemption import ContainerPreemptor
from bridge.plugin.host import refusal
from bridge.plugin.preempting_host import host_planners
from bridge.protocol.messages import PolicyRequest
from bridge.testbed.layout import default_layout
from bridge.testbed.local_agents import LocalTestbedAgents
from tests.unit.agent_fakes import FakeCgroups, FakeNodeManager
from yarnclient.models import Node
from yarnclient.resourcemanager import ResourceManagerClient

TOKEN = "agents-token-0123456789"


def node(address: str, state: str = "RUNNING", host: str | None = None) -> Node:
    return Node(f"{address}-id", host or address.split(":")[0], address, state, 0, 4, 4096, 0, 0, {})


class RM:
    """The RM's node list (what `connect` reads)."""

    def __init__(self, *nodes: Node) -> None:
        self.listed = list(nodes)

    def nodes(self, states: object = None) -> list[Node]:
        return self.listed


def write(tmp_path: Path, text: str, token: str | None = TOKEN, mode: int = 0o600) -> Path:
    if token is not None:
        (tmp_path / "agent.token").write_text(token + "\n")
        (tmp_path / "agent.token").chmod(mode)
    path = tmp_path / "agents.toml"
    path.write_text(text)
    return path


# -- the file -----------------------------------------------------------------------------------

def test_a_pattern_and_per_node_entries_map_every_running_nodemanager(tmp_path: Path) -> None:
    path = write(tmp_path, 'token_file = "agent.token"\nurl = "http://{host}:8478/"\ntimeout_s = 3\n'
                           '[nodes]\n"nm2:8042" = "http://10.0.0.2:9478"\n"nm3" = "https://nm3.agents:8478"\n')
    config = load(path)
    assert config.token_file == tmp_path / "agent.token"  # relative to the agents file
    assert config.timeout_s == 3.0 and config.vcores_record is None
    assert config.lease_s == DEFAULT_LEASE_S <= 60 and config.ca is None
    assert config.token() == TOKEN
    nodes = [node("nm1:8042"), node("nm2:8042"), node("nm3:8042"), node("nm4:8042", state="LOST")]
    assert config.urls(nodes) == {"nm1:8042": "http://nm1:8478", "nm2:8042": "http://10.0.0.2:9478",
                                  "nm3:8042": "https://nm3.agents:8478"}  # LOST nm4: no agent asked


@pytest.mark.parametrize(("text", "message"), [
    ('token_file = "t"\nurl = "http://{host}:8478"\nurl = "x"\n', r"agents\.toml: .*line 3"),
    ('token_file = "t"\nurl = "http://{host}:8478"\nport = 8478\n', r"agents\.toml: key 'port': unknown key"),
    ('url = "http://{host}:8478"\n', r"key 'token_file': missing"),
    ('token_file = 3\nurl = "http://{host}:8478"\n', r"key 'token_file': must be a file name"),
    ('token_file = "t"\nurl = "{host}:8478"\n', r"key 'url': '\{host\}:8478' is not an http\(s\) URL"),
    ('token_file = "t"\nurl = "http://{node}:8478"\n', r"key 'url': .*unknown placeholder \{node\}"),
    ('token_file = "t"\nurl = "http://{host:8478"\n', r"key 'url': .*"),
    ('token_file = "t"\n[nodes]\n"nm1:8042" = "http://{host}:1"\n', r"key 'nodes.nm1:8042': .*url pattern only"),
    ('token_file = "t"\nnodes = ["a"]\n', r"key 'nodes': must be a table"),
    ('token_file = "t"\n', r"no agents: give a url pattern"),
    ('token_file = "t"\nurl = "http://{host}:1"\ntimeout_s = 0\n', r"key 'timeout_s': .*\(0, 600\]"),
    ('token_file = "t"\nurl = "http://{host}:1"\ntimeout_s = true\n', r"key 'timeout_s'"),
    ('token_file = "t"\nurl = "http://{host}:1"\nlease_s = 0\n', r"key 'lease_s': .*\(0, 600\]"),
    ('token_file = "t"\nurl = "http://{host}:1"\nca = "none.pem"\n', r"key 'ca': cannot load the TLS CA file"),
])
def test_mistakes_in_the_file_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(AgentsConfigError, match=message) as caught:
        load(path)
    assert str(path) in str(caught.value)


def test_a_missing_or_binary_file_is_named_with_where_it_came_from(tmp_path: Path) -> None:
    with pytest.raises(AgentsConfigError, match=r"agents file .*nope\.toml \(from \$SCHEDBRIDGE_AGENTS\): No such"):
        load(tmp_path / "nope.toml", "$SCHEDBRIDGE_AGENTS")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(AgentsConfigError, match="bin.toml: not UTF-8"):
        load(tmp_path / "bin.toml")


@pytest.mark.parametrize(("token", "mode", "message"), [
    (None, 0o600, r"token_file .*agent\.token \(agents file .*\): No such file"),
    ("short", 0o600, r"holds 5 characters; the agents need at least 16"),
    (TOKEN, 0o644, r"readable or writable by every user; chmod o-rw"),
])
def test_an_unusable_token_file_is_named(tmp_path: Path, token: str | None, mode: int, message: str) -> None:
    config = load(write(tmp_path, 'token_file = "agent.token"\nurl = "http://{host}:8478"\n', token, mode))
    with pytest.raises(AgentsConfigError, match=message):
        config.token()


def test_nodes_keys_must_name_one_nodemanager_and_every_running_one_needs_an_agent(tmp_path: Path) -> None:
    two_on_a_host = [node("h:8042"), node("h:8052")]
    by_host = load(write(tmp_path, 'token_file = "t"\n[nodes]\n"h" = "http://h:1"\n'))
    with pytest.raises(AgentsConfigError, match=r"nodes\.'h'.*several NodeManagers \(h:8042, h:8052\)"):
        by_host.urls(two_on_a_host)
    typo = load(write(tmp_path, 'token_file = "t"\n[nodes]\n"h:8043" = "http://h:1"\n"h:8042" = "http://h:2"\n'))
    with pytest.raises(AgentsConfigError, match=r"nodes\.'h:8043' names no NodeManager .*lists: h:8042, h:8052"):
        typo.urls(two_on_a_host)
    partial = load(write(tmp_path, 'token_file = "t"\n[nodes]\n"h:8042" = "http://h:1"\n'))
    with pytest.raises(AgentsConfigError, match=r"no agent for NodeManager\(s\) h:8052"):
        partial.urls(two_on_a_host)


def test_the_file_comes_from_the_option_then_the_environment(tmp_path: Path) -> None:
    env = {"SCHEDBRIDGE_AGENTS": "/etc/agents.toml"}
    assert cluster_agents.agents_file(tmp_path / "a.toml", env) == (tmp_path / "a.toml", "--agents")
    assert cluster_agents.agents_file(None, env) == (Path("/etc/agents.toml"), "$SCHEDBRIDGE_AGENTS")
    assert cluster_agents.agents_file(None, {}) == (None, "")


def test_agents_for_a_cluster_needs_a_file_except_on_the_local_testbed(tmp_path: Path) -> None:
    rm = ResourceManagerClient("http://rm.example:8088")
    with pytest.raises(AgentsConfigError, match=r"http://rm.example:8088 needs its node agents.*--agents FILE"):
        agents_for(rm, "http://rm.example:8088", None, {})
    path = write(tmp_path, 'token_file = "agent.token"\nurl = "http://{host}:8478"\n')
    configured = agents_for(rm, "http://rm.example:8088", None, {"SCHEDBRIDGE_AGENTS": str(path)})
    assert isinstance(configured, ConfiguredAgents) and "$SCHEDBRIDGE_AGENTS" in configured.origin
    assert configured.vcores_record == cluster_agents.default_vcores_record("http://rm.example:8088")
    assert configured.vcores_record != cluster_agents.default_vcores_record("http://other:8088")
    layout = default_layout()

    def own(label: str) -> LocalTestbedAgents:  # what the local testbed's target gives
        return LocalTestbedAgents(layout, label)

    local = agents_for(rm, layout.rm_url, None, {}, label="sim-vs-live", own=own)
    assert isinstance(local, LocalTestbedAgents) and local.label == "sim-vs-live"
    assert isinstance(agents_for(rm, layout.rm_url, path, {}, own=own), ConfiguredAgents)  # a file wins there too


def test_the_plugin_takes_the_agents_conf_key() -> None:
    sparkplugin.check_conf({"spark.schedbridge.agents": "/etc/schedbridge/agents.toml"})


# -- the preflight, against real agent servers ---------------------------------------------------

@pytest.fixture
def agent_url(tmp_path: Path) -> Iterator[str]:
    """A real agent server (fake NodeManager and cgroups behind it) on loopback."""
    yield from _agent_server(tmp_path)


@pytest.fixture
def tls_agent_url(tmp_path: Path) -> Iterator[str]:
    """The same over TLS, with a self-signed certificate copied to ``agents-ca.pem``."""
    cert = make_cert(tmp_path)
    (tmp_path / "agents-ca.pem").write_bytes(cert.cert.read_bytes())
    yield from _agent_server(tmp_path, cert.context())


def _agent_server(tmp_path: Path, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    agent = NodeAgent(FakeNodeManager(), FakeCgroups(), TreeFinder((PurePosixPath("/data/nm-local"),)),
                      StateFile(tmp_path / "state.json"), proc_root=tmp_path / "proc")
    (tmp_path / "proc").mkdir()
    agent.reconcile()  # the NodeManager answered: the agent reports it reachable
    server = AgentServer(listen_address("127.0.0.1", 0), agent, TOKEN, timeout_s=1.0, tls=tls)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def silent_url() -> Iterator[str]:
    """Accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_connect_asks_every_agent_and_returns_clients_by_nodemanager(tmp_path: Path, agent_url: str) -> None:
    config = load(write(tmp_path, f'token_file = "agent.token"\n[nodes]\n"nm1:8042" = "{agent_url}"\n'))
    agents = cluster_agents.connect(config, RM(node("nm1:8042")))
    assert list(agents) == ["nm1:8042"] and agents["nm1:8042"].base_url == agent_url


def test_every_unusable_agent_is_named_before_the_run_within_the_timeout(tmp_path: Path, agent_url: str,
                                                                         silent_url: str) -> None:
    text = (f'token_file = "agent.token"\ntimeout_s = 0.5\n[nodes]\n"good:8042" = "{agent_url}"\n'
            f'"down:8042" = "{closed_url()}"\n"hung:8042" = "{silent_url}"\n')
    config = load(write(tmp_path, text))
    rm = RM(node("good:8042"), node("down:8042"), node("hung:8042"))
    start = time.monotonic()
    with pytest.raises(AgentsConfigError) as caught:
        cluster_agents.connect(config, rm)
    assert time.monotonic() - start < 3  # asked at once, each within its 0.5 s
    message = str(caught.value)
    assert "2 of 3 not usable" in message and "good:8042" not in message
    assert "down:8042: AgentUnavailable" in message and "hung:8042: AgentUnavailable" in message


def test_https_agents_are_verified_against_the_files_ca(tmp_path: Path, tls_agent_url: str) -> None:
    nodes = f'[nodes]\n"nm1:8042" = "{tls_agent_url}"\n'
    config = load(write(tmp_path, f'token_file = "agent.token"\nca = "agents-ca.pem"\n{nodes}'))
    assert config.ca == tmp_path / "agents-ca.pem"
    assert cluster_agents.connect(config, RM(node("nm1:8042")))["nm1:8042"].node()["cgroup_version"] == 1
    without = load(write(tmp_path, f'token_file = "agent.token"\n{nodes}'))  # the system store: refused
    with pytest.raises(AgentsConfigError, match="nm1:8042: AgentUnavailable.*CERTIFICATE_VERIFY_FAILED"):
        cluster_agents.connect(without, RM(node("nm1:8042")))


def test_a_wrong_token_is_named(tmp_path: Path, agent_url: str) -> None:
    config = load(write(tmp_path, f'token_file = "agent.token"\n[nodes]\n"nm1:8042" = "{agent_url}"\n',
                        token="another-token-0123456789"))
    with pytest.raises(AgentsConfigError, match="nm1:8042: Unauthorized"):
        cluster_agents.connect(config, RM(node("nm1:8042")))


# -- hosts: a preempting policy on configured agents --------------------------------------------

def test_a_node_planner_serves_applications_that_ask_for_the_live_defaults_or_nothing() -> None:
    planner = NodePlanner("kairos", {}, ["nm1:8042"], 2, ContainerPreemptor({}), time.monotonic)
    assert refusal(planner, PolicyRequest("kairos", {})) is None
    assert refusal(planner, PolicyRequest("kairos", {"q": "1", "w": "5"})) is None
    assert "q: host" in (refusal(planner, PolicyRequest("kairos", {"q": "3"})) or "")
    assert refusal(planner, PolicyRequest("kairos", {"node_cores": "2"})) is None
    other_n = refusal(planner, PolicyRequest("kairos", {"node_cores": "3"}))
    assert other_n is not None and "N = 2, the application asked for 3" in other_n


def test_a_host_without_an_agents_file_builds_the_usual_planner(tmp_path: Path) -> None:
    with ExitStack() as stack:
        assert isinstance(host_planners(stack, None, None, {})("kairos", {}), EnginePlanner)
        path = write(tmp_path, 'token_file = "agent.token"\nurl = "http://{host}:8478"\n')
        conf = tmp_path / "conf"
        conf.mkdir()
        (conf / "yarn-site.xml").write_text("<configuration><property><name>yarn.resourcemanager.webapp.address"
                                            "</name><value>rm.example:8088</value></property></configuration>")
        make = host_planners(stack, path, conf, {})  # the file is read now; no agent or RM asked yet
        planner = make("sparrow", {})  # a policy that does not preempt: no agent is asked
        assert isinstance(planner, EnginePlanner) and not isinstance(planner, NodePlanner)
        with pytest.raises(AgentsConfigError, match="key 'url'"):
            host_planners(stack, write(tmp_path, 'token_file = "t"\nurl = "ftp://{host}"\n'), None, {})
