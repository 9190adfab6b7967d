"""The node agent's logic: keep a cgroup per running container of its NodeManager, resize on command.

Every running container is adopted into a group at full size, so its CPU time is accounted from the
start; suspend/resize/resume only change the group's limits (children inherit the group, so commands
never scan /proc). Reconciliation sweeps stray processes into their groups and releases the group of
every container that is no longer running, so a throttle never outlives its container. The state file
records each limit before it takes effect, so a restart after a crash (`release_all`) can put every
touched container back to full size. Every throttle holds under a lease (`leases.py`): one whose
controller stopped renewing it is lifted by `watch_leases`, on a thread of its own: never behind a
NodeManager call, which a slow NodeManager can stretch to its whole deadline.
"""
from __future__ import annotations

import logging
import math
import os
import resource
import socket
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge.agent.cgroups import CpuController
from bridge.agent.errors import (AgentError, BadRequest, ContainerNotRunning, NodeManagerUnavailable,
                                 NoContainerProcesses, UnknownContainer)
from bridge.agent.leases import Leases, lease_seconds
from bridge.agent.metrics import AgentMetrics, Samples
from bridge.agent.nodemanager import NmContainer, NodeManagerSource, check_container_id
from bridge.agent.procfs import ProcTable, TreeFinder
from bridge.agent.state import Managed, StateFile

log = logging.getLogger(__name__)
DEFAULT_MIN_SHARE = 0.1  # Kairos' `processorsharing.minimum-cpu`: small, not zero, so heartbeats go on
REMEMBERED_FINISHED = 4096  # released ids kept so a late command hears "finished", not "unknown"
LEASE_TICK_S = 0.25  # how late `watch_leases` may lift a lease


@dataclass(frozen=True)
class Limits:
    """The limits a command asks for: `share` cores (None = full size) and whether to freeze."""

    share: float | None
    frozen: bool = False

    @property
    def throttled(self) -> bool:
        return self.share is not None or self.frozen


def repeat(step: Callable[[], object], every_s: float, stop: threading.Event, what: str) -> None:
    """Runs ``step`` every ``every_s`` until ``stop`` is set; a failure is logged and the loop goes
    on (a stopped loop would leak throttles)."""
    while not stop.is_set():
        try:
            step()
        except Exception:  # keep going, see above
            log.exception("%s failed", what)
        stop.wait(every_s)


class NodeAgent:
    """Owns the cgroups of one NodeManager's containers; thread-safe (one lock around all changes)."""

    def __init__(self, nm: NodeManagerSource, cgroups: CpuController, finder: TreeFinder, state: StateFile,
                 min_share: float = DEFAULT_MIN_SHARE, proc_root: Path = Path("/proc"),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cpus = os.cpu_count() or 1
        if not 0.01 <= min_share <= self.cpus:
            raise BadRequest(f"min_share must be within [0.01, {self.cpus}] cores, got {min_share}")
        self.nm, self.cgroups, self.finder, self.state = nm, cgroups, finder, state
        self.min_share = min_share
        self.proc_root = proc_root
        self.managed: dict[str, Managed] = {}
        self.listing: dict[str, NmContainer] = {}
        self.finished: OrderedDict[str, None] = OrderedDict()
        self.nm_reachable = False
        self.leases = Leases(clock)
        self.metrics = AgentMetrics()
        self._lock = threading.Lock()

    # -- commands -------------------------------------------------------------------------------
    def suspend(self, container_id: str, freeze: bool = False, lease_s: Any = None) -> dict[str, Any]:
        """Shrink to the minimum share (or freeze) for ``lease_s`` seconds unless renewed."""
        return self._apply(container_id, Limits(self.min_share, frozen=freeze), lease_seconds(lease_s), "suspends")

    def resume(self, container_id: str) -> dict[str, Any]:
        return self._apply(container_id, Limits(None), 0.0, "resumes")

    def resize(self, container_id: str, cpus: Any, lease_s: Any = None) -> dict[str, Any]:
        if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not math.isfinite(cpus) \
                or not self.min_share <= cpus <= self.cpus:
            raise BadRequest(f"resize of {container_id}: cpus must be a number within "
                             f"[{self.min_share}, {self.cpus}], got {cpus!r}")
        return self._apply(container_id, Limits(float(cpus)), lease_seconds(lease_s), "resizes")

    def renew(self, container_ids: Any, lease_s: Any = None) -> dict[str, Any]:
        """Extend the leases on ``container_ids`` (a controller's batch renewal); those this agent
        holds no lease on (resumed, expired, finished) come back as ``not_held``."""
        if not isinstance(container_ids, list) or not all(isinstance(c, str) for c in container_ids):
            raise BadRequest("'containers' must be a list of container ids")
        seconds = lease_seconds(lease_s)
        with self._lock:
            renewed, not_held = self.leases.renew(container_ids, seconds)
        self.metrics.inc("schedbridge_agent_lease_renewals_total", len(renewed))
        return {"renewed": renewed, "not_held": not_held, "lease_s": seconds}

    def _apply(self, container_id: str, limits: Limits, lease_s: float, command: str) -> dict[str, Any]:
        """Set ``limits`` under a lease of ``lease_s``, counted as ``command`` (suspends, resumes, resizes)."""
        container = self._require_running(container_id)
        with self._lock:
            if container_id not in self.managed:
                self._adopt(container_id, ProcTable(self.proc_root), required=True)
            self._set_limits(container_id, self.managed[container_id], limits)
            if limits.throttled:
                self.leases.grant(container_id, lease_s)
            else:
                self.leases.drop(container_id)
            log.info("container %s: share=%s frozen=%s", container_id, limits.share, limits.frozen)
            self.metrics.inc(f"schedbridge_agent_{command}_total")
            return self._status(container_id, container)

    def _set_limits(self, container_id: str, entry: Managed, limits: Limits) -> None:
        """Record ``limits`` (before they take effect: a crash now is still undone), then apply them."""
        entry.share, entry.frozen = limits.share, limits.frozen
        self.state.save(self.managed)
        self.cgroups.set_share(container_id, limits.share)
        self.cgroups.set_frozen(container_id, limits.frozen)

    def _require_running(self, container_id: str) -> NmContainer:
        check_container_id(container_id)
        container = self.nm.container(container_id)
        if container is None and (container_id in self.managed or container_id in self.finished):
            raise ContainerNotRunning(f"container {container_id} is no longer listed by the NodeManager "
                                      "(finished); nothing to resize")
        if container is None:
            raise UnknownContainer(f"container {container_id} is not known to this agent's NodeManager")
        if not container.running:
            raise ContainerNotRunning(f"container {container_id} is {container.state}, not RUNNING; "
                                      "only running containers can be resized")
        return container

    # -- group bookkeeping (callers hold the lock) ---------------------------------------------
    def _adopt(self, container_id: str, table: ProcTable, required: bool) -> None:
        scan = self.finder.scan(table, {container_id})
        tree = scan.trees.get(container_id, frozenset())
        if not tree:
            if required:
                refused = sorted(scan.refused.get(container_id, ()))
                raise NoContainerProcesses(
                    f"container {container_id} is RUNNING but no verified process of it is on this host"
                    + (f" (refused unverified pids {refused})" if refused else ""))
            return
        self.managed[container_id] = Managed(origin=self.cgroups.origin(min(tree)))
        self.state.save(self.managed)
        self.cgroups.create(container_id)
        self.cgroups.attach(container_id, sorted(tree))
        # A child forked while its parent was being moved may have stayed behind; once every member is
        # in, later children inherit the group by themselves, so one more pass closes the race.
        self._sweep(container_id, ProcTable(self.proc_root))

    def _sweep(self, container_id: str, table: ProcTable) -> None:
        missing = self._tree(container_id, table) - self.cgroups.pids(container_id)
        if missing:
            self.cgroups.attach(container_id, sorted(missing))

    def _release(self, container_id: str) -> None:
        entry = self.managed.get(container_id, Managed())
        self.cgroups.release(container_id, entry.origin)
        self.managed.pop(container_id, None)
        self.leases.forget(container_id)
        self.finished[container_id] = None
        if len(self.finished) > REMEMBERED_FINISHED:
            self.finished.popitem(last=False)
        log.info("container %s: released (full size, group removed)", container_id)

    # -- periodic work ---------------------------------------------------------------------------
    def expire_leases(self) -> list[str]:
        """Put every container whose lease ran out back to full size (its controller stopped
        renewing: it died, or lost the network); returns them."""
        with self._lock:
            due = self.leases.due()
            for cid in due:
                self._guarded(self._lift, cid)
            return due

    def watch_leases(self, stop: threading.Event) -> None:
        """Lifts leases as they run out, every LEASE_TICK_S, until ``stop`` is set."""
        repeat(self.expire_leases, LEASE_TICK_S, stop, "lifting expired leases")

    def _lift(self, container_id: str) -> None:
        entry = self.managed.get(container_id)
        self.leases.expire(container_id)
        if entry is None:
            return
        self._set_limits(container_id, entry, Limits(None))
        log.warning("container %s: lease expired (its controller stopped renewing it): back to full size",
                    container_id)

    def reconcile(self) -> None:
        """Lift expired leases, adopt new running containers, sweep new children in, release groups
        of finished containers."""
        start = time.perf_counter()
        try:
            self._reconcile()
        finally:
            self.metrics.observe("schedbridge_agent_reconcile_duration_seconds", time.perf_counter() - start)

    def _reconcile(self) -> None:
        self.expire_leases()  # first: the NodeManager call below may take up to its timeout
        try:
            listing = {c.id: c for c in self.nm.containers()}
            self.nm_reachable = True
        except NodeManagerUnavailable as exc:
            log.warning("reconcile: %s; releasing only groups whose processes are gone", exc)
            listing, self.nm_reachable = None, False
        with self._lock:
            if listing is not None:
                self.listing = listing
            running = {cid for cid, c in self.listing.items() if c.running} if listing is not None \
                else set(self.managed)
            table = ProcTable(self.proc_root)
            for cid in sorted(set(self.managed) | running):
                self._guarded(self._reconcile_one, cid, cid in running, table)
            self.state.save(self.managed)

    def _reconcile_one(self, container_id: str, running: bool, table: ProcTable) -> None:
        if container_id not in self.managed:
            self._adopt(container_id, table, required=False)
        elif not running or not (self.cgroups.pids(container_id) or self._tree(container_id, table)):
            self._release(container_id)
        else:
            self._sweep(container_id, table)

    def _tree(self, container_id: str, table: ProcTable) -> frozenset[int]:
        return self.finder.scan(table, {container_id}).trees.get(container_id, frozenset())

    @staticmethod
    def _guarded(step: Any, container_id: str, *args: Any) -> None:
        try:
            step(container_id, *args)
        except AgentError as exc:  # one broken container must not stop the others' reconciliation
            log.error("container %s: %s", container_id, exc)

    def release_all(self) -> list[str]:
        """Put every container this agent (or a crashed predecessor) touched back to full size."""
        with self._lock:
            known = self.state.load() | self.managed
            self.managed = known
            names = sorted(set(known) | set(self.cgroups.groups()))
            for cid in names:
                self._guarded(self._release, cid)
            self.state.save(self.managed)
            return names

    # -- reports ---------------------------------------------------------------------------------
    def containers(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._status(cid, self.listing.get(cid)) for cid in self._known()]

    def _known(self) -> list[str]:
        """Every container managed or listed as running (callers hold the lock)."""
        return sorted(set(self.managed) | {c.id for c in self.listing.values() if c.running})

    def prometheus(self) -> str:
        """`GET /metrics`: the counters, and the containers by state and the leases as of now."""
        with self._lock:
            states = Counter(self._state(self.managed.get(cid)) for cid in self._known())
            sampled: dict[str, Samples] = {
                "schedbridge_agent_containers": {(("state", s),): float(states[s])
                                                 for s in ("running", "suspended", "resized")},
                "schedbridge_agent_leases_held": {(): float(len(self.leases))},
                "schedbridge_agent_lease_expiries_total": {(): float(self.leases.expired_total)},
                "schedbridge_agent_nodemanager_reachable": {(): float(self.nm_reachable)},
            }
        return self.metrics.exposition(sampled)

    def _state(self, entry: Managed | None) -> str:
        if entry is None or not entry.throttled:
            return "running"
        return "suspended" if entry.frozen or entry.share == self.min_share else "resized"

    def container(self, container_id: str) -> dict[str, Any]:
        container = self.nm.container(check_container_id(container_id))
        with self._lock:
            if container is None and container_id not in self.managed:
                raise UnknownContainer(f"container {container_id} is not known to this agent's NodeManager")
            return self._status(container_id, container)

    def _status(self, container_id: str, container: NmContainer | None) -> dict[str, Any]:
        entry = self.managed.get(container_id)
        usage = None
        if entry is not None:
            try:
                usage = self.cgroups.usage_ns(container_id)
            except AgentError:
                usage = None
        return {
            "id": container_id,
            "state": container.state if container else "UNKNOWN",
            "user": container.user if container else None,
            "vcores": container.vcores if container else None,
            "memory_mb": container.memory_mb if container else None,
            "managed": entry is not None,
            "share": entry.share if entry else None,
            "frozen": entry.frozen if entry else False,
            "throttled": entry.throttled if entry else False,
            "lease_s_left": self.leases.left(container_id),
            "lease_expired_at": self.leases.expired_at.get(container_id),
            "pids": len(self.cgroups.pids(container_id)) if entry else 0,
            "cpu_usage_ns": usage,
            "sampled_at": time.time(),
        }

    def node(self) -> dict[str, Any]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        with self._lock:
            entries = list(self.managed.values())
            return {
                "host": socket.gethostname(),
                "pid": os.getpid(),  # which process answers: a supervisor's restart shows as a new one
                "cgroup_version": self.cgroups.version,
                "cpus": self.cpus,
                "min_share": self.min_share,
                "nodemanager_reachable": self.nm_reachable,
                "running_containers": sum(1 for c in self.listing.values() if c.running),
                "managed_containers": len(entries),
                "throttled_containers": sum(1 for e in entries if e.throttled),
                "frozen_containers": sum(1 for e in entries if e.frozen),
                "leases_held": len(self.leases),
                "leases_expired": self.leases.expired_total,
                "loadavg": list(os.getloadavg()),
                "agent_cpu_s": own.ru_utime + own.ru_stime,
                "sampled_at": time.time(),
            }
