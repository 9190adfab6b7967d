"""The node agents of any cluster, found from configuration: an agents file and a token file.

On a real cluster `schedbridge agent` runs on every NodeManager host as a service; the bridge only
has to know where each answers and the token they share. That is an agents file (TOML, our reading
of what operators expect; `docs/node-agent.md`, "Agents of a cluster"):

    token_file = "/etc/schedbridge/agent.token"   # relative paths are from the agents file's directory
    url = "http://{host}:8478"                    # any NodeManager: {host} is its host as the RM lists it
    timeout_s = 10                                # every call to an agent, the preflight's included
    lease_s = 30                                  # how long a suspend outlives a controller that died
    ca = "agents-ca.pem"                          # optional: verify https agents against it (else the system's)
    vcores_record = "~/.schedbridge/vcores-prod.json"   # optional; default: one per ResourceManager

    [nodes]                                       # optional: one NodeManager's own agent
    "nm7.example.com:8042" = "http://10.0.0.7:9478"     # key: its web address, or its host

The file comes from ``--agents FILE``, else ``$SCHEDBRIDGE_AGENTS``, else (a Spark application's
policy host) the Spark conf ``spark.schedbridge.agents``. ``connect`` maps every RUNNING NodeManager
the RM lists to a client of its agent and asks each agent for its node (``GET /v1/node``) before
anything else happens, so a wrong URL, a wrong token or an agent that is down stops the run at once
with every such node named, never midway or by hanging.

``agents_for`` is the one entry point of a preempting run (``replay --preempt``, ``sim-vs-live
--preempt``): the configured agents when a file is given, else the cluster's own, where it starts
agents for a run itself (the local testbed: one agent per NodeManager, ``bridge.testbed.local_agents``);
either way the run gets a mapping NodeManager -> agent client and goes on along the same path.
"""
from __future__ import annotations

import getpass
import hashlib
import os
import string
import tomllib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import click

from bridge.agent.client import AgentClient
from bridge.agent.errors import AgentError
from bridge.agent.leases import DEFAULT_LEASE_S, MAX_LEASE_S
from bridge.agent.server import MIN_TOKEN_LEN
from bridge.common import tomltext
from bridge.common.secret_file import check_private
from bridge.common.tls import client_context
from yarnclient.models import Node
from yarnclient.resourcemanager import ResourceManagerClient

ENV_VAR = "SCHEDBRIDGE_AGENTS"
SPARK_CONF_KEY = "spark.schedbridge.agents"
OPTION_HELP = (f"Agents file (TOML) naming the cluster's node agents and their token, for preemption "
               f"(default: ${ENV_VAR}); see docs/node-agent.md, 'Agents of a cluster'.")
DEFAULT_TIMEOUT_S = 10.0  # above the agent's own NodeManager timeout (5 s), as for the testbed's agents
PLACEHOLDERS = frozenset({"host"})
KEYS = frozenset({"token_file", "url", "timeout_s", "lease_s", "ca", "vcores_record", "nodes"})


class AgentsConfigError(ValueError):
    """A mistake in the agents file or its token file, or an agent that does not answer; names which."""


class NodeList(Protocol):
    """The part of `yarnclient.ResourceManagerClient` this module uses."""

    def nodes(self, states: Sequence[str] | None = None) -> list[Node]: ...


@dataclass(frozen=True)
class AgentsConfig:
    """One agents file, checked: where the agents answer, their token, how long a call may take."""

    path: Path
    token_file: Path
    url: str | None                 # the pattern for every NodeManager without an entry in ``nodes``
    nodes: Mapping[str, str]        # a NodeManager's web address or host -> its agent's URL
    timeout_s: float
    vcores_record: Path | None      # None: ``default_vcores_record`` of the cluster's RM
    lease_s: float = DEFAULT_LEASE_S  # each suspend's lease; the controller renews it every third
    ca: Path | None = None          # the CA that https agents' certificates are verified against

    def token(self) -> str:
        """The agents' shared token; an error naming the token file (and this file) if unusable."""
        where = f"token_file {self.token_file} (agents file {self.path})"
        try:
            check_private(self.token_file, "token_file")
            token = self.token_file.read_text().strip()
        except OSError as exc:
            raise AgentsConfigError(f"{where}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise AgentsConfigError(f"{exc} (agents file {self.path})") from None
        if len(token) < MIN_TOKEN_LEN:
            raise AgentsConfigError(f"{where} holds {len(token)} characters; the agents need at least "
                                    f"{MIN_TOKEN_LEN}")
        return token

    def urls(self, nodes: Sequence[Node]) -> dict[str, str]:
        """Each RUNNING NodeManager's web address (as the RM reports it) -> its agent's URL.

        A ``nodes`` key that names no NodeManager of ``nodes`` (any state) is an error, as is a
        host key shared by several, or a RUNNING NodeManager with no agent: all before any call."""
        by_key = {key: _matching(self, key, nodes) for key in self.nodes}
        explicit = {node.http_address: self.nodes[key] for key, node in by_key.items()}
        running = [n for n in nodes if n.state == "RUNNING"]
        if missing := [n.http_address for n in running if n.http_address not in explicit and self.url is None]:
            raise AgentsConfigError(f"agents file {self.path}: no agent for NodeManager(s) {', '.join(missing)}: "
                                    "add them under [nodes], or give a url pattern")
        return {n.http_address: explicit.get(n.http_address) or _expand(self.url or "", n) for n in running}


def _matching(config: AgentsConfig, key: str, nodes: Sequence[Node]) -> Node:
    """The one NodeManager a ``[nodes]`` key names: by web address, else by host."""
    found = [n for n in nodes if n.http_address == key] or [n for n in nodes if n.host == key]
    if len(found) == 1:
        return found[0]
    listed = ", ".join(sorted(n.http_address for n in nodes)) or "none"
    if found:
        raise AgentsConfigError(f"agents file {config.path}: key nodes.{key!r} is the host of several "
                                f"NodeManagers ({', '.join(n.http_address for n in found)}): key each by "
                                "its web address")
    raise AgentsConfigError(f"agents file {config.path}: key nodes.{key!r} names no NodeManager the "
                            f"ResourceManager lists (it lists: {listed})")


def _expand(pattern: str, node: Node) -> str:
    return pattern.format(host=node.host or node.http_address.rsplit(":", 1)[0])


def agents_file(given: Path | None, environ: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """The rule: (the agents file, where it came from): ``--agents``, else ``$SCHEDBRIDGE_AGENTS``;
    (None, "") if neither names one."""
    environ = os.environ if environ is None else environ
    if given is not None:
        return given, "--agents"
    if environ.get(ENV_VAR):
        return Path(environ[ENV_VAR]), f"${ENV_VAR}"
    return None, ""


def agents_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--agents FILE`, spelt and explained the same in every command that preempts."""
    return click.option("--agents", type=click.Path(dir_okay=False, path_type=Path), help=OPTION_HELP)(function)


def load(path: Path, origin: str = "agents file") -> AgentsConfig:
    """Read and check an agents file; ``AgentsConfigError`` names the file, the key or the line
    (``origin``, e.g. "--agents", says where an unreadable file's name came from)."""
    try:
        data = tomltext.loads(path.read_text())
    except OSError as exc:
        raise AgentsConfigError(f"agents file {path} (from {origin}): {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise AgentsConfigError(f"agents file {path}: not UTF-8 text ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise AgentsConfigError(f"agents file {path}: {exc}") from None  # tomllib's message has the line
    return _parse(path, data)


def _parse(path: Path, data: dict[str, Any]) -> AgentsConfig:
    def fail(key: str, why: str) -> AgentsConfigError:
        return AgentsConfigError(f"agents file {path}: key {key!r}: {why}")

    if unknown := sorted(set(data) - KEYS):
        raise fail(unknown[0], f"unknown key (known: {', '.join(sorted(KEYS))})")
    if "token_file" not in data:
        raise fail("token_file", "missing: the file holding the token the agents were started with")
    token_file = _path(path, data["token_file"], fail("token_file", "must be a file name (a string)"))
    url = data.get("url")
    if url is not None:
        url = _url(url, lambda why: fail("url", why), pattern=True)
    nodes = data.get("nodes", {})
    if not isinstance(nodes, dict):
        raise fail("nodes", "must be a table of NodeManager = agent URL")
    checked = {str(k): _url(v, lambda why, k=k: fail(f"nodes.{k}", why)) for k, v in nodes.items()}
    if url is None and not checked:
        raise AgentsConfigError(f"agents file {path}: no agents: give a url pattern "
                                "(url = \"http://{host}:8478\") or a [nodes] table")
    timeout = _seconds(data, "timeout_s", DEFAULT_TIMEOUT_S, 600, fail)
    lease = _seconds(data, "lease_s", DEFAULT_LEASE_S, MAX_LEASE_S, fail)
    record = data.get("vcores_record")
    record_path = None if record is None else _path(path, record, fail("vcores_record", "must be a file name"))
    ca = None if "ca" not in data else _path(path, data["ca"], fail("ca", "must be a file name (a PEM file)"))
    if ca is not None:
        try:
            client_context(ca)
        except ValueError as exc:
            raise fail("ca", str(exc)) from None
    return AgentsConfig(path, token_file, url, checked, timeout, record_path, lease, ca)


def _seconds(data: dict[str, Any], key: str, default: float, most: float, fail: Any) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= most:
        raise fail(key, f"must be a number of seconds in (0, {most:g}], got {value!r}")
    return float(value)


def _path(config: Path, value: object, error: AgentsConfigError) -> Path:
    """A file named in the agents file: ``~`` expanded, relative to the agents file's directory."""
    if not isinstance(value, str) or not value:
        raise error
    return (config.parent / Path(value).expanduser()).absolute()


def _url(value: object, fail: Any, pattern: bool = False) -> str:
    """An http(s) URL with a host; a pattern may hold ``{host}`` and no other placeholder."""
    if not isinstance(value, str):
        raise fail(f"must be a URL (a string), got {value!r}")
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
    except ValueError as exc:
        raise fail(f"{value!r}: {exc}") from None
    if fields and not pattern:
        raise fail(f"{value!r}: placeholders are for the url pattern only")
    if bad := fields - PLACEHOLDERS:
        raise fail(f"{value!r}: unknown placeholder {{{sorted(bad)[0]}}} (only {{host}})")
    try:
        parts = urlsplit(value.replace("{host}", "host"))
        host = parts.hostname
    except ValueError as exc:  # an unclosed IPv6 bracket
        raise fail(f"{value!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise fail(f"{value!r} is not an http(s) URL with a host")
    return value.rstrip("/")


def hadoop_user(environ: Mapping[str, str] | None = None) -> str:
    """Who the RM's writes (the vcores raise) act as under simple authentication: Hadoop's own rule,
    ``$HADOOP_USER_NAME`` else the login name."""
    environ = os.environ if environ is None else environ
    return environ.get("HADOOP_USER_NAME") or getpass.getuser()


def default_vcores_record(rm_url: str) -> Path:
    """Where a run against the RM at ``rm_url`` keeps the NodeManagers' original vcores (one file per
    cluster, so that a record left by a killed run is found by the next run on that cluster only)."""
    digest = hashlib.sha256(rm_url.encode()).hexdigest()[:12]
    return Path.home() / ".schedbridge" / f"vcores-original-{digest}.json"


def connect(config: AgentsConfig, rm: NodeList) -> dict[str, AgentClient]:
    """A client of every RUNNING NodeManager's agent, keyed by the NM's web address, each checked to
    answer (``preflight``); ``AgentsConfigError`` names every node whose agent does not."""
    urls = config.urls(rm.nodes())
    if not urls:
        raise AgentsConfigError("the ResourceManager lists no RUNNING NodeManager")
    token = config.token()
    agents = {node: AgentClient(url, token, timeout_s=config.timeout_s, ca=config.ca)
              for node, url in sorted(urls.items())}
    try:
        preflight(agents, config.path)
    except AgentsConfigError:
        for agent in agents.values():
            agent.close()
        raise
    return agents


def preflight(agents: Mapping[str, AgentClient], source: Path | str) -> None:
    """Ask every agent for its node at once (each call within the client's timeout); every agent
    that does not answer, refuses the token or cannot reach its NodeManager is named together."""
    def ask(item: tuple[str, AgentClient]) -> str:
        node, agent = item
        try:
            answer = agent.node()
        except AgentError as exc:
            return f"{node}: {type(exc).__name__}: {exc}"
        if answer.get("nodemanager_reachable") is False:
            return f"{node}: the agent at {agent.base_url} cannot reach its NodeManager"
        return ""

    with ThreadPoolExecutor(max_workers=max(1, min(32, len(agents)))) as pool:
        problems = [p for p in pool.map(ask, sorted(agents.items())) if p]
    if problems:
        raise AgentsConfigError(f"node agents of {source}: {len(problems)} of {len(agents)} not usable: "
                                + "; ".join(problems))


class NodeAgents(Protocol):
    """Where a preempting run's node agents come from; ``agents_for`` picks one."""

    rm: ResourceManagerClient   # the cluster's RM, as the agents' NodeManagers are named by it
    vcores_record: Path         # where the run keeps the NodeManagers' original vcores
    origin: str                 # for the line a command prints: which agents, from where

    def prepare(self) -> None:
        """Everything that can be checked before anything is submitted; raises naming the mistake."""

    def open(self, stack: ExitStack, app_id: str, work: Path) -> dict[str, AgentClient]:
        """The agents for application ``app_id``'s run, keyed by NodeManager web address; ``stack``
        releases them (and stops whatever was started for the run)."""


class ConfiguredAgents:
    """The agents an agents file names: running already, as services on the NodeManager hosts."""

    def __init__(self, config: AgentsConfig, rm: ResourceManagerClient, rm_url: str, origin: str) -> None:
        self.config, self.rm = config, rm
        self.vcores_record = config.vcores_record or default_vcores_record(rm_url)
        self.origin = f"node agents from {origin} {config.path}"
        self._agents: dict[str, AgentClient] | None = None

    def prepare(self) -> None:
        self._agents = connect(self.config, self.rm)

    def open(self, stack: ExitStack, app_id: str, work: Path) -> dict[str, AgentClient]:
        agents = self._agents if self._agents is not None else connect(self.config, self.rm)
        self._agents = None  # a second run asks the agents again
        for agent in agents.values():
            stack.callback(agent.close)
        return agents


def agents_for(rm: ResourceManagerClient, rm_url: str, given: Path | None = None,
               environ: Mapping[str, str] | None = None, label: str = "replay",
               own: Callable[[str], NodeAgents] | None = None) -> NodeAgents:
    """The node agents of the cluster whose RM is ``rm`` (at ``rm_url``): those of the agents file
    (``--agents``, else ``$SCHEDBRIDGE_AGENTS``), else the cluster's ``own`` (the local testbed's:
    agents started for the run, ``label`` naming their records for `schedbridge testbed restore`).
    Any other cluster without an agents file is an error saying how to give one. Nothing is
    contacted yet (``prepare`` does)."""
    path, origin = agents_file(given, environ)
    if path is not None:
        return ConfiguredAgents(load(path, origin), rm, rm_url, origin)
    if own is not None:
        return own(label)
    raise AgentsConfigError(f"preemption on the cluster at {rm_url} needs its node agents (`schedbridge agent` "
                            f"on every NodeManager host): name them in an agents file given as --agents FILE "
                            f"or ${ENV_VAR} (docs/node-agent.md, 'Agents of a cluster')")
