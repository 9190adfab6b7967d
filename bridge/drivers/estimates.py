"""Runtime estimates of recurring jobs, from history.

Hawk and Eagle class a job short or long by its estimated task runtime: the mean duration of all
its tasks, known from earlier runs of the same recurring job (both papers assume the estimates;
nothing in Spark supplies them). A recurring job is named by what the application sets on its
Spark jobs (:func:`job_key`); one :class:`Learner` folds the successful tasks of finished runs into
an :class:`Estimate` per key, for `schedbridge estimates build` (event logs) and the live engine's
``learn`` mode alike; :class:`Estimates` is the file both write and the engine reads.

Per-stage means (:attr:`Estimate.stages`) are our reading of "per stage where a job's stages
differ": a run's stages that ran tasks, in Spark stage id order, position ``i`` across runs.
Pure Python: the live engine imports it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from bridge.common import atomic

JOB_NAME_PROP = "schedbridge.job"  # an application's own name for a recurring job; replay sets it
GROUP_PROP = "spark.jobGroup.id"
CALL_SITE_PROP = "callSite.short"
# (Spark local property, key kind), first set one wins; the call site's fallback is the job's first
# stage's name (its call site as Spark names stages).
KEY_PRECEDENCE: tuple[tuple[str, str], ...] = (
    (JOB_NAME_PROP, "job"),
    (GROUP_PROP, "group"),
    ("spark.job.tags", "tags"),
    ("spark.job.description", "description"),
    (CALL_SITE_PROP, "callsite"),
)
_TAGS_PROP = "spark.job.tags"

FORMAT, VERSION = "schedbridge-estimates", 1
MAX_SECONDS = 1e7       # a duration above this (115 days) is a mistake, not a task
RESOLUTION_S = 0.001    # Spark times tasks in ms: a 0 ms task counts as 1 ms, so every mean is positive
MAX_FILE_BYTES = 64 << 20
_FIELDS = ("mean_s", "tasks", "runs", "stages")


class EstimatesError(ValueError):
    """An estimates file that cannot be used, naming the file and the key or field at fault."""


def job_key(props: Mapping[str, str], call_site: str = "") -> str:
    """The recurring job a Spark job belongs to, from its local properties (``KEY_PRECEDENCE``; blank
    values skipped), else ``call_site``; "" when nothing names it."""
    for prop, kind in KEY_PRECEDENCE:
        value = _tags(props.get(prop, "")) if prop == _TAGS_PROP else props.get(prop, "").strip()
        if value:
            return f"{kind}:{value}"
    return f"callsite:{call_site.strip()}" if call_site.strip() else ""


def run_id(props: Mapping[str, str], job_id: int) -> str:
    """Which run of its recurring job a Spark job is part of, within its application: its job group
    (a query's many Spark jobs are one run), or "spark-job-N" for the Spark job alone."""
    return props.get(GROUP_PROP, "").strip() or f"spark-job-{job_id}"


def _tags(value: str) -> str:
    """Spark's comma-separated job tags, in one order whatever order they were added in."""
    return ",".join(sorted({tag.strip() for tag in value.split(",") if tag.strip()}))


@dataclass(frozen=True)
class Estimate:
    """A recurring job's mean task duration over every task of its recorded runs, and per stage
    position (see the module docstring)."""

    mean_s: float
    tasks: int
    runs: int
    stages: tuple[float, ...] = ()


class Estimates(Mapping[str, Estimate]):
    """Job key -> :class:`Estimate`, saved to and loaded from one JSON file."""

    def __init__(self, jobs: Mapping[str, Estimate] | None = None) -> None:
        self._jobs = dict(jobs or {})

    def __getitem__(self, key: str) -> Estimate:
        return self._jobs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._jobs)

    def __len__(self) -> int:
        return len(self._jobs)

    def save(self, path: Path) -> None:
        """Write the file whole (a reader never sees half of it), keys sorted, times to the µs."""
        jobs = {key: {"mean_s": round(e.mean_s, 6), "tasks": e.tasks, "runs": e.runs,
                      "stages": [round(s, 6) for s in e.stages]} for key, e in sorted(self._jobs.items())}
        document = {"format": FORMAT, "version": VERSION, "jobs": jobs}
        atomic.write_text(path, json.dumps(document, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> Estimates:
        """The estimates in ``path``; a file that is not one raises EstimatesError naming what."""
        jobs = _document(path).get("jobs")
        if not isinstance(jobs, dict):
            raise EstimatesError(f"{path}: 'jobs' must be an object of job key -> estimate")
        return cls({key: _estimate(path, key, value) for key, value in jobs.items()})


def _document(path: Path) -> dict:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise EstimatesError(f"{path}: over {MAX_FILE_BYTES >> 20} MB, too large for an estimates file")
        document = json.loads(path.read_bytes())
    except OSError as exc:
        raise EstimatesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EstimatesError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise EstimatesError(f"{path}: not an estimates file ('format' is not {FORMAT!r}; "
                             "`schedbridge estimates build` writes one)")
    if document.get("version") != VERSION:
        raise EstimatesError(f"{path}: 'version' {document.get('version')!r} is not one this schedbridge "
                             f"reads ({VERSION})")
    return document


def _estimate(path: Path, key: str, value: object) -> Estimate:
    where = f"{path}: jobs[{key!r}]"
    if not key.strip():
        raise EstimatesError(f"{where}: a job key must not be blank")
    if not isinstance(value, dict):
        raise EstimatesError(f"{where}: must be an object with {', '.join(_FIELDS)}")
    if sorted(value) != sorted(_FIELDS):
        raise EstimatesError(f"{where}: fields must be exactly {', '.join(_FIELDS)}, not {', '.join(sorted(value))}")
    stages = value["stages"]
    if not isinstance(stages, list):
        raise EstimatesError(f"{where}.stages: must be a list of seconds")
    return Estimate(_seconds(f"{where}.mean_s", value["mean_s"]), _count(f"{where}.tasks", value["tasks"]),
                    _count(f"{where}.runs", value["runs"]),
                    tuple(_seconds(f"{where}.stages[{i}]", s) for i, s in enumerate(stages)))


def _seconds(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise EstimatesError(f"{where}: {value!r} is not a duration in seconds in (0, {MAX_SECONDS:g}]")
    return float(value)


def _count(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EstimatesError(f"{where}: {value!r} is not a positive whole number")
    return value


@dataclass
class _Sum:
    seconds: float = 0.0
    tasks: int = 0

    def add(self, seconds: float, tasks: int = 1) -> None:
        self.seconds += seconds
        self.tasks += tasks

    @property
    def mean(self) -> float:
        return self.seconds / self.tasks


@dataclass
class _History:
    """What the finished runs of one key have added up to."""

    total: _Sum
    stages: list[_Sum]
    runs: int = 0


class Learner:
    """Successful tasks in, estimates out. A run's tasks count once the run ends (:meth:`run_ended`);
    an open run holds one sum and count per stage, and a run that never ends (or is discarded)
    counts for nothing."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, Hashable], dict[int, _Sum]] = {}
        self._done: dict[str, _History] = {}

    def task_ended(self, key: str, run: Hashable, stage: int, seconds: float) -> None:
        """A successful task of ``run`` (any id, unique per run) of the job ``key``; ``stage`` is
        its Spark stage id. A negative or non-finite time (a clock that jumped) is not a duration."""
        if not math.isfinite(seconds) or seconds < 0:
            return
        stages = self._open.setdefault((key, run), {})
        stages.setdefault(stage, _Sum()).add(min(max(seconds, RESOLUTION_S), MAX_SECONDS))

    def run_ended(self, key: str, run: Hashable) -> None:
        """Fold the run's tasks into ``key``'s estimate, its stages in id order; call once, after
        its last task."""
        stages = self._open.pop((key, run), None)
        if not stages:
            return
        history = self._done.setdefault(key, _History(_Sum(), []))
        history.runs += 1
        for position, stage in enumerate(sorted(stages)):
            if position == len(history.stages):
                history.stages.append(_Sum())
            history.stages[position].add(stages[stage].seconds, stages[stage].tasks)
            history.total.add(stages[stage].seconds, stages[stage].tasks)

    def discard(self, key: str, run: Hashable) -> None:
        """Forget an open run without counting it (a failed job, an application gone)."""
        self._open.pop((key, run), None)

    def get(self, key: str) -> Estimate | None:
        """``key``'s estimate, None before its first finished run."""
        history = self._done.get(key)
        return None if history is None else Estimate(history.total.mean, history.total.tasks, history.runs,
                                                     tuple(s.mean for s in history.stages))

    def estimates(self) -> Estimates:
        """The estimates of every key with a finished run."""
        return Estimates({key: estimate for key in self._done if (estimate := self.get(key)) is not None})
