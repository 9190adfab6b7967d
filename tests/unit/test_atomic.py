"""bridge.common.atomic: a file is replaced whole or left as it was, with the usual permissions;
nothing planted beside it is followed, and a FIFO or device is written in place, never replaced."""
from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bridge.cli import main
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


_KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from bridge.common import atomic
with atomic.replacing(Path(sys.argv[1])) as temp:
    temp.write_text("half")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_writers_stale_temporary_is_removed_by_the_next_write_and_no_other(tmp_path):
    target = tmp_path / "jobs.csv"
    child = subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE, str(target)], cwd=Path.cwd(), check=False)
    assert child.returncode == -9
    (left,) = tmp_path.iterdir()
    dead = left.name.split(".")[3]
    old = os.stat(left).st_mtime - atomic.STALE_S - 1
    kept = {  # each misses one of: named by this module for this target, writer gone, untouched for long
        f".jobs.csv.{dead}.{'0' * 16}.tmp": old + atomic.STALE_S,      # fresh
        f".jobs.csv.{os.getpid()}.{'1' * 16}.tmp": old,                # its writer runs
        f".tasks.csv.{dead}.{'2' * 16}.tmp": old,                      # another target's
        ".jobs.csv.tmp": old, f"jobs.csv.{dead}.{'3' * 16}.tmp": old,  # not this module's naming
    }
    for name, mtime in kept.items():
        (tmp_path / name).write_text("someone's")
        os.utime(tmp_path / name, (mtime, mtime))
    os.utime(left, (old, old))
    atomic.write_text(target, "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*kept, "jobs.csv"])


def test_permissions_follow_the_umask_unless_private(tmp_path):
    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "shared", "x")
        atomic.write_text(tmp_path / "secret", "x", private=True)
    finally:
        os.umask(old)
    assert (tmp_path / "shared").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600


def _generate(out) -> Result:
    return CliRunner().invoke(main, ["trace", "generate", "yahoo", "--jobs", "5", "--out", str(out)])


def test_a_planted_partial_symlink_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out.partial").symlink_to(victim)
    result = _generate(tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "precious"
    assert (tmp_path / "out.partial").is_symlink()
    assert len((tmp_path / "out").read_text().splitlines()) == 1 + 5  # the cutoff's header, the jobs


def test_a_fifo_as_out_is_streamed_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    result = _generate(fifo)
    reader.join(timeout=10)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert len(received) == 1 and len(received[0].splitlines()) == 1 + 5
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_character_device_is_written_in_place():
    atomic.write_text(Path(os.devnull), "discarded")
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)


def test_a_socket_as_out_is_refused_naming_it(tmp_path):
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        result = _generate(sock_path)
    assert result.exit_code == 2
    assert f"{sock_path} is not a regular file" in result.output and "Traceback" not in result.output


def test_a_directory_or_a_stream_for_a_private_record_is_refused(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        atomic.write_text(tmp_path, "x")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="renamed into place"):
        atomic.write_text(fifo, "secret", private=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
