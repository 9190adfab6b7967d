"""The agent's on-disk memory of what it touched, so a restart after a crash can undo it.

Written atomically (temp file in the same directory, then rename), so an agent crash leaves either the
old or the new state, never a torn file. Deliberately not fsync'ed: the cgroups this state describes live
in kernel memory and vanish with the kernel, so the file only has to survive the agent process, and the
page cache does that; an fsync would add ~10 ms to every command.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bridge.agent.cgroups import Origin

log = logging.getLogger(__name__)
VERSION = 1


@dataclass
class Managed:
    """One container the agent has a group for: where its processes came from, and its current limits."""

    origin: Origin = field(default_factory=dict)
    share: float | None = None  # cores; None means full size (no quota)
    frozen: bool = False

    @property
    def throttled(self) -> bool:
        return self.share is not None or self.frozen


class StateFile:
    """JSON file mapping container id -> Managed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Managed]:
        """The saved state; a missing file is empty, an unreadable one is logged and treated as empty
        (restore then falls back to the hierarchy root as every group's origin)."""
        try:
            raw = json.loads(self.path.read_text())
            if raw.get("version") != VERSION:
                raise ValueError(f"unsupported state version {raw.get('version')!r}")
            return {cid: Managed(origin=dict(entry["origin"]), share=entry["share"], frozen=bool(entry["frozen"]))
                    for cid, entry in raw["containers"].items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("ignoring unreadable agent state %s: %s", self.path, exc)
            return {}

    def save(self, managed: dict[str, Managed]) -> None:
        payload = {"version": VERSION, "containers": {cid: asdict(m) for cid, m in sorted(managed.items())}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(payload, handle, indent=1)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
