"""Per-task records of replayed jobs from their applications' event logs: launch and finish times,
host, executor, YARN node and container, CPU time.

Both replay modes write event logs to the results directory (one file per application), and the
job group set by `bridge.replay.jobs.run_job` ties each Spark job, hence each stage and task,
back to the replayed job. The logs are read through `bridge.history` (an event of the wrong shape
is an EventLogError naming its file and line).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bridge.history.events import ApplicationStart, Event, ExecutorAdded, JobStart, StageSubmitted, TaskEnd
from bridge.history.logs import read_events

_GROUP_PREFIX = "schedbridge-job-"


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


def replayed_job_id(properties: dict | None) -> int | None:
    """The replayed job a Spark job belongs to (by its job group), or None for any other Spark job."""
    group = (properties or {}).get("spark.jobGroup.id", "")
    suffix = group.removeprefix(_GROUP_PREFIX)
    return int(suffix) if group.startswith(_GROUP_PREFIX) and suffix.isdigit() else None


def task_record(end: TaskEnd, job_id: int, app_id: str, executor: ExecutorAdded | None) -> TaskRecord:
    """A task's end as a record, under ``job_id`` (the replayed job of its stage), on ``executor``
    (its registration, when the log has it)."""
    host = end.host
    return TaskRecord(
        job_id=job_id, app_id=app_id, stage_id=end.stage_id, stage_attempt=end.stage_attempt, task_id=end.task_id,
        attempt=end.attempt, executor_id=end.executor_id or "", host=host,
        node=(executor.node if executor else "") or host, container_id=executor.container_id if executor else "",
        launch_epoch_s=end.launch_ms / 1000.0, finish_epoch_s=end.finish_ms / 1000.0, status=end.status,
        run_time_s=end.run_time_ms / 1000.0, cpu_time_s=end.cpu_time_s)


def read_log(path: Path) -> list[TaskRecord]:
    """The finished tasks of one application's event log that belong to replayed jobs."""
    app_id, executors, tasks = "", {}, []
    stage_job: dict[int, int | None] = {}  # stage -> its replayed job (None: not replayed)
    for event in read_events(path):
        if isinstance(event, ApplicationStart):
            app_id = event.app_id
        elif isinstance(event, ExecutorAdded):
            executors[event.executor_id] = event
        elif isinstance(event, JobStart):
            job_id = replayed_job_id(event.properties)
            for stage in event.stage_ids:
                stage_job.setdefault(stage, job_id)
        elif isinstance(event, TaskEnd) and (job := stage_job.get(event.stage_id)) is not None:
            tasks.append(task_record(event, job, app_id, executors.get(event.executor_id or "")))
    return tasks


@dataclass(frozen=True)
class SparkJob:
    """A Spark job of a replayed job, from its start event: when it was submitted and its stages
    with their parent stages and task counts (Spark's stage infos, skipped stages included)."""

    app_id: str
    replayed: int
    submitted_epoch_s: float
    stages: dict[int, tuple[int, ...]]
    tasks: dict[int, int] = field(default_factory=dict)


def spark_jobs(directory: Path) -> list[SparkJob]:
    """The Spark jobs of replayed jobs in every event log in ``directory``, by submission time."""
    found = []
    for app_id, event in _app_events(directory):
        if isinstance(event, JobStart) and (job := replayed_job_id(event.properties)) is not None:
            stages = {info.stage_id: info.parents for info in event.stages}
            tasks = {info.stage_id: info.tasks or 0 for info in event.stages}
            found.append(SparkJob(app_id, job, (event.submission_ms or 0) / 1000.0, stages, tasks))
    return sorted(found, key=lambda j: j.submitted_epoch_s)


def stage_submissions(directory: Path) -> dict[tuple[str, int], float]:
    """When the driver submitted each stage (its first attempt), by (application id, stage id), in
    epoch seconds, from every event log in ``directory``."""
    found: dict[tuple[str, int], float] = {}
    for app_id, event in _app_events(directory):
        if isinstance(event, StageSubmitted) and event.stage.submission_ms is not None:
            found.setdefault((app_id, event.stage.stage_id), event.stage.submission_ms / 1000.0)
    return found


def _app_events(directory: Path) -> Iterator[tuple[str, Event]]:
    """Every event of every log in ``directory``, with its application's id (from the log's start
    event; "" before it)."""
    for path in _logs(directory):
        app_id = ""
        for event in read_events(path):
            if isinstance(event, ApplicationStart):
                app_id = event.app_id
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
