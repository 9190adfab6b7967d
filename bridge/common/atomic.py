"""Files replaced whole: written to a temporary file beside the target, renamed over it on success
and removed on failure, so a reader (or the next run after a kill) finds the old file or the new
one, never half of one. The one way every command and daemon writes a result or a record."""
from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: Path, *, private: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` to write (by name, so pandas or matplotlib can too); on a
    clean exit it becomes ``path``. It is created with the umask's permissions, like a plain
    ``open``, or owner-only if ``private`` (tokens, agents' state); writers that open it by name
    keep them."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666))
    try:
        yield temp
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def write_text(path: Path, text: str, *, private: bool = False) -> None:
    """``path`` holds exactly ``text`` (UTF-8), or is untouched if writing fails."""
    with replacing(path, private=private) as temp:
        temp.write_text(text, encoding="utf-8")
