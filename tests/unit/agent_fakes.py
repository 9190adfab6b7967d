"""Fakes for node-agent unit tests: a fake /proc tree, an in-memory NodeManager and cgroup controller."""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bridge.agent.nodemanager import NmContainer

CID = "container_1700000000000_0001_01_000002"
OTHER = "container_1700000000000_0001_01_000003"
LOCAL = Path("/data/nm-local")


def work_dir(cid: str, local: Path = LOCAL) -> Path:
    return local / "usercache" / "alice" / "appcache" / "application_1700000000000_0001" / cid


def add_proc(root: Path, pid: int, ppid: int, cid: str | None = None, cwd: Path | None = None,
             comm: str = "java") -> None:
    """Create /proc/<pid> with stat, environ, cgroup and a cwd symlink (dangling is fine)."""
    base = root / str(pid)
    base.mkdir(parents=True)
    (base / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1\n")
    env = [b"PATH=/usr/bin", b"HOME=/home/alice"] + ([f"CONTAINER_ID={cid}".encode()] if cid else [])
    (base / "environ").write_bytes(b"\0".join(env) + b"\0")
    (base / "cgroup").write_text("4:freezer:/\n3:cpuacct:/\n2:cpu:/nm\n0::/\n")
    os.symlink(cwd or "/", base / "cwd")


def container_tree(root: Path, cid: str = CID, first_pid: int = 100, nm_pid: int = 10) -> list[int]:
    """A DefaultContainerExecutor-shaped container: bash session leader -> java -> python worker."""
    pids = [first_pid, first_pid + 1, first_pid + 2]
    add_proc(root, pids[0], nm_pid, cid, work_dir(cid), comm="bash")
    add_proc(root, pids[1], pids[0], cid, work_dir(cid))
    add_proc(root, pids[2], pids[1], None, work_dir(cid), comm="python3")  # env cleared: still in the tree
    return pids


@dataclass
class FakeNodeManager:
    """NodeManagerSource backed by a dict; set `down` to simulate an unreachable NM."""

    listed: dict[str, NmContainer] = field(default_factory=dict)
    down: bool = False

    def run(self, cid: str, state: str = "RUNNING") -> None:
        self.listed[cid] = NmContainer(cid, state, "alice", 2048, 1)

    def containers(self) -> list[NmContainer]:
        self._check()
        return list(self.listed.values())

    def container(self, container_id: str) -> NmContainer | None:
        self._check()
        return self.listed.get(container_id)

    def _check(self) -> None:
        if self.down:
            from bridge.agent.errors import NodeManagerUnavailable
            raise NodeManagerUnavailable("fake NM is down")


@dataclass
class FakeGroup:
    pids: set[int] = field(default_factory=set)
    share: float | None = None
    frozen: bool = False
    usage_ns: int = 0


@dataclass
class FakeCgroups:
    """In-memory CpuController that records what was released and where to."""

    version: int = 1
    groups_: dict[str, FakeGroup] = field(default_factory=dict)
    released: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def create(self, name: str) -> None:
        self.groups_.setdefault(name, FakeGroup())

    def attach(self, name: str, pids: Iterable[int]) -> None:
        self.groups_[name].pids.update(pids)

    def pids(self, name: str) -> set[int]:
        return set(self.groups_[name].pids) if name in self.groups_ else set()

    def set_share(self, name: str, cpus: float | None) -> None:
        self.groups_[name].share = cpus

    def set_frozen(self, name: str, frozen: bool) -> None:
        self.groups_[name].frozen = frozen

    def usage_ns(self, name: str) -> int:
        return self.groups_[name].usage_ns

    def origin(self, pid: int) -> dict[str, str]:
        return {"cpu": f"/origin-of-{pid}"}

    def release(self, name: str, origin: dict[str, str]) -> None:
        if self.groups_.pop(name, None) is not None:
            self.released.append((name, origin))

    def groups(self) -> list[str]:
        return sorted(self.groups_)

    def close(self) -> None:
        pass
