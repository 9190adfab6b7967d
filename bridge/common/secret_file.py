"""The one rule for files that hold a shared token: others may neither read nor write them.

A token that every local user can read authenticates every local user; one that every user can write
lets anyone choose it. The agents-file reader and the node agent refuse such a file with this message
(the daemon's `protocol.auth.ensure_token_file` is stricter: it refuses group access too).
"""
from __future__ import annotations

import stat
from pathlib import Path


def check_private(path: Path, what: str = "token file") -> None:
    """ValueError naming ``path`` if every user may read or write it; OSError if it cannot be read."""
    if path.stat().st_mode & (stat.S_IROTH | stat.S_IWOTH):
        raise ValueError(f"{what} {path} is readable or writable by every user; chmod o-rw it")
