"""Per-task records from Spark event logs: launch and finish times, host, executor, CPU time.

Both replay modes write event logs to the results directory (one file per application), and the
job group set by `bridge.replay.jobs.run_job` ties each Spark job, hence each stage and task,
back to the replayed job. Logs of interrupted applications (`.inprogress`, possibly cut in the
middle of a line) are read as far as they go. `application_events` also reads what Spark 4 writes
by default elsewhere (`schedbridge report` and `trace import` on any application's log): a rolled
log, a folder `eventlog_v2_<app>` of `events_<n>_<app>` files, each zstd-compressed (Spark's
default codec, read through pyarrow's zstd, a core dependency); logs in Spark's other codecs
(lz4, lzf, snappy: each its own Java framing) are refused, naming the codec. `log_lines` gives
every line with its file and number, so a reader can say which lines it skipped; `spark_history`
gives an application's jobs (with the properties that name them) and task ends as typed records.

A log is a file anyone can hand over, so reading is bounded: only regular files are read (a part
linked to /dev/zero is refused), a line longer than `MAX_LINE_BYTES` or a file that decompresses
past `MAX_LOG_BYTES` is an EventLogError naming file and line (a 16 KB zstd bomb is one long
line), a line nested too deeply for JSON is a malformed line, and times are bounded by
`bridge.common.magnitudes`. Readers of fields catch `FIELD_ERRORS` and say `event_problem`.
"""
from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from bridge.common.magnitudes import time_ms

_GROUP_PREFIX = "schedbridge-job-"
ROLLED_PREFIX = "eventlog_v2_"  # Spark's folder of a rolled event log
_PART = re.compile(r"events_(\d+)_.*")
CODECS = ("zstd", "lz4", "lzf", "snappy")  # spark.io.compression.codec short names: Spark's file suffixes
READABLE_CODECS = ("zstd",)  # Spark's default for event logs; the others are refused
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_LINE_BYTES = 64 << 20
"""The longest event-log line read: Spark's longest (an environment update, a stage's accumulables)
stay far below; a longer one is a decompression bomb or not an event log, and would be held whole."""
MAX_LOG_BYTES = 16 << 30
"""The most (decompressed) bytes read from one file of a log: past any application's history."""
FIELD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, OverflowError)
"""What reading a field of an event of the wrong shape raises: a missing key, a list for an object
("Properties": [1, 2]), text for an object ("Job Result": "oops"), a time out of bounds."""


class EventLogError(ValueError):
    """An event log this reader cannot read, with the file at fault and what to do."""


@dataclass(frozen=True)
class TaskRecord:
    job_id: int
    app_id: str
    stage_id: int
    stage_attempt: int
    task_id: int
    attempt: int
    executor_id: str
    host: str
    node: str
    container_id: str
    launch_epoch_s: float
    finish_epoch_s: float
    status: str
    run_time_s: float
    cpu_time_s: float


@dataclass(frozen=True)
class Line:
    """One line of an event log: its file (a rolled log's part), 1-based number, and the event, or
    None with the reason it is not one (not JSON, not an object, a compressed stream cut short)."""

    part: Path
    number: int
    event: dict | None
    problem: str = ""


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


def event_problem(line: Line, exc: Exception) -> str:
    """Which event of the line has a field of the wrong shape (``exc``, one of `FIELD_ERRORS`);
    the caller says where the line is."""
    detail = f"no {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
    return f"{str((line.event or {}).get('Event', 'an event'))[:80]} with {detail}"


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


def events(path: Path) -> Iterator[dict]:
    """The JSON events of one single-file event log, in log order; a line that is not an event
    (the tail of a log whose writer was killed) is left out."""
    return (line.event for line in _part_lines(path) if line.event is not None)


def application_events(path: Path) -> Iterator[dict]:
    """The events of one application's log (:func:`log_lines`), lines that are not events left out."""
    return (line.event for line in log_lines(path) if line.event is not None)


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


def sniff(path: Path) -> bool:
    """Whether the file starts as Spark's event logs do: its first event, plain or zstd-compressed."""
    head = _head(path)
    return head.startswith(_ZSTD_MAGIC) or head.startswith(b'{"Event":"SparkListenerLogStart"')


def _head(path: Path) -> bytes:
    with path.open("rb") as file:
        return file.read(64)


def replayed_job_id(properties: dict | None) -> int | None:
    """The replayed job a Spark job belongs to (by its job group), or None for any other Spark job."""
    group = (properties or {}).get("spark.jobGroup.id", "")
    suffix = group.removeprefix(_GROUP_PREFIX)
    return int(suffix) if group.startswith(_GROUP_PREFIX) and suffix.isdigit() else None


def _executor(event: dict) -> tuple[str, str]:
    """(YARN node id, container id) of an executor; empty outside YARN."""
    attributes = (event.get("Executor Info") or {}).get("Attributes") or {}
    node = f"{attributes['NM_HOST']}:{attributes['NM_PORT']}" if "NM_HOST" in attributes else ""
    return node, attributes.get("CONTAINER_ID", "")


def task_record(event: dict, job_id: int, app_id: str = "",
                executors: dict[str, tuple[str, str]] | None = None) -> TaskRecord:
    """A SparkListenerTaskEnd event as a record, under ``job_id`` (whichever job the caller ties
    the task's stage to)."""
    info, metrics = event["Task Info"], event.get("Task Metrics") or {}
    reason = (event.get("Task End Reason") or {}).get("Reason", "")
    executor_id = str(info.get("Executor ID", ""))
    node, container_id = (executors or {}).get(executor_id, ("", ""))
    return TaskRecord(
        job_id=job_id, app_id=app_id, stage_id=event["Stage ID"],
        stage_attempt=event.get("Stage Attempt ID", 0), task_id=info["Task ID"],
        attempt=info.get("Attempt", 0), executor_id=executor_id, host=info.get("Host", ""),
        node=node or info.get("Host", ""), container_id=container_id,
        launch_epoch_s=time_ms(info["Launch Time"], "Launch Time") / 1000.0,
        finish_epoch_s=time_ms(info["Finish Time"], "Finish Time") / 1000.0,
        status="succeeded" if reason == "Success" else (reason or "failed").lower(),
        run_time_s=time_ms(metrics.get("Executor Run Time", 0), "Executor Run Time") / 1000.0,
        cpu_time_s=metrics.get("Executor CPU Time", 0) / 1e9)


@dataclass(frozen=True)
class ApplicationStarted:
    app_id: str


@dataclass(frozen=True)
class JobStarted:
    """A SparkListenerJobStart: the job's stages and the local properties its application set on it
    (job group, tags, description, call site, its own)."""

    job_id: int
    submitted_epoch_s: float
    stage_ids: tuple[int, ...]
    properties: dict[str, str]
    first_stage_name: str  # the first of its stage infos (a stage is named after its call site)


@dataclass(frozen=True)
class JobEnded:
    job_id: int
    succeeded: bool


History = ApplicationStarted | JobStarted | JobEnded | TaskRecord


def spark_history(path: Path) -> Iterator[History]:
    """One application's start, jobs and task ends (:func:`log_lines`) as typed records, in log
    order; a task's ``job_id`` is the first Spark job that lists its stage (-1: none did). An event
    without a field it must hold raises EventLogError naming its line."""
    app_id = ""
    stage_job: dict[int, int] = {}  # stage -> the first job that lists it
    for line in log_lines(path):
        if line.event is None:
            continue
        try:
            record = _typed(line.event, app_id, stage_job)
        except FIELD_ERRORS as exc:
            raise EventLogError(f"{line.part} line {line.number}: {event_problem(line, exc)}") from None
        if isinstance(record, ApplicationStarted):
            app_id = record.app_id
        if record is not None:
            yield record


def _typed(event: dict, app_id: str, stage_job: dict[int, int]) -> History | None:
    """The record of one event this reader names, None for any other; ``stage_job`` learns each job's stages."""
    kind = event.get("Event")
    if kind == "SparkListenerApplicationStart":
        return ApplicationStarted(str(event.get("App ID", "")))
    if kind == "SparkListenerJobStart":
        job_id, stages = int(event["Job ID"]), tuple(int(s) for s in event.get("Stage IDs", ()))
        for stage in stages:
            stage_job.setdefault(stage, job_id)
        infos = event.get("Stage Infos") or [{}]
        return JobStarted(job_id, time_ms(event["Submission Time"], "Submission Time") / 1000.0, stages,
                          {str(k): str(v) for k, v in (event.get("Properties") or {}).items()},
                          str(infos[0].get("Stage Name", "")))
    if kind == "SparkListenerJobEnd":
        return JobEnded(int(event["Job ID"]), (event.get("Job Result") or {}).get("Result") == "JobSucceeded")
    if kind == "SparkListenerTaskEnd":
        return task_record(event, stage_job.get(int(event["Stage ID"]), -1), app_id)
    return None


def read_log(path: Path) -> list[TaskRecord]:
    """The finished tasks of one application's event log that belong to replayed jobs."""
    app_id, executors, tasks = "", {}, []
    stage_job: dict[int, int | None] = {}  # stage -> its replayed job (None: not replayed)
    for event in events(path):
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            app_id = event.get("App ID", "")
        elif kind == "SparkListenerExecutorAdded":
            executors[str(event.get("Executor ID"))] = _executor(event)
        elif kind == "SparkListenerJobStart":
            job_id = replayed_job_id(event.get("Properties"))
            for stage in event.get("Stage IDs", []):
                stage_job.setdefault(stage, job_id)
        elif kind == "SparkListenerTaskEnd" and (job := stage_job.get(event.get("Stage ID", -1))) is not None:
            tasks.append(task_record(event, job, app_id, executors))
    return tasks


@dataclass(frozen=True)
class SparkJob:
    """A Spark job of a replayed job, from its SparkListenerJobStart: when it was submitted and
    its stages with their parent stages and task counts (Spark's stage infos, skipped stages
    included)."""

    app_id: str
    replayed: int
    submitted_epoch_s: float
    stages: dict[int, tuple[int, ...]]
    tasks: dict[int, int] = field(default_factory=dict)


def spark_jobs(directory: Path) -> list[SparkJob]:
    """The Spark jobs of replayed jobs in every event log in ``directory``, by submission time."""
    found = []
    for app_id, event in _app_events(directory):
        if event.get("Event") != "SparkListenerJobStart":
            continue
        if (job := replayed_job_id(event.get("Properties"))) is not None:
            infos = event.get("Stage Infos", [])
            stages = {int(info["Stage ID"]): tuple(int(p) for p in info.get("Parent IDs", [])) for info in infos}
            tasks = {int(info["Stage ID"]): int(info.get("Number of Tasks", 0)) for info in infos}
            found.append(SparkJob(app_id, job, event.get("Submission Time", 0) / 1000.0, stages, tasks))
    return sorted(found, key=lambda j: j.submitted_epoch_s)


def stage_submissions(directory: Path) -> dict[tuple[str, int], float]:
    """When the driver submitted each stage (its first attempt), by (application id, stage id), in
    epoch seconds, from every event log in ``directory``."""
    found: dict[tuple[str, int], float] = {}
    for app_id, event in _app_events(directory):
        if event.get("Event") == "SparkListenerStageSubmitted" and "Submission Time" in (
                info := event.get("Stage Info", {})):
            found.setdefault((app_id, int(info["Stage ID"])), info["Submission Time"] / 1000.0)
    return found


def _app_events(directory: Path) -> Iterator[tuple[str, dict]]:
    """Every event of every log in ``directory``, with its application's id (from the log's
    SparkListenerApplicationStart; "" before it)."""
    for path in _logs(directory):
        app_id = ""
        for event in events(path):
            if event.get("Event") == "SparkListenerApplicationStart":
                app_id = event.get("App ID", "")
            yield app_id, event


def logging_conf(directory: Path) -> dict[str, str]:
    """Spark settings for plain-JSON, single-file event logs in `directory` (Spark 4 defaults to
    rolled, zstd-compressed logs: `read_logs` takes one plain file per application)."""
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": directory.resolve().as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}


def _logs(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*") if p.is_file() and not p.name.startswith("."))


def read_logs(directory: Path) -> list[TaskRecord]:
    """Tasks from every event log in `directory`, ordered by launch time."""
    tasks = [t for path in _logs(directory) for t in read_log(path)]
    return sorted(tasks, key=lambda t: (t.launch_epoch_s, t.app_id, t.task_id, t.attempt))
