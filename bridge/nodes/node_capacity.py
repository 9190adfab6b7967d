"""Raise every node's advertised vcores by Q (Kairos' N+Q admission), and put them back afterwards.

YARN grants a node's containers only up to its advertised vcores, so to run N+Q one-core executors on
an N-core node the RM must believe the node has N+Q vcores: ``POST /ws/v1/cluster/nodes/{id}/resource``
(`platform-facts.md` §7.3). The RM keeps such an update until it is changed again or the NodeManager
re-registers, so the original capacity is restored on exit, on error, and by ``restore`` from a file
written before the first change (for a driver that was killed). That record is written once and kept
until a restore succeeds: a run that finds it (its predecessor was killed) takes the original values
from it, never the raised values the RM shows, so Q is not added twice. Given a ``GuardTarget``, a
guard process (``bridge.nodes.vcores_guard``) restores from that record by itself if the process
holding the raise dies, SIGKILL included.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from bridge.common import atomic
from yarnclient.models import Node

APPLY_TIMEOUT_S = 30.0  # how long the RM may take to show an update it accepted (it applies them asynchronously)
RESEND_S = 5.0  # an update not shown by then is sent again: a NodeManager (re-)registering around it resets it

log = logging.getLogger(__name__)


class NodeResources(Protocol):
    """The part of `yarnclient.ResourceManagerClient` this module uses."""

    def nodes(self, states: Iterable[str] | None = None) -> list[Node]: ...

    def update_node_resource(self, node_id: str, *, vcores: int, memory_mb: int,
                             overcommit_timeout_s: int = -1) -> dict: ...


class Guard(Protocol):
    """Whatever restores the record if this process dies; released once it has restored itself."""

    def release(self) -> None: ...


class RaisedVcores:
    """Context manager: every RUNNING node advertises ``extra`` more vcores while it is open."""

    def __init__(self, rm: NodeResources, extra: int, record: Path,
                 guard: Callable[[Path], Guard] | None = None) -> None:
        """``guard``, given the record, starts what restores it if this process dies."""
        if extra < 0:
            raise ValueError(f"extra vcores must be >= 0, got {extra}")
        self.rm, self.extra, self.record, self.start_guard = rm, extra, record, guard
        self.original: dict[str, tuple[int, int]] = {}
        self._guard: Guard | None = None

    def __enter__(self) -> RaisedVcores:
        self.original = original_capacities(self.rm, self.record)
        if self.start_guard is not None:  # before any raise: a death from now on is covered
            self._guard = self.start_guard(self.record)
        try:
            raised = {node: (vcores + self.extra, memory_mb) for node, (vcores, memory_mb) in self.original.items()}
            for node_id in sorted(raised):
                self._send(node_id, raised)
            if lagging := wait_applied(self.rm, raised, resend=lambda node: self._send(node, raised)):
                raise RuntimeError(f"the ResourceManager accepted the raised vcores but did not show them within "
                                   f"{APPLY_TIMEOUT_S:g} s: {lagging}")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _send(self, node_id: str, capacities: dict[str, tuple[int, int]]) -> None:
        vcores, memory_mb = capacities[node_id]
        self.rm.update_node_resource(node_id, vcores=vcores, memory_mb=memory_mb)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.restore_now()
        finally:
            if self._guard is not None:
                self._guard.release()

    def restore_now(self) -> None:
        """Put back the recorded capacities; the record file goes once all of them are back."""
        restore(self.rm, self.record)


def original_capacities(rm: NodeResources, record: Path) -> dict[str, tuple[int, int]]:
    """Each RUNNING node's (vcores, memory MB) before any raise: as ``record`` saved it, else its
    current capacity, which is added to the record before anything changes."""
    saved = load_record(record)
    current = {n.node_id: (n.vcores_total, n.memory_mb_total) for n in rm.nodes(states=["RUNNING"])}
    known = {**current, **saved}
    if known != saved:
        _write_record(record, known)
    return {node_id: known[node_id] for node_id in current}


def load_record(record: Path) -> dict[str, tuple[int, int]]:
    """The capacities saved in ``record`` (none if it does not exist); a damaged file is an error
    naming it, never a guess: guessing could make raised values permanent."""
    if not record.exists():
        return {}
    try:
        return {str(node): (int(vcores), int(memory_mb))
                for node, (vcores, memory_mb) in json.loads(record.read_text()).items()}
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"vcores record {record} is unreadable ({exc}); put the NodeManagers' vcores "
                         "back by hand, then delete it") from exc


def _write_record(record: Path, capacities: dict[str, tuple[int, int]]) -> None:
    """Atomically (a temporary file renamed), so a kill mid-write leaves the old record or the new one."""
    record.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(record, json.dumps(capacities, sort_keys=True))


def restore(rm: NodeResources, record: Path) -> list[str]:
    """Restore the capacities saved in ``record`` (if any), waiting until the RM shows them; returns
    the node ids that failed (or did not show them in time: the record stays for another try)."""
    saved = load_record(record)
    failed = []
    for node_id, (vcores, memory_mb) in sorted(saved.items()):
        try:
            rm.update_node_resource(node_id, vcores=vcores, memory_mb=memory_mb)
        except Exception as exc:  # noqa: BLE001 - try every node, report the rest
            log.warning("could not restore %s to %d vcores / %d MB: %s", node_id, vcores, memory_mb, exc)
            failed.append(node_id)
    def resend(node_id: str) -> None:
        try:
            rm.update_node_resource(node_id, vcores=saved[node_id][0], memory_mb=saved[node_id][1])
        except Exception as exc:  # noqa: BLE001 - the node stays lagging, and is reported so
            log.warning("could not restore %s again: %s", node_id, exc)

    for node_id, shown in wait_applied(rm, {n: c for n, c in saved.items() if n not in failed}, resend=resend).items():
        log.warning("%s: the ResourceManager still shows %s (vcores, MB) after restoring %s", node_id, shown,
                    saved[node_id])
        failed.append(node_id)
    if not failed:
        record.unlink(missing_ok=True)
    return sorted(failed)


def wait_applied(rm: NodeResources, want: dict[str, tuple[int, int]], timeout_s: float | None = None,
                 every_s: float = 0.2, resend: Callable[[str], None] | None = None) -> dict[str, tuple[int, int]]:
    """Wait until every listed node of ``want`` shows its (vcores, memory MB); the RM applies an
    accepted update through its event queue, so a listing right after it may still show the old
    capacity. A node still lagging after RESEND_S gets ``resend`` (the update again): the RM
    accepts an update and then loses it when the NodeManager re-registers (it takes the node's own
    capacity again), which a testbed started moments before can do. Returns what the nodes that
    never showed theirs still showed (empty: all applied; a node the RM no longer lists is not
    waited for)."""
    if not want:
        return {}
    start = time.monotonic()
    deadline, next_resend = start + (APPLY_TIMEOUT_S if timeout_s is None else timeout_s), start + RESEND_S
    while True:
        shown = {n.node_id: (n.vcores_total, n.memory_mb_total) for n in rm.nodes()}
        lagging = {node: shown[node] for node, capacity in want.items() if node in shown and shown[node] != capacity}
        now = time.monotonic()
        if not lagging or now >= deadline:
            return lagging
        if resend is not None and now >= next_resend:
            log.warning("the ResourceManager does not show the capacity it accepted for %s after %.0f s; "
                        "sending it again", ", ".join(sorted(lagging)), now - start)
            for node in sorted(lagging):
                resend(node)
            next_resend = now + RESEND_S
        time.sleep(every_s)
