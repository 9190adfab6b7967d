"""bridge.common.atomic: a file is replaced whole or left as it was, with the usual permissions."""
from __future__ import annotations

import os

import pytest

from bridge.common import atomic


def test_write_text_replaces_the_whole_file(tmp_path):
    target = tmp_path / "meta.json"
    target.write_text("old and longer than the new text")
    atomic.write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "jobs.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic.replacing(target) as temp:
        temp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.csv"]


def test_permissions_follow_the_umask_unless_private(tmp_path):
    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "shared", "x")
        atomic.write_text(tmp_path / "secret", "x", private=True)
    finally:
        os.umask(old)
    assert (tmp_path / "shared").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600
