"""Find the process tree of each YARN container in /proc, and refuse processes that only claim to be one.

Read from Hadoop 3.x's DefaultContainerExecutor source: the NM runs `bash default_container_executor.sh`
with the container's environment and the container work dir
`<local-dir>/usercache/<user>/appcache/<app>/<container_id>` as cwd; that wrapper runs
`default_container_executor_session.sh`, which does `exec setsid /bin/bash launch_container.sh`
(the container's own session, signalled as a group); launch_container.sh exports `CONTAINER_ID` and
`exec`s the payload (e.g. `java`), keeping pid and cwd. So a container's *root* is a process whose
environment names the container, whose parent's does not, and whose cwd is that container's work dir
(under one of the NM's local dirs when they are configured); the command line is not used, since the
exec chain rewrites it. The tree is the verified roots plus all their descendants. A process that
merely sets `CONTAINER_ID` elsewhere is refused.
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ENV_KEY = b"CONTAINER_ID="


@dataclass(frozen=True)
class Proc:
    """The few facts about one process that tree discovery needs."""

    pid: int
    ppid: int
    container_id: str | None


@dataclass(frozen=True)
class TreeScan:
    """Result of one scan: verified trees, and processes that claimed a container but failed checks."""

    trees: dict[str, frozenset[int]] = field(default_factory=dict)
    refused: dict[str, frozenset[int]] = field(default_factory=dict)


def _read_ppid(stat_text: str) -> int:
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    return int(stat_text[stat_text.rindex(")") + 2:].split()[1])


def _read_file(path: str) -> bytes:
    """A /proc file's bytes by plain descriptor reads: the agent reads two per process on every
    reconciliation, and `pathlib`'s buffered I/O costs 2-4x more CPU per read (measured)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _env_container_id(environ: bytes) -> str | None:
    for entry in environ.split(b"\0"):
        if entry.startswith(ENV_KEY):
            return entry[len(ENV_KEY):].decode("ascii", "replace")
    return None


class ProcTable:
    """A snapshot of /proc (or of a fake root in tests)."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self.root = proc_root
        self.procs: dict[int, Proc] = {}
        for entry in os.scandir(proc_root):
            if entry.name.isdigit():
                proc = self._read(int(entry.name))
                if proc is not None:
                    self.procs[proc.pid] = proc

    def _read(self, pid: int) -> Proc | None:
        base = f"{self.root}/{pid}/"
        try:
            ppid = _read_ppid(_read_file(base + "stat").decode("utf-8", "replace"))
            environ = _read_file(base + "environ")
        except (OSError, ValueError, IndexError):
            return None  # vanished, or unreadable: it cannot be verified, so it is left alone
        return Proc(pid, ppid, _env_container_id(environ))

    def cwd(self, pid: int) -> PurePosixPath | None:
        try:
            return PurePosixPath(os.readlink(self.root / str(pid) / "cwd"))
        except OSError:
            return None

    def children(self) -> dict[int, list[int]]:
        kids: dict[int, list[int]] = defaultdict(list)
        for proc in self.procs.values():
            kids[proc.ppid].append(proc.pid)
        return kids


class TreeFinder:
    """Finds verified container process trees; configured once with the NM's local dirs."""

    def __init__(self, local_dirs: tuple[PurePosixPath, ...] = (), never: frozenset[int] = frozenset()) -> None:
        self.local_dirs = local_dirs
        self.never = never | {1, os.getpid()}

    def scan(self, table: ProcTable, wanted: set[str]) -> TreeScan:
        claims = self._claims(table, wanted)
        kids = table.children()
        trees: dict[str, frozenset[int]] = {}
        refused: dict[str, frozenset[int]] = {}
        for cid, pids in claims.items():
            roots = [pid for pid in pids if self._is_root(table, cid, pid)]
            tree = self._descendants(table, kids, cid, roots)
            trees[cid] = frozenset(tree)
            if pids - tree:
                refused[cid] = frozenset(pids - tree)
        return TreeScan(trees, refused)

    @staticmethod
    def _claims(table: ProcTable, wanted: set[str]) -> dict[str, set[int]]:
        claims: dict[str, set[int]] = defaultdict(set)
        for proc in table.procs.values():
            if proc.container_id in wanted:
                claims[proc.container_id].add(proc.pid)
        return claims

    def _is_root(self, table: ProcTable, cid: str, pid: int) -> bool:
        parent = table.procs.get(table.procs[pid].ppid)
        if pid in self.never or (parent is not None and parent.container_id == cid):
            return False
        cwd = table.cwd(pid)
        if cwd is None or cwd.name != cid:
            return False
        return not self.local_dirs or any(cwd.is_relative_to(d) for d in self.local_dirs)

    def _descendants(self, table: ProcTable, kids: dict[int, list[int]], cid: str, roots: list[int]) -> set[int]:
        tree: set[int] = set()
        stack = list(roots)
        while stack:
            pid = stack.pop()
            other = table.procs[pid].container_id
            if pid in tree or pid in self.never or (other is not None and other != cid):
                continue
            tree.add(pid)
            stack.extend(kids.get(pid, ()))
        return tree
