"""cgroup v1/v2 selection and the files each implementation writes, on a fake cgroup root."""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from bridge.agent.cgroups import CgroupV1, CgroupV2, detect, quota_us
from bridge.agent.errors import BadRequest, CgroupError
from bridge.testbed.cgroupdelegate import delegate_cpu
from tests.unit.agent_fakes import add_proc


def v1_root(tmp_path: Path, comount: bool = False) -> Path:
    root = tmp_path / "cg"
    if comount:  # the common "cpu,cpuacct" layout with cpu and cpuacct as symlinks
        (root / "cpu,cpuacct").mkdir(parents=True)
        os.symlink("cpu,cpuacct", root / "cpu")
        os.symlink("cpu,cpuacct", root / "cpuacct")
    for name in ("cpu", "cpuacct", "freezer"):
        (root / name).mkdir(parents=True, exist_ok=True)
    (root / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    return root


def v2_root(tmp_path: Path, subtree: str = "cpu memory") -> Path:
    root = tmp_path / "cg2"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory io\n")
    (root / "cgroup.subtree_control").write_text(subtree + "\n")
    return root


def test_detect_picks_v1_v2_or_explains(tmp_path: Path) -> None:
    assert isinstance(detect(v1_root(tmp_path), "sb"), CgroupV1)
    assert isinstance(detect(v2_root(tmp_path), "sb"), CgroupV2)
    with pytest.raises(CgroupError, match="no usable cgroup CPU controller"):
        detect(tmp_path / "empty", "sb")


def test_v1_writes_quota_freezer_and_pids_in_its_own_groups(tmp_path: Path) -> None:
    root = v1_root(tmp_path)
    cg = CgroupV1(root, "sb")
    cg.create("c1")
    cg.attach("c1", [42])
    cg.set_share("c1", 0.1)
    cg.set_frozen("c1", True)
    (root / "cpuacct" / "sb" / "c1" / "cpuacct.usage").write_text("123456\n")
    assert (root / "cpu" / "sb" / "c1" / "cpu.cfs_quota_us").read_text() == "10000"
    assert (root / "cpu" / "sb" / "c1" / "cpu.cfs_period_us").read_text() == "100000"
    assert (root / "freezer" / "sb" / "c1" / "freezer.state").read_text() == "FROZEN"
    assert (root / "freezer" / "sb" / "c1" / "cgroup.procs").read_text() == "42"
    assert cg.usage_ns("c1") == 123456
    assert cg.groups() == ["c1"]
    cg.set_share("c1", None)
    assert (root / "cpu" / "sb" / "c1" / "cpu.cfs_quota_us").read_text() == "-1"


def test_v1_comounted_cpu_cpuacct_is_one_hierarchy(tmp_path: Path) -> None:
    root = v1_root(tmp_path, comount=True)
    cg = CgroupV1(root, "sb")
    assert sorted(cg.hierarchies) == ["cpu", "freezer"]
    cg.create("c1")
    (root / "cpu,cpuacct" / "sb" / "c1" / "cpuacct.usage").write_text("7\n")
    assert cg.usage_ns("c1") == 7


def test_v2_writes_cpu_max_and_enables_cpu_for_children(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    cg = CgroupV2(root, "sb")
    cg.create("c1")
    cg.set_share("c1", 0.25)
    (root / "sb" / "c1" / "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\n")
    assert (root / "sb" / "cgroup.subtree_control").read_text() == "+cpu"
    assert (root / "sb" / "c1" / "cpu.max").read_text() == "25000 100000"
    assert cg.usage_ns("c1") == 1_500_000
    cg.set_share("c1", None)
    assert (root / "sb" / "c1" / "cpu.max").read_text() == "max 100000"


def test_v2_refuses_to_enable_cpu_at_a_root_it_did_not_create(tmp_path: Path) -> None:
    cg = CgroupV2(v2_root(tmp_path, subtree="memory"), "sb")
    with pytest.raises(CgroupError, match="cpu controller is not enabled"):
        cg.create("c1")


def test_origin_is_read_per_hierarchy(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    add_proc(proc, 42, 1)
    assert CgroupV1(v1_root(tmp_path), "sb", proc).origin(42) == {"cpu": "/nm", "cpuacct": "/", "freezer": "/"}
    assert CgroupV2(v2_root(tmp_path), "sb", proc).origin(42) == {"unified": "/"}


def test_origin_inside_own_parent_or_outside_the_mount_falls_back_to_root(tmp_path: Path) -> None:
    root = v1_root(tmp_path)
    cg = CgroupV1(root, "sb")
    (root / "cpu" / "nm").mkdir()
    (root / "cpu" / "sb" / "x").mkdir(parents=True)
    assert cg._origin_dir("cpu", "/nm") == (root / "cpu" / "nm").resolve()
    assert cg._origin_dir("cpu", "/sb/x") == (root / "cpu").resolve()
    assert cg._origin_dir("cpu", "/../../etc") == (root / "cpu").resolve()
    assert cg._origin_dir("cpu", "/gone") == (root / "cpu").resolve()


def test_names_cannot_escape_the_parent(tmp_path: Path) -> None:
    with pytest.raises(BadRequest):
        CgroupV1(v1_root(tmp_path), "../etc")
    with pytest.raises(BadRequest):
        CgroupV1(v1_root(tmp_path), "sb").create("..")


def test_groups_include_half_released_ones(tmp_path: Path) -> None:
    root = v1_root(tmp_path)
    (root / "freezer" / "sb" / "left-behind").mkdir(parents=True)
    assert CgroupV1(root, "sb").groups() == ["left-behind"]


def test_quota_has_the_kernel_floor() -> None:
    assert quota_us(0.1) == 10_000
    assert quota_us(0.001) == 1_000


# --- cgroup v2, the whole life of a group on a fake unified tree ---------------------------------
@pytest.fixture()
def cgroupfs_rmdir(monkeypatch: pytest.MonkeyPatch) -> None:
    """cgroupfs' rmdir on a plain directory tree: a group's interface files go with it, a group with
    child groups stays (a plain file cannot show a process leaving, so processes are not checked)."""
    def rmdir(self: Path) -> None:
        if any(entry.is_dir() for entry in self.iterdir()):
            raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), str(self))
        shutil.rmtree(self)

    monkeypatch.setattr(Path, "rmdir", rmdir)


def test_release_waits_for_a_group_that_is_busy_for_a_moment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            cgroupfs_rmdir: None) -> None:
    """An exiting process keeps its group busy until it is reaped: release retries after a pause
    that doubles, and gives up with a clear error when the group stays busy."""
    root = v2_root(tmp_path)
    cg = CgroupV2(root, "sb")
    pauses: list[float] = []
    monkeypatch.setattr("bridge.agent.cgroups.time.sleep", pauses.append)
    real_rmdir, busy = Path.rmdir, [2]

    def rmdir(self: Path) -> None:
        if self.name in ("c1", "c2") and (busy[0] > 0 or self.name == "c2"):
            busy[0] -= 1
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(self))
        real_rmdir(self)

    monkeypatch.setattr(Path, "rmdir", rmdir)
    cg.create("c1")
    cg.release("c1", {})
    assert not (root / "sb" / "c1").exists() and pauses == [0.01, 0.02]
    pauses.clear()
    cg.create("c2")
    with pytest.raises(CgroupError, match="still busy after 8 attempts"):
        cg.release("c2", {})
    assert pauses == [0.01 * 2**i for i in range(7)]


def test_v2_attach_freeze_and_pids_use_the_one_unified_group(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    cg = CgroupV2(root, "sb")
    cg.create("c1")
    cg.attach("c1", [42])
    assert cg.pids("c1") == {42}
    cg.set_frozen("c1", True)
    assert (root / "sb" / "c1" / "cgroup.freeze").read_text() == "1"
    cg.set_frozen("c1", False)
    assert (root / "sb" / "c1" / "cgroup.freeze").read_text() == "0"
    assert cg.groups() == ["c1"]
    assert list(cg.hierarchies) == ["unified"]  # no per-controller hierarchies as in v1


def test_v2_release_lifts_limits_hands_processes_back_and_removes_the_group(
        tmp_path: Path, cgroupfs_rmdir: None) -> None:
    root = v2_root(tmp_path)
    (root / "docker" / "nm").mkdir(parents=True)  # where the container's processes came from
    proc = tmp_path / "proc"
    add_proc(proc, 42, 1)
    (proc / "42" / "cgroup").write_text("0::/docker/nm\n")
    cg = CgroupV2(root, "sb", proc)
    origin = cg.origin(42)
    assert origin == {"unified": "/docker/nm"}
    cg.create("c1")
    cg.attach("c1", [42])
    cg.set_share("c1", 0.1)
    cg.set_frozen("c1", True)
    lifted: list[tuple[str, str]] = []
    real_write = Path.write_text

    def record(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self.parent.name == "c1":
            lifted.append((self.name, data))
        return real_write(self, data, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "write_text", record)
        cg.release("c1", origin)
    # thawed and uncapped before the processes leave, so none stays frozen or throttled
    assert lifted[:2] == [("cgroup.freeze", "0"), ("cpu.max", "max 100000")]
    assert (root / "docker" / "nm" / "cgroup.procs").read_text() == "42"
    assert not (root / "sb" / "c1").exists() and cg.groups() == []
    cg.close()
    assert not (root / "sb").exists()


def test_v2_release_of_a_process_from_inside_the_agents_parent_goes_to_the_root(
        tmp_path: Path, cgroupfs_rmdir: None) -> None:
    root = v2_root(tmp_path)
    cg = CgroupV2(root, "sb")
    cg.create("c1")
    cg.attach("c1", [42])
    cg.release("c1", {"unified": "/sb/c1"})  # never back into a group of its own
    assert (root / "cgroup.procs").read_text() == "42"


def test_v2_after_the_containers_delegation_the_agent_can_create_groups(tmp_path: Path) -> None:
    """The compose NodeManager's order: delegate `cpu` at the container's cgroup root, then the agent."""
    root = tmp_path / "cg"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("\n")
    (root / "cgroup.procs").write_text("1\n")
    with pytest.raises(CgroupError, match="cpu controller is not enabled"):
        detect(root, "sb").create("c1")  # before: the agent refuses, naming the file
    shutil.rmtree(root / "sb")
    assert delegate_cpu(root) is True
    (root / "cgroup.subtree_control").write_text("cpu\n")  # what the kernel shows after "+cpu"
    cg = detect(root, "sb")
    cg.create("c1")
    assert isinstance(cg, CgroupV2) and (root / "sb" / "cgroup.subtree_control").read_text() == "+cpu"


def test_v2_usage_without_usage_usec_is_a_clear_error(tmp_path: Path) -> None:
    root = v2_root(tmp_path)
    cg = CgroupV2(root, "sb")
    cg.create("c1")
    (root / "sb" / "c1" / "cpu.stat").write_text("user_usec 10\n")
    with pytest.raises(CgroupError, match="no usage_usec"):
        cg.usage_ns("c1")


def test_the_parent_weighs_as_many_entities_as_it_holds_groups(tmp_path: Path, cgroupfs_rmdir: None) -> None:
    """Moved into the agent's parent, a node's containers must not share one default weight."""
    root = v1_root(tmp_path)
    cg = CgroupV1(root, "sb")
    for name in ("c1", "c2", "c3"):
        cg.create(name)
    assert (root / "cpu" / "sb" / "cpu.shares").read_text() == str(3 * 1024)
    cg.release("c2", {})
    assert (root / "cpu" / "sb" / "cpu.shares").read_text() == str(2 * 1024)
    assert not (root / "freezer" / "sb" / "cpu.shares").exists()    # the cpu hierarchy only
    v2 = CgroupV2(v2_root(tmp_path), "sb")
    for k in range(120):
        v2.create(f"c{k}")
    assert (tmp_path / "cg2" / "sb" / "cpu.weight").read_text() == "10000"   # its maximum
