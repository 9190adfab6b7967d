"""Where applications' event logs are found, and each application read once.

A source is one application's log (a file Spark wrote, plain or compressed, or a rolled
`eventlog_v2_*` folder) or a folder searched for them at any depth: Spark's event log folder
(`spark.eventLog.dir`), a replay's `eventlogs/`, a comparison's output; or a `RemoteSource`, whose
logs live elsewhere (HDFS: `bridge.history.webhdfs`, a History Server:
`bridge.history.historyserver`) and are copied here one at a time, read by the same bounded readers.
One application can be found twice (a log copied beside its original, a folder given with a log
inside it): its id, from its start event, tells, and `Applications` keeps the first log of each.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bridge.history.events import FIELD_ERRORS, ApplicationStart
from bridge.history.logs import MAX_LOG_BYTES, EventLogError, is_event_log, log_lines

FETCH_SECONDS = 600.0
"""The longest one copy of a remote log (a file, an application's logs) may take, in all."""
MAX_FETCH_BYTES = MAX_LOG_BYTES
"""The most bytes copied of one remote file, or of one application's logs: the most the readers
read of one file (`bridge.history.logs`)."""


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


@dataclass(frozen=True)
class SourceLog:
    """One application's log to read: ``path`` on this host, ``name`` where it lives (the path
    itself, or the hdfs:// or History Server address of the copy at ``path``)."""

    path: Path
    name: str

    @classmethod
    def local(cls, path: Path) -> SourceLog:
        return cls(path, str(path))

    def shown(self, text: str) -> str:
        """``text`` (a reader's message about the copy) naming the log where it lives."""
        return text.replace(str(self.path), self.name)

    @contextmanager
    def named_errors(self) -> Iterator[None]:
        """An EventLogError raised inside names the log where it lives."""
        try:
            yield
        except EventLogError as exc:
            raise EventLogError(self.shown(str(exc))) from None


class RemoteSource(Protocol):
    """Logs that live elsewhere, each copied to this host for as long as it is read."""

    def logs(self, applications: Applications) -> Iterator[SourceLog]:
        """Each log's copy, removed when the next is asked for; an application ``applications``
        knows already (`Applications.known`) need not be copied at all."""


def source_logs(sources: Sequence[Path | RemoteSource], applications: Applications,
                files_as_logs: bool = False) -> Iterator[tuple[str, SourceLog]]:
    """The log of every application in ``sources`` with its id ("" when it has none), in order,
    each application once (``applications`` admits them and notes the others). A file given is
    read as a log whatever its name with ``files_as_logs``; otherwise it must look like one
    (`event_logs`)."""
    for source in sources:
        if isinstance(source, Path):
            found = [source] if files_as_logs and source.is_file() else event_logs(source)
            logs: Iterator[SourceLog] = (SourceLog.local(path) for path in found)
        else:
            logs = source.logs(applications)
        for log in logs:
            with log.named_errors():
                admitted = applications.admit(log.path, log.name)
            if admitted is not None:
                yield admitted, log


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

    first_read: dict[str, str] = field(default_factory=dict)  # application id -> its first log
    notes: list[str] = field(default_factory=list)

    def admit(self, log: Path, name: str | None = None) -> str | None:
        """``log``'s application id ("": none to tell it by), or None when that application was
        admitted already (and a note says so, naming the log ``name``, else ``log``)."""
        app_id = application_id(log)
        return app_id if self.first(app_id, name or str(log)) else None

    def first(self, app_id: str, log: str) -> bool:
        """Whether ``log`` is the first log of application ``app_id`` ("": one without an id, always
        first); a note says which log it repeats when not."""
        if self.known(app_id, log):
            return False
        if app_id:
            self.first_read[app_id] = log
        return True

    def known(self, app_id: str, log: str) -> bool:
        """Whether application ``app_id`` was admitted already; a note says ``log`` is skipped if so."""
        if app_id not in self.first_read:
            return False
        self.notes.append(f"skipped {log}: application {app_id}, already read from {self.first_read[app_id]}")
        return True
