"""Files replaced whole: written to a temporary file beside the target, renamed over it on success
and removed on failure, so a reader (or the next run after a kill) finds the old file or the new
one, never half of one. The one way every command and daemon writes a result or a record.

The temporary file gets a fresh random name, created exclusively (``O_EXCL``), so nothing planted
beside the target (a symlink, a file of the same name) is followed or overwritten. Only a regular
file (or nothing) is replaced: a FIFO or a character device named as the target (``/dev/stdout``,
a pipe to another program) is written in place, streamed, as the user asked; a directory or any
other special file is refused, naming it (:func:`refusal`).

A writer killed outright (SIGKILL, power loss) cannot remove its temporary file; the next write of
the same target does, once it is stale (:func:`_stale`). The temporary's name carries its writer's
pid for that; nothing not named so, and nothing but a regular file, is ever removed."""
from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


STALE_S = 600.0  # untouched this long, with its writer gone, a temporary file is left over


def _temporary(path: Path) -> Path:
    """A fresh temporary name beside ``path``, with this process's pid (see :func:`_stale`)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(8).hex()}.tmp")


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (one of another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: it runs, as someone else
        return True
    return True


def _stale(entry: os.DirEntry[str], now: float) -> bool:
    """Whether ``entry``, named as :func:`_temporary` names, is a left-over: a regular file whose
    writer is not running and which was not written for ``STALE_S`` (the wait spares a writer on
    another host sharing the directory, whose pid means nothing here)."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    pid = int(entry.name.rsplit(".", 3)[1])
    return stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_S and not _running(pid)


def _remove_stale(path: Path) -> None:
    """Removes the stale temporary files earlier writers of ``path`` left (see :func:`_stale`)."""
    own = re.compile(rf"\.{re.escape(path.name)}\.[1-9][0-9]{{0,9}}\.[0-9a-f]{{16}}\.tmp")
    now = time.time()
    try:
        with os.scandir(path.parent) as entries:
            stale = [e for e in entries if own.fullmatch(e.name) and _stale(e, now)]
    except OSError:
        return
    for entry in stale:
        try:
            os.unlink(entry.path)
        except OSError:
            pass  # removed meanwhile, or not ours to remove: the write goes on


def _mode(path: Path) -> int | None:
    """The mode of what ``path`` names, through symlinks; None if nothing."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def streamed(path: Path) -> bool:
    """Whether ``path`` exists as a FIFO or a character device (through symlinks): a stream to
    write into, never a file to replace."""
    mode = _mode(path)
    return mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))


def refusal(path: Path, *, private: bool = False) -> str | None:
    """Why ``path`` must not be written as an output, or None: it is a directory or a special file
    other than a stream, or a stream where the file must be renamed into place (``private``: a
    record read back later, with owner-only permissions)."""
    mode = _mode(path)
    if mode is None or stat.S_ISREG(mode):  # nothing (or a dangling symlink, which is replaced)
        return None
    if stat.S_ISDIR(mode):
        return f"{path} is a directory"
    if streamed(path) and not private:
        return None
    return f"{path} is not a regular file" + (" (a record must be renamed into place)" if private else "")


@contextmanager
def replacing(path: Path, *, private: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` to write (by name, so pandas or matplotlib can too); on a
    clean exit it becomes ``path``. It is created with the umask's permissions, like a plain
    ``open``, or owner-only if ``private`` (tokens, agents' state); writers that open it by name
    keep them. A FIFO or character device ``path`` is yielded itself, to be written in place;
    a path :func:`refusal` refuses raises ``OSError`` naming it."""
    problem = refusal(path, private=private)
    if problem:
        raise OSError(errno.EISDIR if path.is_dir() else errno.EINVAL, problem, str(path))
    if streamed(path):
        yield path
        return
    _remove_stale(path)
    temp = _temporary(path)
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600 if private else 0o666))
    try:
        yield temp
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def write_text(path: Path, text: str, *, private: bool = False) -> None:
    """``path`` holds exactly ``text`` (UTF-8), or is untouched if writing fails."""
    with replacing(path, private=private) as temp:
        temp.write_text(text, encoding="utf-8")


def write_bytes(path: Path, data: bytes) -> None:
    """``path`` holds exactly ``data``, or is untouched if writing fails."""
    with replacing(path) as temp:
        temp.write_bytes(data)
