"""The docker-compose cluster: the local testbed's layout with service names for addresses.

Each compose service runs `schedbridge testbed run-daemon ROLE`, which renders the same
configuration templates as `schedbridge testbed up` and starts the same daemon command lines;
only host names, the bind address and the NodeManager's ports differ (one NodeManager per
container, so it keeps Hadoop's default ports).
"""
from __future__ import annotations

import os
import secrets
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bridge.agent.cli import DEFAULT_PORT as AGENT_PORT
from bridge.testbed import hadoopconf
from bridge.testbed.cgroupdelegate import delegate_cpu
from bridge.testbed.cluster import Testbed
from bridge.testbed.daemons import DaemonSpec
from bridge.testbed.foreground import Command
from bridge.testbed.layout import ClusterLayout, local_layout

ROLES = ("namenode", "datanode", "resourcemanager", "nodemanager", "client")
TOKEN_FILE = Path("/run/schedbridge/agent-token")


def compose_layout(home: Path, nm_host: str = "nodemanager") -> ClusterLayout:
    """The local layout with one NodeManager at `nm_host`, every daemon bound to 0.0.0.0.

    Derived from `local_layout`, so resources, directories and every non-address setting stay
    the local testbed's by construction.
    """
    base = local_layout(home, nodemanagers=1)
    nm = replace(base.nodemanagers[0], host=nm_host, port=45454, localizer_port=8040,
                 webapp_port=8042, collector_port=8048)
    return replace(base, bind_host="0.0.0.0", nodemanagers=(nm,), namenode_host="namenode",
                   datanode_host="datanode", resourcemanager_host="resourcemanager")


def node_name() -> str:
    """This container's hostname, which names its NodeManager.

    Hadoop names a node by the canonical name of its address, which in a container is the
    hostname Docker gave it (replicas of a scaled service have no other stable name); Docker's
    DNS resolves that hostname for every container on the network.
    """
    return socket.gethostname()


def render(role: str, layout: ClusterLayout) -> None:
    """Write this role's configuration exactly as the local testbed does (plus Spark's for the client)."""
    hadoopconf.write_all(layout)
    if role == "client":
        from bridge.testbed.spark import write_spark_conf  # imports pyspark: only where Spark runs

        write_spark_conf(layout)


def daemon_spec(role: str, layout: ClusterLayout) -> DaemonSpec:
    """The local testbed's command line for this role's Hadoop daemon."""
    name = layout.nodemanagers[0].name if role == "nodemanager" else role
    return next(spec for spec in Testbed(layout).daemons() if spec.name == name)


def ensure_token(path: Path) -> Path:
    """Create the agents' shared token once; every service mounting the volume reads the same one.

    Written to a temporary file and hard-linked into place, so a concurrent reader never sees a
    partial token and the first of several replicas wins.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".token.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return path


def _schedbridge() -> str:
    """The `schedbridge` script of this installation (beside its Python)."""
    return str(Path(sys.executable).with_name("schedbridge"))


def agent_command(layout: ClusterLayout, token_file: Path) -> list[str]:
    """The node agent beside this container's NodeManager, on the compose network only.

    Its cgroup parent carries the node's name, so agents never share groups even where the
    containers share the host's cgroup tree (cgroup v1). It listens without TLS (``--insecure``,
    the token still required): the compose network is the testbed's own bridge, with nothing
    else on it; an agent on a real cluster's network serves TLS (docs/node-agent.md).
    """
    nm = layout.nodemanagers[0]
    return [_schedbridge(), "agent", "--nm-url", nm.webapp_url, "--host", nm.host,
            "--port", str(AGENT_PORT), "--token-file", str(token_file),
            "--nm-local-dir", str(layout.nm_dir(nm) / "local"),
            "--cgroup-parent", f"schedbridge-{nm.host}", "--insecure"]


def serve_command(policy: str) -> list[str]:
    """The bridge daemon, on loopback: Spark drivers run in the client container itself."""
    return [_schedbridge(), "serve", "--policy", policy, "--host", "127.0.0.1"]


def role_commands(role: str, layout: ClusterLayout, policy: str, token_file: Path,
                  progress: Callable[[str], None]) -> list[Command]:
    """Prepare this container for `role` (first-start format, cgroups, token) and return the
    commands to run in the foreground. The node agent starts once its NodeManager answers:
    before that it could only warn that the NodeManager is unreachable. It is restarted if it dies
    (its successor lifts what it left), without stopping the NodeManager and its containers."""
    if role == "client":
        ensure_token(token_file)
        return [Command(serve_command(policy))]
    if role == "namenode":
        Testbed(layout).format_namenode_once(progress)
    commands = [Command(daemon_spec(role, layout).command(layout.log_dir))]
    if role == "nodemanager":
        if delegate_cpu():
            progress("moved this container's processes to a leaf cgroup; cpu enabled for the agent")
        nm_info = f"http://127.0.0.1:{layout.nodemanagers[0].webapp_port}/ws/v1/node/info"
        commands.append(Command(agent_command(layout, ensure_token(token_file)), after_url=nm_info, restart=True))
    return commands
