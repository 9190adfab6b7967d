"""Where applications' event logs are found, and each application read once.

A source is one application's log (a file Spark wrote, plain or compressed, or a rolled
`eventlog_v2_*` folder) or a folder searched for them at any depth: Spark's event log folder
(`spark.eventLog.dir`), a replay's `eventlogs/`, a comparison's output. One application can be
found twice (a log copied beside its original, a folder given with a log inside it): its id, from
its start event, tells, and `Applications` keeps the first log of each.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bridge.history.events import FIELD_ERRORS, ApplicationStart
from bridge.history.logs import EventLogError, is_event_log, log_lines


def event_logs(source: Path) -> list[Path]:
    """The applications' logs ``source`` is or holds (at any depth, hidden entries and symlinked
    folders left out); EventLogError when it holds none."""
    if is_event_log(source):
        return [source]
    if not source.is_dir():
        raise EventLogError(f"{source}: not a Spark event log (a file Spark wrote, or an eventlog_v2_* folder)")
    found = list(_walk(source))
    if not found:
        raise EventLogError(f"{source}: no Spark event log in it, at any depth")
    return found


def _walk(folder: Path) -> Iterator[Path]:
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if is_event_log(entry):
            yield entry
        elif entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)


def application_id(log: Path) -> str:
    """The id of the application whose log ``log`` is ("" when it has no start event, or an empty
    id). Other events are not read here: a malformed one is its reader's to report."""
    for line in log_lines(log):
        if line.event is not None and line.event.get("Event") == ApplicationStart.NAME:
            try:
                return ApplicationStart.parse(line.event).app_id
            except FIELD_ERRORS:  # its reader says which field, and where
                return ""
    return ""


@dataclass
class Applications:
    """The applications admitted so far, by id, and a note for each log skipped as one of them."""

    first_read: dict[str, Path] = field(default_factory=dict)  # application id -> its first log
    notes: list[str] = field(default_factory=list)

    def admit(self, log: Path) -> str | None:
        """``log``'s application id ("": none to tell it by), or None when that application was
        admitted already (and a note says so)."""
        app_id = application_id(log)
        return app_id if self.first(app_id, log) else None

    def first(self, app_id: str, log: Path) -> bool:
        """Whether ``log`` is the first log of application ``app_id`` ("": one without an id, always
        first); a note says which log it repeats when not."""
        if app_id in self.first_read:
            self.notes.append(f"skipped {log}: application {app_id}, already read from {self.first_read[app_id]}")
            return False
        if app_id:
            self.first_read[app_id] = log
        return True
