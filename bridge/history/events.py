"""Spark's listener events, as Spark's JsonProtocol writes them to an event log, read into typed
events: the one place that names them and their fields.

`typed` turns one JSON object of a log into an event of this module: the application's start and
end, the environment, executors, jobs, stages, tasks, the plugin's placement records, and `Other`
for any event no reader here uses. Times are milliseconds since the epoch, bounded by
`bridge.common.magnitudes`. A field is required when Spark always writes it and the readers rely
on it; one that some readers go without is None when absent, and a reader that needs it says so
with `need`, so that its absence reads as a missing field. An event of the wrong shape (a missing
field, a list for an object, a time out of bounds) raises one of `FIELD_ERRORS`, which the caller
places in its file and line with `event_problem`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from bridge.common.magnitudes import time_ms

FIELD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, OverflowError)
"""What reading a field of an event of the wrong shape raises: a missing key, a list for an object
("Properties": [1, 2]), text for an object ("Job Result": "oops"), a time out of bounds."""

LOG_START = "SparkListenerLogStart"  # the first event of every log Spark writes
SUCCESS = "Success"  # a task end's reason when the attempt succeeded

T = TypeVar("T")


def need(value: T | None, field: str) -> T:
    """``value``, or KeyError naming ``field`` when the event did not hold it."""
    if value is None:
        raise KeyError(field)
    return value


def event_problem(event: Mapping | None, exc: Exception) -> str:
    """Which event has a field of the wrong shape (``exc``, one of `FIELD_ERRORS`); the caller says
    where its line is."""
    detail = f"no {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
    return f"{str((event or {}).get('Event', 'an event'))[:80]} with {detail}"


def _optional_time(raw: Mapping, field: str) -> float | None:
    value = raw.get(field)
    return None if value is None else time_ms(value, field)


def _optional_int(raw: Mapping, field: str) -> int | None:
    value = raw.get(field)
    return None if value is None else int(value)


def _strings(raw: object) -> dict[str, str]:
    """A JSON object of settings as text (Spark writes them as text; None as no setting)."""
    return {str(k): str(v) for k, v in (raw or {}).items()}  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ApplicationStart:
    NAME: ClassVar[str] = "SparkListenerApplicationStart"
    app_id: str
    app_name: str
    timestamp_ms: float | None

    @classmethod
    def parse(cls, raw: Mapping) -> ApplicationStart:
        return cls(str(raw.get("App ID", "")), str(raw.get("App Name", "")), _optional_time(raw, "Timestamp"))


@dataclass(frozen=True)
class ApplicationEnd:
    NAME: ClassVar[str] = "SparkListenerApplicationEnd"
    timestamp_ms: float | None

    @classmethod
    def parse(cls, raw: Mapping) -> ApplicationEnd:
        return cls(_optional_time(raw, "Timestamp"))


@dataclass(frozen=True)
class EnvironmentUpdate:
    """The application's Spark settings (``spark_properties``), as its driver resolved them."""

    NAME: ClassVar[str] = "SparkListenerEnvironmentUpdate"
    spark_properties: dict[str, str]

    @classmethod
    def parse(cls, raw: Mapping) -> EnvironmentUpdate:
        props = raw.get("Spark Properties") or {}
        pairs = props.items() if isinstance(props, dict) else props  # an object, or [key, value] pairs
        return cls({str(k): str(v) for k, v in pairs})

    @property
    def task_cpus(self) -> int:
        """`spark.task.cpus`, the cores each task takes; ValueError for a value Spark would refuse."""
        value = self.spark_properties.get("spark.task.cpus", "1")
        try:
            cpus = int(value)
        except ValueError:
            raise ValueError(f"spark.task.cpus is not an integer: {value!r}") from None
        if cpus < 1:
            raise ValueError(f"spark.task.cpus must be at least 1, got {cpus}")
        return cpus


@dataclass(frozen=True)
class ExecutorAdded:
    """An executor registered: its cores, and on YARN its NodeManager (``node``, HOST:PORT) and
    container (both empty elsewhere)."""

    NAME: ClassVar[str] = "SparkListenerExecutorAdded"
    executor_id: str
    timestamp_ms: float | None
    cores: int | None
    host: str
    node: str
    container_id: str

    @classmethod
    def parse(cls, raw: Mapping) -> ExecutorAdded:
        info = raw.get("Executor Info") or {}
        attributes = info.get("Attributes") or {}
        node = f"{attributes['NM_HOST']}:{attributes['NM_PORT']}" if "NM_HOST" in attributes else ""
        return cls(str(raw["Executor ID"]), _optional_time(raw, "Timestamp"), _optional_int(info, "Total Cores"),
                   str(info.get("Host", "")), node, str(attributes.get("CONTAINER_ID", "")))


@dataclass(frozen=True)
class ExecutorRemoved:
    NAME: ClassVar[str] = "SparkListenerExecutorRemoved"
    executor_id: str
    timestamp_ms: float | None

    @classmethod
    def parse(cls, raw: Mapping) -> ExecutorRemoved:
        return cls(str(raw["Executor ID"]), _optional_time(raw, "Timestamp"))


@dataclass(frozen=True)
class StageInfo:
    """A stage as a job's start or a stage's submission or completion describes it (Spark's name
    for a stage is its call site)."""

    stage_id: int
    attempt: int
    name: str
    tasks: int | None
    parents: tuple[int, ...]
    submission_ms: float | None  # None until the stage is submitted
    completion_ms: float | None

    @classmethod
    def parse(cls, raw: Mapping) -> StageInfo:
        return cls(int(raw["Stage ID"]), int(raw.get("Stage Attempt ID", 0)), str(raw.get("Stage Name", "")),
                   _optional_int(raw, "Number of Tasks"), tuple(int(p) for p in raw.get("Parent IDs", [])),
                   _optional_time(raw, "Submission Time"), _optional_time(raw, "Completion Time"))


@dataclass(frozen=True)
class JobStart:
    """A Spark job submitted: its stages (ids, and infos with their parents) and the local properties
    its application set on it (job group, tags, description, call site, its own)."""

    NAME: ClassVar[str] = "SparkListenerJobStart"
    job_id: int
    submission_ms: float | None
    stage_ids: tuple[int, ...]
    stages: tuple[StageInfo, ...]
    properties: dict[str, str]

    @classmethod
    def parse(cls, raw: Mapping) -> JobStart:
        return cls(int(raw["Job ID"]), _optional_time(raw, "Submission Time"),
                   tuple(int(s) for s in raw.get("Stage IDs", ())),
                   tuple(StageInfo.parse(s) for s in raw.get("Stage Infos") or ()), _strings(raw.get("Properties")))


@dataclass(frozen=True)
class JobEnd:
    NAME: ClassVar[str] = "SparkListenerJobEnd"
    SUCCEEDED: ClassVar[str] = "JobSucceeded"
    job_id: int
    completion_ms: float | None
    result: str  # JobSucceeded, JobFailed, or "" when the log does not say

    @classmethod
    def parse(cls, raw: Mapping) -> JobEnd:
        return cls(int(raw["Job ID"]), _optional_time(raw, "Completion Time"),
                   str((raw.get("Job Result") or {}).get("Result", "")))

    @property
    def succeeded(self) -> bool:
        return self.result == self.SUCCEEDED


@dataclass(frozen=True)
class StageSubmitted:
    NAME: ClassVar[str] = "SparkListenerStageSubmitted"
    stage: StageInfo

    @classmethod
    def parse(cls, raw: Mapping) -> StageSubmitted:
        return cls(StageInfo.parse(raw["Stage Info"]))


@dataclass(frozen=True)
class StageCompleted:
    NAME: ClassVar[str] = "SparkListenerStageCompleted"
    stage: StageInfo

    @classmethod
    def parse(cls, raw: Mapping) -> StageCompleted:
        return cls(StageInfo.parse(raw["Stage Info"]))


@dataclass(frozen=True)
class TaskStart:
    NAME: ClassVar[str] = "SparkListenerTaskStart"
    stage_id: int
    stage_attempt: int
    task_id: int
    index: int | None  # the task's partition index in its stage
    launch_ms: float | None

    @classmethod
    def parse(cls, raw: Mapping) -> TaskStart:
        info = raw["Task Info"]
        return cls(int(raw["Stage ID"]), int(raw.get("Stage Attempt ID", 0)), int(info["Task ID"]),
                   _optional_int(info, "Index"), _optional_time(info, "Launch Time"))


@dataclass(frozen=True)
class TaskEnd:
    """A task attempt ended: where it ran, when, how (``reason``: Success, or why not) and what its
    executor measured of it."""

    NAME: ClassVar[str] = "SparkListenerTaskEnd"
    stage_id: int
    stage_attempt: int
    task_id: int
    attempt: int
    index: int | None
    partition: int | None
    executor_id: str | None
    host: str
    launch_ms: float
    finish_ms: float
    reason: str
    run_time_ms: float
    cpu_time_s: float

    @classmethod
    def parse(cls, raw: Mapping) -> TaskEnd:
        info, metrics = raw["Task Info"], raw.get("Task Metrics") or {}
        executor = info.get("Executor ID")
        return cls(stage_id=int(raw["Stage ID"]), stage_attempt=int(raw.get("Stage Attempt ID", 0)),
                   task_id=int(info["Task ID"]), attempt=int(info.get("Attempt", 0)),
                   index=_optional_int(info, "Index"), partition=_optional_int(info, "Partition ID"),
                   executor_id=None if executor is None else str(executor), host=str(info.get("Host", "")),
                   launch_ms=time_ms(info["Launch Time"], "Launch Time"),
                   finish_ms=time_ms(info["Finish Time"], "Finish Time"),
                   reason=str((raw.get("Task End Reason") or {}).get("Reason", "")),
                   run_time_ms=time_ms(metrics.get("Executor Run Time", 0), "Executor Run Time"),
                   cpu_time_s=metrics.get("Executor CPU Time", 0) / 1e9)

    @property
    def succeeded(self) -> bool:
        return self.reason == SUCCESS

    @property
    def status(self) -> str:
        """succeeded, or the reason it did not in lower case (failed when the log gives none)."""
        return "succeeded" if self.succeeded else (self.reason or "failed").lower()


@dataclass(frozen=True)
class Placement:
    """The plugin's record of one task it launched: the policy, and who placed the task (POLICY,
    FALLBACK: Spark after a failed round, UNMANAGED: a stage left to Spark)."""

    NAME: ClassVar[str] = "org.schedbridge.spark.PlacementEvent"
    policy: str
    by: str

    @classmethod
    def parse(cls, raw: Mapping) -> Placement:
        return cls(str(raw.get("policy", "")), str(raw.get("by", "")))


@dataclass(frozen=True)
class Other:
    """An event no reader here uses, with its own time field unread (`timestamp_ms` reads it)."""

    name: str
    timestamp: object

    def timestamp_ms(self) -> float | None:
        return None if self.timestamp is None else time_ms(self.timestamp, f"{self.name} time")


Event = (ApplicationStart | ApplicationEnd | EnvironmentUpdate | ExecutorAdded | ExecutorRemoved | JobStart | JobEnd
         | StageSubmitted | StageCompleted | TaskStart | TaskEnd | Placement | Other)

_PARSERS: dict[str, Callable[[Mapping], Event]] = {kind.NAME: kind.parse for kind in (
    ApplicationStart, ApplicationEnd, EnvironmentUpdate, ExecutorAdded, ExecutorRemoved, JobStart, JobEnd,
    StageSubmitted, StageCompleted, TaskStart, TaskEnd, Placement)}


def typed(raw: Mapping) -> Event:
    """One event of a log (a JSON object) as its typed event; FIELD_ERRORS for one of the wrong shape."""
    kind = raw.get("Event")
    parse = _PARSERS.get(kind) if isinstance(kind, str) else None
    return parse(raw) if parse is not None else Other(str(kind), raw.get("Timestamp"))
