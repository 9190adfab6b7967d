"""`schedbridge agent`: run the node agent next to one NodeManager until SIGTERM/SIGINT.

Start-up is ordered so that a mistaken start changes nothing: the listen address (and TLS, which a
non-loopback address needs unless --insecure) and the token are checked first, then the node lock
is taken (a second agent for the same state file refuses here), then the port is bound, and only
then are the throttles a crashed predecessor left released. On stop the agent releases its own
groups the same way.
"""
from __future__ import annotations

import logging
import os
import signal
import ssl
import threading
from pathlib import Path, PurePosixPath

import click

from bridge.agent.cgroups import CpuController, detect
from bridge.agent.errors import AgentError
from bridge.agent.nodemanager import AppFilter, NodeManagerSource, NoNodeManager, YarnNodeManager
from bridge.agent.procfs import TreeFinder
from bridge.agent.server import AgentServer, ListenAddress, check_token, listen_address
from bridge.agent.service import DEFAULT_MIN_SHARE, NodeAgent, repeat
from bridge.agent.state import NodeLock, StateFile
from bridge.common.options import FiniteFloat
from bridge.common.secret_file import check_private
from bridge.common.tls import check_listen, server_options, server_tls

log = logging.getLogger("bridge.agent")
TOKEN_ENV = "SCHEDBRIDGE_AGENT_TOKEN"
DEFAULT_PORT = 8478


def _token(token_file: Path | None) -> str:
    source = f"--token-file {token_file}" if token_file is not None else f"${TOKEN_ENV}"
    try:
        if token_file is not None:
            check_private(token_file)
        token = token_file.read_text().strip() if token_file is not None else os.environ.get(TOKEN_ENV, "")
    except (OSError, UnicodeError) as exc:
        raise click.UsageError(f"cannot read --token-file {token_file}: {exc}") from exc
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--token-file") from None
    if not token:
        raise click.UsageError(f"no shared token: pass --token-file or set {TOKEN_ENV} "
                               "(never on the command line, where `ps` shows it)")
    try:
        check_token(token)
    except AgentError as exc:
        raise click.UsageError(f"{source}: {exc}") from exc
    return token


def _address(host: str, port: int) -> ListenAddress:
    try:
        return listen_address(host, port)
    except AgentError as exc:
        raise click.BadParameter(str(exc), param_hint="--host") from exc


def _tls(host: str, cert: Path | None, key: Path | None, insecure: bool) -> ssl.SSLContext | None:
    """The server's TLS context, if given; a non-loopback --host without one needs --insecure."""
    try:
        tls = server_tls(cert, key)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        check_listen("schedbridge agent", host, tls, insecure)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--host") from None
    try:
        return tls.context() if tls is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--tls-cert/--tls-key") from None


@click.command("agent")
@click.option("--nm-url", help="NodeManager web address, e.g. http://127.0.0.1:8042 (not needed with --restore-only)")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Listen address: loopback or the node's cluster address (wildcards refused)")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help=f"File holding the shared token (else ${TOKEN_ENV})")
@click.option("--min-share", default=DEFAULT_MIN_SHARE, show_default=True, type=FiniteFloat(0.01, 1024),
              help="CPU cores a suspended container keeps (Kairos: 0.1)")
@click.option("--nm-local-dir", "nm_local_dirs", multiple=True,
              help="yarn.nodemanager.local-dirs entry; containers' work dirs must be under one (repeatable)")
@click.option("--app", "apps", multiple=True,
              help="Manage only this application's containers (repeatable; default: every container)")
@click.option("--state-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Default: /var/lib/schedbridge/agent-<port>.json")
@click.option("--cgroup-root", default="/sys/fs/cgroup", show_default=True, type=click.Path(path_type=Path))
@click.option("--cgroup-parent", help="Group holding this agent's groups. Default: schedbridge-<port> "
              "(with --restore-only: the one the state file records, if any)")
@click.option("--reconcile-interval", default=1.0, show_default=True, type=FiniteFloat(0.05, 60))
@click.option("--nm-timeout", default=5.0, show_default=True, type=FiniteFloat(0.1, 60),
              help="Connect and read timeout of each NodeManager call; a call ends within twice this, "
                   "however slowly the NodeManager answers.")
@click.option("--restore-only", is_flag=True,
              help="Put every container a previous run touched back to full size, remove its groups, exit")
@click.option("--proc-root", default="/proc", hidden=True, type=click.Path(path_type=Path))
@server_options
@click.option("-v", "--verbose", is_flag=True)
def agent(nm_url: str | None, host: str, port: int, token_file: Path | None, min_share: float,
          nm_local_dirs: tuple[str, ...], apps: tuple[str, ...], state_file: Path | None, cgroup_root: Path,
          cgroup_parent: str | None, reconcile_interval: float, nm_timeout: float, restore_only: bool,
          proc_root: Path, tls_cert: Path | None, tls_key: Path | None, insecure: bool, verbose: bool) -> None:
    """Resize this host's YARN containers through cgroups on the bridge's command."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    address = _address(host, port)  # first of all: a wildcard must be refused before anything happens
    tls = None if restore_only else _tls(host, tls_cert, tls_key, insecure)
    token = None if restore_only else _token(token_file)
    if nm_url is None and not restore_only:
        raise click.UsageError("--nm-url is required (only --restore-only runs without a NodeManager)")
    state_path = state_file or Path(f"/var/lib/schedbridge/agent-{port}.json")
    try:
        with NodeLock(state_path):
            parent = _cgroup_parent(cgroup_parent, StateFile(state_path), port, restore_only)
            state = StateFile(state_path, parent)
            cgroups = detect(cgroup_root, parent, proc_root)
            nm: NodeManagerSource = NoNodeManager() if nm_url is None else YarnNodeManager(nm_url, nm_timeout)
            if apps:
                nm = AppFilter(nm, apps)
            node_agent = NodeAgent(nm, cgroups, TreeFinder(tuple(PurePosixPath(d) for d in nm_local_dirs)),
                                   state, min_share=min_share, proc_root=proc_root)
            if token is None:
                _restore(node_agent, cgroups, "left by a previous run")
            else:
                _serve(node_agent, cgroups, _listen(address, node_agent, token, tls), reconcile_interval)
    except (AgentError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc


def _cgroup_parent(given: str | None, state: StateFile, port: int, restore_only: bool) -> str:
    """--cgroup-parent; else, for a restore, the parent the state file records; else schedbridge-<port>."""
    recorded = state.recorded_parent() if restore_only and given is None else None
    return given or recorded or f"schedbridge-{port}"


def _listen(address: ListenAddress, node_agent: NodeAgent, token: str, tls: ssl.SSLContext | None) -> AgentServer:
    try:
        return AgentServer(address, node_agent, token, tls=tls)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on --host {address.sockaddr[0]} --port {address.sockaddr[1]}: "
                                   f"{exc.strerror}") from exc


def _serve(node_agent: NodeAgent, cgroups: CpuController, server: AgentServer, interval: float) -> None:
    """Bound, so now undo what a crashed predecessor left, serve until a signal, then restore."""
    try:
        _log_restored(node_agent.release_all(), "left by a previous run")
        _run(node_agent, server, interval)
    finally:
        server.server_close()
    _restore(node_agent, cgroups, "on stop")


def _restore(node_agent: NodeAgent, cgroups: CpuController, why: str) -> None:
    """Release every group (and the parent), as a restore-only run and a stopping agent do."""
    try:
        _log_restored(node_agent.release_all(), why)
        cgroups.close()
    except (AgentError, OSError) as exc:
        raise click.ClickException(f"restoring: {exc}; running again (or --restore-only) retries it") from exc
    log.info("stopped; every container is back to full size")


def _log_restored(restored: list[str], why: str) -> None:
    if restored:
        log.info("restored %d container(s) %s: %s", len(restored), why, ", ".join(restored))


def _run(node_agent: NodeAgent, server: AgentServer, interval: float) -> None:
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve_forever, name="agent-http", daemon=True)
    serving.start()
    click.echo(f"schedbridge agent listening on {server.url}")
    try:
        work(node_agent, interval, stop)
    finally:
        server.shutdown()


def work(node_agent: NodeAgent, interval: float, stop: threading.Event) -> None:
    """Reconciles every ``interval`` until ``stop``; leases are lifted on a thread of their own, so
    that a slow NodeManager never holds one back."""
    leases = threading.Thread(target=node_agent.watch_leases, args=(stop,), name="agent-leases", daemon=True)
    leases.start()
    try:
        repeat(node_agent.reconcile, interval, stop, "reconcile")
    finally:
        stop.set()
        leases.join()
