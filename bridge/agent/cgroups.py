"""CPU resizing through cgroups the agent creates: v1 (`cpu`, `cpuacct`, `freezer`) or v2 (`cpu.max`).

`CpuController` is the interface the agent uses; `detect` picks the implementation the host supports.
Every group lives at `<hierarchy>/<parent>/<name>`, and the agent only ever writes inside `<parent>`
(which it creates) and into the `cgroup.procs` of the group a process came from, when handing it back.
Memory is deliberately not a controller here: see docs/node-agent.md.
"""
from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from bridge.agent.errors import BadRequest, CgroupError

PERIOD_US = 100_000
MIN_QUOTA_US = 1_000  # the kernel's floor for cfs_quota_us / cpu.max
NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")

Origin = dict[str, str]  # hierarchy key -> cgroup path (as in /proc/<pid>/cgroup) a process came from


class CpuController(Protocol):
    """Per-container CPU groups: create, fill, cap, freeze, account, hand back."""

    version: int

    def create(self, name: str) -> None: ...
    def attach(self, name: str, pids: Iterable[int]) -> None: ...
    def pids(self, name: str) -> set[int]: ...
    def set_share(self, name: str, cpus: float | None) -> None: ...
    def set_frozen(self, name: str, frozen: bool) -> None: ...
    def usage_ns(self, name: str) -> int: ...
    def origin(self, pid: int) -> Origin: ...
    def release(self, name: str, origin: Origin) -> None: ...
    def groups(self) -> list[str]: ...
    def close(self) -> None: ...


def quota_us(cpus: float) -> int:
    """CFS quota for a share of `cpus` cores per PERIOD_US."""
    return max(MIN_QUOTA_US, round(cpus * PERIOD_US))


def check_name(name: str) -> str:
    if not NAME_RE.fullmatch(name) or name in (".", ".."):
        raise BadRequest(f"invalid cgroup name: {name!r}")
    return name


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise CgroupError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise CgroupError(f"cannot read {path}: {exc.strerror}") from exc


class _CgroupFs:
    """What v1 and v2 share: groups as directories under a parent in one or more hierarchies."""

    version = 0

    def __init__(self, hierarchies: dict[str, Path], parent: str, proc_root: Path) -> None:
        self.hierarchies = hierarchies
        self.parent = check_name(parent)
        self.proc_root = proc_root

    def _dir(self, key: str, name: str) -> Path:
        return self.hierarchies[key] / self.parent / check_name(name)

    def _prepare_parent(self, parent_dir: Path) -> None:
        """Hook for v2, which must enable the cpu controller for the parent's children."""

    def create(self, name: str) -> None:
        for key, mount in self.hierarchies.items():
            parent_dir = mount / self.parent
            if not parent_dir.is_dir():
                self._mkdir(parent_dir)
                self._prepare_parent(parent_dir)
            self._mkdir(self._dir(key, name))
        self._weigh_parent()

    def _weigh_parent(self) -> None:
        """Give the parent the CPU weight of its groups together. A container's processes outside
        the agent's parent each compete at their own weight (one scheduling entity per session, a
        YARN container's own, under autogroup); moved in, they would all share the parent's one
        default weight, and a node's containers together would get a fraction of the CPU they
        had (measured: tasks 1.5-1.7x slower against a busy driver). With the parent weighing as
        many entities as it holds groups, a container at full share weighs what it did."""
        count = len(self.groups())
        for key, mount in self.hierarchies.items():
            weight = self._weight_file(key)
            if weight is not None and (mount / self.parent).is_dir():
                _write(mount / self.parent / weight[0], str(min(weight[1] * max(1, count), weight[2])))

    def _weight_file(self, key: str) -> tuple[str, int, int] | None:
        """In hierarchy ``key``: the CPU weight file, one entity's default weight and the maximum."""
        raise NotImplementedError

    @staticmethod
    def _mkdir(path: Path) -> None:
        try:
            path.mkdir(exist_ok=True)
        except OSError as exc:
            raise CgroupError(f"cannot create cgroup {path}: {exc.strerror}") from exc

    def attach(self, name: str, pids: Iterable[int]) -> None:
        for key in self.hierarchies:
            self._move(self._dir(key, name), pids)

    @staticmethod
    def _move(group: Path, pids: Iterable[int]) -> None:
        for pid in pids:
            try:
                (group / "cgroup.procs").write_text(str(pid))
            except OSError as exc:
                if exc.errno != errno.ESRCH:  # a process that exited meanwhile needs no moving
                    raise CgroupError(f"cannot move pid {pid} into {group}: {exc.strerror}") from exc

    def pids(self, name: str) -> set[int]:
        return self._procs(self._dir(next(iter(self.hierarchies)), name))

    @staticmethod
    def _procs(group: Path) -> set[int]:
        try:
            return {int(line) for line in (group / "cgroup.procs").read_text().split()}
        except FileNotFoundError:
            return set()

    def origin(self, pid: int) -> Origin:
        try:
            lines = (self.proc_root / str(pid) / "cgroup").read_text().splitlines()
        except OSError:
            return {}
        found: Origin = {}
        for line in lines:
            _, controllers, path = line.split(":", 2)
            for key in self.hierarchies:
                if self._line_matches(key, controllers):
                    found[key] = path
        return found

    @staticmethod
    def _line_matches(key: str, controllers: str) -> bool:
        raise NotImplementedError

    def release(self, name: str, origin: Origin) -> None:
        """Lift every limit, hand the processes back to where they came from, remove the group.

        Idempotent, and works on half-created groups (a crash between two mkdirs).
        """
        for key in self.hierarchies:
            group = self._dir(key, name)
            if group.is_dir():
                self._lift(key, group)
                self._evacuate(group, self._origin_dir(key, origin.get(key, "/")))
        self._weigh_parent()

    def _lift(self, key: str, group: Path) -> None:
        raise NotImplementedError

    def _origin_dir(self, key: str, path: str) -> Path:
        mount = self.hierarchies[key].resolve()
        target = (mount / path.lstrip("/")).resolve()
        own = (mount / self.parent).resolve()
        if not target.is_relative_to(mount) or target.is_relative_to(own) or not target.is_dir():
            return mount  # a vanished or implausible origin: the hierarchy's root is always valid
        return target

    def _evacuate(self, group: Path, target: Path, attempts: int = 8, pause_s: float = 0.01) -> None:
        """Move the group's processes to ``target`` and remove it. A child forked during the move
        lands in the group, and an exiting process stays in it until it is reaped (a container
        YARN is tearing down): so move again after a pause that doubles, 10 ms to 1.3 s in all."""
        for attempt in range(attempts):
            self._move(target, self._procs(group))
            try:
                group.rmdir()
                return
            except OSError as exc:
                if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                    raise CgroupError(f"cannot remove cgroup {group}: {exc.strerror}") from exc
            if attempt + 1 < attempts:
                time.sleep(pause_s * 2**attempt)
        raise CgroupError(f"cgroup {group} still busy after {attempts} attempts")

    def groups(self) -> list[str]:
        """Names of the groups under the parent in any hierarchy (a half-released one included)."""
        names: set[str] = set()
        for mount in self.hierarchies.values():
            parent_dir = mount / self.parent
            if parent_dir.is_dir():
                names.update(entry.name for entry in os.scandir(parent_dir) if entry.is_dir())
        return sorted(names)

    def close(self) -> None:
        """Remove the (now empty) parent groups so a stopped agent leaves nothing behind."""
        for mount in self.hierarchies.values():
            try:
                (mount / self.parent).rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise CgroupError(f"cannot remove {mount / self.parent}: {exc.strerror}") from exc

    def set_share(self, name: str, cpus: float | None) -> None:
        raise NotImplementedError

    def set_frozen(self, name: str, frozen: bool) -> None:
        raise NotImplementedError

    def usage_ns(self, name: str) -> int:
        raise NotImplementedError


class CgroupV1(_CgroupFs):
    """cgroup v1: quota in `cpu`, accounting in `cpuacct`, freezing in `freezer` (co-mounts deduplicated)."""

    version = 1

    def __init__(self, root: Path, parent: str, proc_root: Path = Path("/proc")) -> None:
        hierarchies: dict[str, Path] = {}
        self._key: dict[str, str] = {}  # controller -> hierarchy key holding it
        by_mount: dict[Path, str] = {}
        for controller in ("cpu", "cpuacct", "freezer"):
            mount = root / controller
            if not mount.is_dir():
                raise CgroupError(f"cgroup v1 controller {controller!r} is not mounted at {mount}")
            key = by_mount.setdefault(mount.resolve(), controller)  # "cpu,cpuacct" co-mounted: one group
            hierarchies.setdefault(key, mount)
            self._key[controller] = key
        super().__init__(hierarchies, parent, proc_root)

    def _group(self, controller: str, name: str) -> Path:
        return self._dir(self._key[controller], name)

    def _weight_file(self, key: str) -> tuple[str, int, int] | None:
        return ("cpu.shares", 1024, 262144) if self._key["cpu"] == key else None

    @staticmethod
    def _line_matches(key: str, controllers: str) -> bool:
        return key in controllers.split(",")

    @staticmethod
    def _cap(group: Path, cpus: float | None) -> None:
        _write(group / "cpu.cfs_period_us", str(PERIOD_US))
        _write(group / "cpu.cfs_quota_us", "-1" if cpus is None else str(quota_us(cpus)))

    @staticmethod
    def _freeze(group: Path, frozen: bool) -> None:
        _write(group / "freezer.state", "FROZEN" if frozen else "THAWED")

    def set_share(self, name: str, cpus: float | None) -> None:
        self._cap(self._group("cpu", name), cpus)

    def set_frozen(self, name: str, frozen: bool) -> None:
        self._freeze(self._group("freezer", name), frozen)

    def usage_ns(self, name: str) -> int:
        return int(_read(self._group("cpuacct", name) / "cpuacct.usage"))

    def _lift(self, key: str, group: Path) -> None:
        if self._key["cpu"] == key:
            self._cap(group, None)
        if self._key["freezer"] == key:
            self._freeze(group, False)


class CgroupV2(_CgroupFs):
    """cgroup v2: `cpu.max`, `cpu.stat` usage_usec and `cgroup.freeze` in one hierarchy."""

    version = 2

    def __init__(self, root: Path, parent: str, proc_root: Path = Path("/proc")) -> None:
        super().__init__({"unified": root}, parent, proc_root)
        self.root = root

    @staticmethod
    def _line_matches(key: str, controllers: str) -> bool:
        return controllers == ""

    def _weight_file(self, key: str) -> tuple[str, int, int] | None:
        return ("cpu.weight", 100, 10000)

    def _prepare_parent(self, parent_dir: Path) -> None:
        if "cpu" not in _read(self.root / "cgroup.subtree_control").split():
            raise CgroupError(f"the cpu controller is not enabled in {self.root}/cgroup.subtree_control; "
                              "enable it there (the agent does not write to cgroups it did not create)")
        _write(parent_dir / "cgroup.subtree_control", "+cpu")

    def set_share(self, name: str, cpus: float | None) -> None:
        quota = "max" if cpus is None else str(quota_us(cpus))
        _write(self._dir("unified", name) / "cpu.max", f"{quota} {PERIOD_US}")

    def set_frozen(self, name: str, frozen: bool) -> None:
        _write(self._dir("unified", name) / "cgroup.freeze", "1" if frozen else "0")

    def _lift(self, key: str, group: Path) -> None:
        self.set_frozen(group.name, False)
        self.set_share(group.name, None)

    def usage_ns(self, name: str) -> int:
        for line in _read(self._dir("unified", name) / "cpu.stat").splitlines():
            field, _, value = line.partition(" ")
            if field == "usage_usec":
                return int(value) * 1000
        raise CgroupError(f"no usage_usec in {self._dir('unified', name) / 'cpu.stat'}")


def detect(root: Path, parent: str, proc_root: Path = Path("/proc")) -> CpuController:
    """The controller for this host: v2 if `root` is a unified hierarchy, v1 if it holds a `cpu` mount."""
    if (root / "cgroup.controllers").is_file():
        return CgroupV2(root, parent, proc_root)
    if (root / "cpu" / "cpu.cfs_quota_us").is_file():
        return CgroupV1(root, parent, proc_root)
    raise CgroupError(f"no usable cgroup CPU controller under {root}: neither cgroup.controllers (v2) "
                      "nor cpu/cpu.cfs_quota_us (v1)")
