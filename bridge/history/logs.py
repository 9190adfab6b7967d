"""The files of an application's event log, line by line: plain, zstd-compressed or rolled.

Spark 4 writes by default a rolled log, a folder `eventlog_v2_<app>` of `events_<n>_<app>` files,
each zstd-compressed (Spark's default codec, read through pyarrow's zstd, a core dependency); logs
in Spark's other codecs (lz4, lzf, snappy: each its own Java framing) are refused, naming the
codec. Logs of interrupted applications (`.inprogress`, possibly cut in the middle of a line) are
read as far as they go. `log_lines` gives every line with its file and number, so a reader can
say which lines it skipped; `read_events` gives the typed events (`bridge.history.events`).

A log is a file anyone can hand over, so reading is bounded: only regular files are read (a part
linked to /dev/zero is refused), a line longer than `MAX_LINE_BYTES` or a file that decompresses
past `MAX_LOG_BYTES` is an EventLogError naming file and line (a 16 KB zstd bomb is one long
line), and a line nested too deeply for JSON is a malformed line.
"""
from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bridge.history.events import FIELD_ERRORS, LOG_START, Event, event_problem, typed

ROLLED_PREFIX = "eventlog_v2_"  # Spark's folder of a rolled event log
_PART = re.compile(r"events_(\d+)_.*")
CODECS = ("zstd", "lz4", "lzf", "snappy")  # spark.io.compression.codec short names: Spark's file suffixes
READABLE_CODECS = ("zstd",)  # Spark's default for event logs; the others are refused
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_FIRST_LINE = b'{"Event":"' + LOG_START.encode() + b'"'  # how every log Spark writes starts
HEAD_BYTES = 64  # what `starts_as_log` needs of a file
MAX_LINE_BYTES = 64 << 20
"""The longest event-log line read: Spark's longest (an environment update, a stage's accumulables)
stay far below; a longer one is a decompression bomb or not an event log, and would be held whole."""
MAX_LOG_BYTES = 16 << 30
"""The most (decompressed) bytes read from one file of a log: past any application's history."""


class EventLogError(ValueError):
    """An event log this reader cannot read, with the file at fault and what to do."""


@dataclass(frozen=True)
class Line:
    """One line of an event log: its file (a rolled log's part), 1-based number, and the event, or
    None with the reason it is not one (not JSON, not an object, a compressed stream cut short)."""

    part: Path
    number: int
    event: dict | None
    problem: str = ""

    def where(self) -> str:
        return f"{self.part} line {self.number}"


def log_lines(path: Path) -> Iterator[Line]:
    """Every line of one application's log: a plain or zstd-compressed file, or a rolled folder read
    part by part (from its last compacted part on, as Spark's History Server does). A log in a
    codec this reader does not decode raises EventLogError before any line."""
    parts = rolled_parts(path) if path.is_dir() else [path]
    for part in parts:
        _require_regular(part)
        _refuse_compressed(part)
    for part in parts:
        yield from _part_lines(part)


def read_events(path: Path) -> Iterator[Event]:
    """One application's typed events, in log order. A line that is not an event (the tail of a log
    whose writer was killed) is left out; an event of the wrong shape raises EventLogError naming
    its file and line."""
    for line in log_lines(path):
        if line.event is None:
            continue
        try:
            event = typed(line.event)
        except FIELD_ERRORS as exc:
            raise EventLogError(f"{line.where()}: {event_problem(line.event, exc)}") from None
        yield event


def feed(path: Path, handle: Callable[[Event], object], error: Callable[[str], Exception] = EventLogError,
         says: str = "") -> None:
    """Hand one application's typed events to ``handle``, in log order, lines that are not events
    left out. An event of the wrong shape, for the reader or for ``handle`` (a field it needs:
    `need`), raises ``error`` naming its file and line, then ``says`` and the problem."""
    for line in log_lines(path):
        if line.event is None:
            continue
        try:
            handle(typed(line.event))
        except FIELD_ERRORS as exc:
            raise error(f"{line.where()}: {says}{event_problem(line.event, exc)}") from None


def _part_lines(part: Path) -> Iterator[Line]:
    """The lines of one file, each at most MAX_LINE_BYTES, MAX_LOG_BYTES in all."""
    _require_regular(part)
    number = read = 0
    with _open_binary(part) as stream:
        while True:
            try:
                raw = stream.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:  # pyarrow's, on a zstd stream cut mid-frame (its writer killed, or still running)
                yield Line(part, number + 1, None, f"the file cannot be read past here ({exc})")
                return
            if not raw:
                return
            number, read = number + 1, read + len(raw)
            if len(raw) > MAX_LINE_BYTES:
                raise EventLogError(f"{part} line {number}: longer than {MAX_LINE_BYTES} bytes (the most "
                                    "read as one event): not a Spark event log, or a decompression bomb")
            if read > MAX_LOG_BYTES:
                raise EventLogError(f"{part} line {number}: the file holds more than {MAX_LOG_BYTES} bytes "
                                    "(decompressed), the most read from one file of an event log")
            yield _parsed(part, number, raw.decode("utf-8", errors="replace"))


def _parsed(part: Path, number: int, raw: str) -> Line:
    try:
        event = json.loads(raw)
    except json.JSONDecodeError as exc:
        return Line(part, number, None, f"not JSON: {exc.msg} (column {exc.colno})")
    except ValueError as exc:  # an integer of more digits than Python converts
        return Line(part, number, None, f"not JSON: {exc}")
    except RecursionError:
        return Line(part, number, None, "not JSON: nested too deeply")
    if not isinstance(event, dict):
        return Line(part, number, None, f"not a JSON object but {type(event).__name__}")
    return Line(part, number, event)


def _require_regular(part: Path) -> None:
    """Refuse anything but a regular file (a link to /dev/zero would be read forever, a pipe block)."""
    try:
        mode = os.stat(part).st_mode
    except OSError as exc:
        raise EventLogError(f"{part}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise EventLogError(f"{part}: not a regular file (a device, a pipe or a folder): not an event log")


def _open_binary(part: Path) -> BinaryIO:
    """The file's bytes, decompressed on the fly when Spark compressed it with zstd."""
    if _codec(part) != "zstd":
        return part.open("rb")
    import pyarrow as pa  # lazily: a second or so of imports the plain logs do not need

    stream = pa.CompressedInputStream(pa.OSFile(str(part)), "zstd")
    return io.BufferedReader(stream, buffer_size=1 << 20)


def rolled_parts(folder: Path) -> list[Path]:
    """The `events_<n>_<app>` files of a rolled log in order, from the last `.compact` one."""
    parts = sorted((int(m.group(1)), p) for p in folder.iterdir() if (m := _PART.fullmatch(p.name)))
    if not parts:
        raise EventLogError(f"{folder}: no events_<n>_<app> file in it (is this a rolled Spark event log?)")
    compacted = [i for i, (_, p) in enumerate(parts) if p.name.endswith(".compact")]
    return [p for _, p in parts[compacted[-1] if compacted else 0:]]


def _codec(path: Path) -> str | None:
    """The codec Spark compressed a log file with: by its suffix, or zstd's magic bytes (a renamed file)."""
    codec = next((c for c in CODECS if f".{c}" in path.suffixes), None)
    return "zstd" if codec is None and _head(path).startswith(_ZSTD_MAGIC) else codec


def _refuse_compressed(path: Path) -> None:
    codec = _codec(path)
    if codec is not None and codec not in READABLE_CODECS:
        raise EventLogError(
            f"{path}: a {codec}-compressed Spark event log, which schedbridge does not read (Spark "
            f"frames {codec} its own way): run the application with spark.eventLog.compress=false, "
            "or with spark.eventLog.compression.codec=zstd (Spark's default), which it reads")


def is_event_log(path: Path) -> bool:
    """Spark's names for one (a rolled folder, a compressed file) or a first line Spark writes."""
    if path.is_dir():
        return path.name.startswith(ROLLED_PREFIX)
    return path.is_file() and (named_as_log(path.name) or starts_as_log(_head(path)))


def named_as_log(name: str) -> bool:
    """Whether a file's name is one Spark gives a compressed log (its codec's suffix)."""
    return any(f".{c}" in Path(name).suffixes for c in CODECS)


def starts_as_log(head: bytes) -> bool:
    """Whether a file's first `HEAD_BYTES` are as Spark's event logs start: their first event,
    plain or zstd-compressed."""
    return head.startswith(_ZSTD_MAGIC) or head.startswith(_FIRST_LINE)


def _head(path: Path) -> bytes:
    with path.open("rb") as file:
        return file.read(HEAD_BYTES)
