"""Give the node agent a cgroup v2 subtree it may limit, inside a container's cgroup namespace.

On cgroup v2 a container starts in its own group, which the kernel lets enable controllers for
children only while it holds no processes itself ("no internal processes"). So before the
NodeManager and the agent start, every process of the container moves into a leaf group and
the `cpu` controller is enabled for the container's children, as docker-in-docker images do;
`docker exec` then joins the leaf of the container's first process (runc falls back to it). On
cgroup v1, and where `cpu` is already enabled, there is nothing to do.
"""
from __future__ import annotations

import errno
from pathlib import Path

LEAF = "init"


class DelegationError(Exception):
    """The cgroup tree is not writable: the container is not privileged."""


def delegate_cpu(root: Path = Path("/sys/fs/cgroup")) -> bool:
    """Move this group's processes to `root/init` and enable `cpu` for children; True if it did."""
    if not (root / "cgroup.controllers").is_file():
        return False  # cgroup v1: groups are created per controller, no delegation needed
    if "cpu" in (root / "cgroup.subtree_control").read_text().split():
        return False
    if "cpu" not in (root / "cgroup.controllers").read_text().split():
        raise DelegationError(f"the cpu controller is not available in {root}/cgroup.controllers")
    try:
        (root / LEAF).mkdir(exist_ok=True)
        for pid in (root / "cgroup.procs").read_text().split():
            _move(root / LEAF / "cgroup.procs", pid)
        (root / "cgroup.subtree_control").write_text("+cpu")
    except OSError as exc:
        raise DelegationError(f"cannot delegate the cpu controller under {root}: {exc.strerror} "
                              "(the nodemanager service must run privileged)") from exc
    return True


def _move(procs_file: Path, pid: str) -> None:
    """One write per pid, as cgroupfs wants; a process that exited meanwhile needs no moving."""
    try:
        procs_file.write_text(pid)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise
