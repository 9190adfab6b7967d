"""`schedbridge agent`: run the node agent next to one NodeManager until SIGTERM/SIGINT.

On start it first undoes whatever a crashed predecessor left (every group under its cgroup parent goes
back to full size and is removed); on stop it does the same for its own groups.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path, PurePosixPath

import click

from bridge.agent.cgroups import detect
from bridge.agent.errors import AgentError
from bridge.agent.nodemanager import AppFilter, NodeManagerSource, YarnNodeManager
from bridge.agent.procfs import TreeFinder
from bridge.agent.server import AgentServer
from bridge.agent.service import DEFAULT_MIN_SHARE, NodeAgent
from bridge.agent.state import StateFile

log = logging.getLogger("bridge.agent")
TOKEN_ENV = "SCHEDBRIDGE_AGENT_TOKEN"
DEFAULT_PORT = 8478


def _token(token_file: Path | None) -> str:
    token = os.environ.get(TOKEN_ENV, "")
    if token_file is not None:
        token = token_file.read_text().strip()
    if not token:
        raise click.UsageError(f"no shared token: pass --token-file or set {TOKEN_ENV} "
                               "(never on the command line, where `ps` shows it)")
    return token


@click.command("agent")
@click.option("--nm-url", required=True, help="NodeManager web address, e.g. http://127.0.0.1:8042")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Listen address: loopback or the node's cluster address (wildcards refused)")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help=f"File holding the shared token (else ${TOKEN_ENV})")
@click.option("--min-share", default=DEFAULT_MIN_SHARE, show_default=True, type=float,
              help="CPU cores a suspended container keeps (Kairos: 0.1)")
@click.option("--nm-local-dir", "nm_local_dirs", multiple=True,
              help="yarn.nodemanager.local-dirs entry; containers' work dirs must be under one (repeatable)")
@click.option("--app", "apps", multiple=True,
              help="Manage only this application's containers (repeatable; default: every container)")
@click.option("--state-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Default: /var/lib/schedbridge/agent-<port>.json")
@click.option("--cgroup-root", default="/sys/fs/cgroup", show_default=True, type=click.Path(path_type=Path))
@click.option("--cgroup-parent", help="Group holding this agent's groups. Default: schedbridge-<port>")
@click.option("--reconcile-interval", default=1.0, show_default=True, type=click.FloatRange(0.05, 60))
@click.option("--nm-timeout", default=5.0, show_default=True, type=click.FloatRange(0.1, 60))
@click.option("--restore-only", is_flag=True,
              help="Put every container a previous run touched back to full size, remove its groups, exit")
@click.option("--proc-root", default="/proc", hidden=True, type=click.Path(path_type=Path))
@click.option("-v", "--verbose", is_flag=True)
def agent(nm_url: str, host: str, port: int, token_file: Path | None, min_share: float,
          nm_local_dirs: tuple[str, ...], apps: tuple[str, ...], state_file: Path | None, cgroup_root: Path,
          cgroup_parent: str | None,
          reconcile_interval: float, nm_timeout: float, restore_only: bool, proc_root: Path, verbose: bool) -> None:
    """Resize this host's YARN containers through cgroups on the bridge's command."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = None if restore_only else _token(token_file)
    try:
        cgroups = detect(cgroup_root, cgroup_parent or f"schedbridge-{port}", proc_root)
        nm: NodeManagerSource = YarnNodeManager(nm_url, nm_timeout)
        if apps:
            nm = AppFilter(nm, apps)
        node_agent = NodeAgent(nm, cgroups,
                               TreeFinder(tuple(PurePosixPath(d) for d in nm_local_dirs)),
                               StateFile(state_file or Path(f"/var/lib/schedbridge/agent-{port}.json")),
                               min_share=min_share, proc_root=proc_root)
        restored = node_agent.release_all()
        server = AgentServer(host, port, node_agent, token) if token else None
    except (AgentError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    if restored:
        log.info("restored %d container(s) left by a previous run: %s", len(restored), ", ".join(restored))
    if server is not None:
        _run(node_agent, server, reconcile_interval)
    try:
        node_agent.release_all()
        cgroups.close()
    except (AgentError, OSError) as exc:
        raise click.ClickException(f"stopping: {exc}; a restart will retry the restore") from exc
    log.info("stopped; every container is back to full size")


def _run(node_agent: NodeAgent, server: AgentServer, interval: float) -> None:
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve_forever, name="agent-http", daemon=True)
    serving.start()
    bound_host, bound_port = server.server_address[:2]
    click.echo(f"schedbridge agent listening on http://{bound_host}:{bound_port}", err=False)
    try:
        while not stop.is_set():
            try:
                node_agent.reconcile()
            except Exception:  # noqa: BLE001 - keep reconciling; a stopped loop would leak throttles
                log.exception("reconcile failed")
            stop.wait(interval)
    finally:
        server.shutdown()
        server.server_close()
