"""The agent's on-disk memory of what it touched, so a restart after a crash can undo it.

Written atomically (temp file in the same directory, then rename), so an agent crash leaves either the
old or the new state, never a torn file. Deliberately not fsync'ed: the cgroups this state describes live
in kernel memory and vanish with the kernel, so the file only has to survive the agent process, and the
page cache does that; an fsync would add ~10 ms to every command.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from bridge.agent.cgroups import Origin
from bridge.agent.errors import AgentLocked
from bridge.common import atomic

log = logging.getLogger(__name__)
VERSION = 1


@dataclass
class Managed:
    """One container the agent has a group for: where its processes came from, and its current limits."""

    origin: Origin = field(default_factory=dict)
    share: float | None = None  # cores; None means full size (no quota)
    frozen: bool = False

    @property
    def throttled(self) -> bool:
        return self.share is not None or self.frozen


class StateFile:
    """JSON file mapping container id -> Managed, with the cgroup parent those groups live under (so a
    restore needs nothing but the file)."""

    def __init__(self, path: Path, cgroup_parent: str | None = None) -> None:
        self.path = path
        self.cgroup_parent = cgroup_parent

    def load(self) -> dict[str, Managed]:
        """The saved state; a missing file is empty, an unreadable one is logged and treated as empty
        (restore then falls back to the hierarchy root as every group's origin)."""
        raw = self._read()
        try:
            return {cid: Managed(origin=dict(entry["origin"]), share=entry["share"], frozen=bool(entry["frozen"]))
                    for cid, entry in raw["containers"].items()} if raw else {}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("ignoring unreadable agent state %s: %s", self.path, exc)
            return {}

    def recorded_parent(self) -> str | None:
        """The cgroup parent of the agent that wrote the file, if it recorded one."""
        parent = self._read().get("cgroup_parent")
        return parent if isinstance(parent, str) else None

    def _read(self) -> dict[str, Any]:
        try:
            raw = json.loads(self.path.read_text())
            if not isinstance(raw, dict) or raw.get("version") != VERSION:
                raise ValueError(f"not an agent state of version {VERSION}")
            return raw
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable agent state %s: %s", self.path, exc)
            return {}

    def save(self, managed: dict[str, Managed]) -> None:
        payload = {"version": VERSION, "cgroup_parent": self.cgroup_parent,
                   "containers": {cid: asdict(m) for cid, m in sorted(managed.items())}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.path, json.dumps(payload, indent=1), private=True)


class NodeLock:
    """An exclusive `flock` on `<state file>.lock`, held while an agent runs (or restores).

    A second agent for the same state file, started by mistake, must refuse before it touches anything:
    its start-up restore would undo the running agent's throttles and delete its groups. The kernel drops
    the lock when its holder dies, even by SIGKILL, so a restart is never locked out.
    """

    def __init__(self, state_path: Path) -> None:
        self.path = state_path.with_name(state_path.name + ".lock")
        self._fd: int | None = None

    def __enter__(self) -> NodeLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise AgentLocked(f"another agent (pid {holder}) holds {self.path}: it already manages this "
                              "state file's containers; stop it first (SIGTERM restores everything)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
