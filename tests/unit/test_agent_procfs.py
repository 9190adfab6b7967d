"""Process-tree discovery on a fake /proc: verified trees, and refusal of processes that only claim an id."""
from __future__ import annotations

from pathlib import Path, PurePosixPath

from bridge.agent.procfs import ProcTable, TreeFinder
from tests.unit.agent_fakes import CID, LOCAL, OTHER, add_proc, container_tree, work_dir


def scan(root: Path, wanted: set[str], local_dirs: tuple[Path, ...] = ()):
    finder = TreeFinder(tuple(PurePosixPath(d) for d in local_dirs))
    return finder.scan(ProcTable(root), wanted)


def test_tree_is_verified_root_and_all_descendants(tmp_path: Path) -> None:
    pids = container_tree(tmp_path)
    add_proc(tmp_path, 10, 1, comm="java")  # the NodeManager itself
    result = scan(tmp_path, {CID}, (LOCAL,))
    assert result.trees[CID] == frozenset(pids)
    assert CID not in result.refused


def test_stat_with_spaces_and_parens_in_comm_is_parsed(tmp_path: Path) -> None:
    add_proc(tmp_path, 100, 10, CID, work_dir(CID), comm="my (odd) name")
    assert scan(tmp_path, {CID}).trees[CID] == frozenset({100})


def test_claim_with_foreign_cwd_is_refused(tmp_path: Path) -> None:
    add_proc(tmp_path, 200, 1, CID, Path("/tmp"))  # sets CONTAINER_ID but runs elsewhere
    result = scan(tmp_path, {CID})
    assert result.trees[CID] == frozenset()
    assert result.refused[CID] == frozenset({200})


def test_work_dir_outside_the_nms_local_dirs_is_refused(tmp_path: Path) -> None:
    container_tree(tmp_path)
    result = scan(tmp_path, {CID}, (Path("/other-nm/local"),))
    assert result.trees[CID] == frozenset()
    assert result.refused[CID] == frozenset({100, 101})


def test_descendant_of_another_container_is_not_taken(tmp_path: Path) -> None:
    container_tree(tmp_path)
    add_proc(tmp_path, 150, 101, OTHER, work_dir(OTHER))
    result = scan(tmp_path, {CID, OTHER})
    assert 150 not in result.trees[CID]
    assert result.trees[OTHER] == frozenset({150})


def test_init_is_never_part_of_a_container(tmp_path: Path) -> None:
    add_proc(tmp_path, 1, 0, CID, work_dir(CID), comm="init")
    add_proc(tmp_path, 300, 1, None, work_dir(CID))
    assert scan(tmp_path, {CID}).trees.get(CID, frozenset()) == frozenset()


def test_vanished_or_unreadable_process_is_skipped(tmp_path: Path) -> None:
    container_tree(tmp_path)
    (tmp_path / "101" / "environ").unlink()  # exited between listdir and read
    assert scan(tmp_path, {CID}).trees[CID] == frozenset({100})
