"""What a workload file describes, as immutable values: inputs, job categories, submissions.

A workload file (`workloads.workload_file`) yields a `Workload`; `workloads.expand` turns it into
the seeded tuple of `Submission`s that a replay submits and a report reads back.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from workloads.demands import TaskDemands

# --- inputs: data sets that replay prepares (and uploads) before submitting anything --------


@dataclass(frozen=True)
class WordCountInput:
    """A file of random 100-character lines; `block_mb` fixes the number of map tasks."""

    name: str
    size_mb: float
    block_mb: int
    seed: int = 0


@dataclass(frozen=True)
class TpchInput:
    """A TPC-H data set (Parquet) at a scale factor."""

    name: str
    scale_factor: float


Input = WordCountInput | TpchInput

# --- job parameters: one frozen type per kind of job ----------------------------------------


@dataclass(frozen=True)
class WordCountJob:
    kind: ClassVar[str] = "wordcount"
    input: str
    reduces: int
    extra_flops: int = 0
    demands: TaskDemands | None = None   # declared per task (workloads.demands)


@dataclass(frozen=True)
class TpchJob:
    kind: ClassVar[str] = "tpch"
    input: str
    query: int
    demands: TaskDemands | None = None


@dataclass(frozen=True)
class TasksJob:
    """A trace job: one task per duration, each sleeping or spinning a CPU for that long."""

    kind: ClassVar[str] = "tasks"
    durations: tuple[float, ...]
    mode: str = "sleep"
    demands: tuple[tuple[float, ...], ...] | None = None   # per task, as a .jsonl trace gives them


JobParams = WordCountJob | TpchJob | TasksJob
TASK_MODES = ("sleep", "spin")

# --- the workload ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Category:
    """A kind of job drawn with `probability`; TPC-H categories draw a query from `queries`."""

    name: str
    kind: str
    probability: float
    input: str
    reduces: int = 0
    extra_flops: int = 0
    queries: tuple[int, ...] = ()
    duration_alone_s: float | None = None
    demands: TaskDemands | None = None


@dataclass(frozen=True)
class TraceSource:
    """Jobs replayed from a trace in the thesis format; `time_scale` multiplies all times."""

    path: Path
    time_scale: float = 1.0
    task_mode: str = "sleep"
    max_jobs: int | None = None


ARRIVALS = ("poisson", "fixed")


@dataclass(frozen=True)
class Mix:
    """`jobs` jobs drawn from `categories`, arriving Poisson (or at a fixed interval)."""

    jobs: int
    arrival: str
    mean_interarrival_s: float
    categories: tuple[Category, ...]


@dataclass(frozen=True)
class Workload:
    """A job mix or a trace (exactly one), plus the inputs the jobs read."""

    name: str
    path: Path
    seed: int
    inputs: tuple[Input, ...] = ()
    mix: Mix | None = None
    trace: TraceSource | None = None


@dataclass(frozen=True)
class Submission:
    """One job to submit `time_s` seconds after the replay starts."""

    job_id: int
    time_s: float
    category: str
    params: JobParams
    duration_alone_s: float | None = None

    @property
    def kind(self) -> str:
        return self.params.kind

    @property
    def recurring_name(self) -> str:
        """What recurs across runs of the workload: the category, and a TPC-H job's query (the
        name its estimate is kept under, ``bridge.drivers.estimates``)."""
        if isinstance(self.params, TpchJob):
            return f"{self.category}/q{self.params.query}"
        return self.category


def declared_demands(params: JobParams) -> TaskDemands | None:
    """What a job's tasks declare (``workloads.demands``); a trace job's tasks, which run live as
    one stage, as the most of each resource any of them asks for. ValueError for a trace's demands
    that are not (cores, GB)."""
    if not isinstance(params, TasksJob):
        return params.demands
    if params.demands is None:
        return None
    if any(len(d) != 2 for d in params.demands):
        raise ValueError(f"a trace job's demands must be (cores, GB) to run live, got {params.demands[:3]}")
    return TaskDemands.largest([(d[0], d[1]) for d in params.demands])


_PARAM_TYPES: dict[str, type] = {cls.kind: cls for cls in (WordCountJob, TpchJob, TasksJob)}


def params_to_json(params: JobParams) -> str:
    """A job's parameters as one JSON object with its `kind` (for result files and child jobs)."""
    return json.dumps({"kind": params.kind, **dataclasses.asdict(params)}, sort_keys=True)


def params_from_json(text: str) -> JobParams:
    """The inverse of `params_to_json`."""
    fields = json.loads(text)
    cls = _PARAM_TYPES[fields.pop("kind")]
    return cls(**{k: _frozen(v) for k, v in fields.items()})


def _frozen(value: Any) -> Any:
    """A JSON field back as its frozen type: lists as tuples, a demands object as TaskDemands."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return TaskDemands(**{k: _frozen(v) for k, v in value.items()})
    return value


def submission_to_json(submission: Submission) -> str:
    """A submission as JSON, to hand it to a per-job Spark application."""
    fields = dataclasses.asdict(submission)
    fields["params"] = json.loads(params_to_json(submission.params))
    return json.dumps(fields, sort_keys=True)


def submission_from_json(text: str) -> Submission:
    """The inverse of `submission_to_json`."""
    fields = json.loads(text)
    fields["params"] = params_from_json(json.dumps(fields["params"]))
    return Submission(**fields)
