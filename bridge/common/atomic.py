"""Files replaced whole: written to a temporary file beside the target, renamed over it on success
and removed on failure, so a reader (or the next run after a kill) finds the old file or the new
one, never half of one. The one way every command and daemon writes a result or a record."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: Path, *, private: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` to write (by name, so pandas or matplotlib can too); on a
    clean exit it becomes ``path``. Permissions follow the umask, like a plain ``open``, unless
    ``private`` (owner only: tokens, agents' state)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    temp = Path(name)
    try:
        yield temp
        if not private:
            os.chmod(temp, 0o666 & ~_umask())  # mkstemp creates 0600
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def write_text(path: Path, text: str, *, private: bool = False) -> None:
    """``path`` holds exactly ``text`` (UTF-8), or is untouched if writing fails."""
    with replacing(path, private=private) as temp:
        temp.write_text(text, encoding="utf-8")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
