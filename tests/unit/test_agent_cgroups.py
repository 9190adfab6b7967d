"""cgroup v1/v2 selection and the files each implementation writes, on a fake cgroup root."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.agent.cgroups import CgroupV1, CgroupV2, detect, quota_us
from bridge.agent.errors import BadRequest, CgroupError
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
