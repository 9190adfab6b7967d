"""Which user job a Spark stage belongs to, and the runtime estimate a policy is told for it.

Live, the engine hands a policy each Spark stage as a job of its own, the unit executors run. The
unit a paper reasons about is the user's job: a job group (a query, a replayed job) of many Spark
jobs and stages. Every stage of one user job gets that job's id as its ``unit``
(``workloads.model.Job.unit``) and one estimate, fixed when its first stage arrives, so that it
has one class (short or long) throughout.

A stage's estimate is the job property ``schedbridge.estimate`` where the application sets one
(its own reading, per Spark job); else its user job's, from the first that exists of: what this
host learned from the application's own finished runs of the same recurring job (``learn``), the
estimates file (``estimates``), the adapter's default. Recurring jobs are recognised by
``bridge.drivers.estimates.job_key``. How many user jobs took each source
is counted (:attr:`UserJobs.sources`), logged, and recorded (:attr:`UserJobs.decided`: the
simulator of a live run plays each user job with the estimate its live policy had).
"""
from __future__ import annotations

import logging
import math
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, replace

from bridge.drivers.estimates import Estimate, Estimates, Learner, job_key, run_id
from bridge.protocol.messages import JobEnd, JobStart, LiveEvent, StageDemand, TaskEnd

log = logging.getLogger(__name__)

ESTIMATE_PROP = "schedbridge.estimate"   # seconds per task, set by the application on its jobs
MAX_UNITS = 4096                         # user jobs remembered per host: a long application forgets old ones
MAX_ESTIMATE_S = 1e7                     # seconds: an estimate beyond ~4 months is a mistake
MAX_DECIDED = 100_000                    # user jobs' estimates recorded per host, oldest dropped first
SOURCES = ("property", "learned", "file", "default")


@dataclass(frozen=True, slots=True)
class UserJob:
    """The user job a stage is part of: its recurring key, unit (job id of its first stage) and
    estimate, and where the estimate came from (one of ``SOURCES``)."""

    app: str
    occurrence: str   # its job group, or "spark-job-N" for a Spark job outside any group
    key: str
    unit: int
    estimate: float
    source: str


class UserJobs:
    """User jobs of every application a planner serves, their estimates and what was learned."""

    def __init__(self, default: float, table: Estimates | None = None, learn: bool = False) -> None:
        self._default = default
        self._table = table
        self._learner = Learner() if learn else None
        self._units: OrderedDict[tuple[str, str], UserJob] = OrderedDict()
        self._open_runs: dict[tuple[str, int], tuple[str, tuple[str, int]]] = {}  # (app, stage) -> (key, run)
        self.sources: Counter[str] = Counter()
        self.decided: deque[UserJob] = deque(maxlen=MAX_DECIDED)

    def of_stage(self, app: str, d: StageDemand, job_id: int) -> UserJob:
        """The user job of stage ``d`` of ``app`` (a new one takes ``job_id`` as its unit), with the
        stage's estimate."""
        occurrence = (app, run_id(d.props, d.job))
        given = _seconds(d.props.get(ESTIMATE_PROP))
        job = self._units.get(occurrence)
        if job is None:
            job = self._new(occurrence, d.props, job_id, given)
        else:
            self._units.move_to_end(occurrence)
        return job if given is None or given == job.estimate else replace(job, estimate=given, source="property")

    def _new(self, occurrence: tuple[str, str], props: Mapping[str, str], job_id: int,
             given: float | None) -> UserJob:
        app = occurrence[0]
        key = job_key(props)
        estimate, source = (given, "property") if given is not None else self._estimate(key)
        self.sources[source] += 1
        log.info("schedbridge engine: user job %s (%s) of %s: estimate %.3g s (%s)", job_id, key or "no key",
                 app, estimate, source)
        job = self._units[occurrence] = UserJob(app, occurrence[1], key, job_id, estimate, source)
        self.decided.append(job)
        if len(self._units) > MAX_UNITS:
            self._units.popitem(last=False)
        return job

    def _estimate(self, key: str) -> tuple[float, str]:
        """A user job's estimate from history, or the default, and its source."""
        if key:
            filed = None if self._table is None else self._table.get(key)
            for found, source in ((self._learned(key), "learned"), (filed, "file")):
                if found is not None:
                    return found.mean_s, source
        return self._default, "default"

    def _learned(self, key: str) -> Estimate | None:
        return None if self._learner is None else self._learner.get(key)

    def heard(self, app: str, ev: LiveEvent) -> None:
        """Learns from ``app``'s listener events: each Spark job is a run of its recurring job, whose
        successful tasks' durations count once the Spark job ends."""
        if self._learner is None:
            return
        if isinstance(ev, JobStart):
            key = job_key(ev.props)
            if key:
                for spec in ev.stages:
                    self._open_runs[(app, spec.stage)] = (key, (app, ev.job))
        elif isinstance(ev, TaskEnd):
            run = self._open_runs.get((app, ev.stage))
            if run is not None and ev.reason == "Success":
                self._learner.task_ended(run[0], run[1], ev.stage, ev.duration_ms / 1000.0)
        elif isinstance(ev, JobEnd):
            self._job_ended(app, ev)

    def _job_ended(self, app: str, ev: JobEnd) -> None:
        assert self._learner is not None
        stages = [s for s, (_, run) in self._open_runs.items() if run == (app, ev.job)]
        if not stages:
            return
        key = self._open_runs[stages[0]][0]
        for s in stages:
            del self._open_runs[s]
        if ev.ok:
            self._learner.run_ended(key, (app, ev.job))
        else:
            self._learner.discard(key, (app, ev.job))

    def records(self) -> list[dict[str, object]]:
        """Every user job's estimate as decided, oldest first: rows for a run's results."""
        return [{"app": j.app, "occurrence": j.occurrence, "key": j.key, "unit": j.unit,
                 "estimate_s": j.estimate, "source": j.source} for j in self.decided]

    def forget(self, app: str) -> None:
        """``app`` ended: its user jobs and open runs go (what was learned stays)."""
        for occurrence in [o for o in self._units if o[0] == app]:
            del self._units[occurrence]
        for stage in [s for s in self._open_runs if s[0] == app]:
            key, run = self._open_runs.pop(stage)
            if self._learner is not None:
                self._learner.discard(key, run)


def _seconds(raw: str | None) -> float | None:
    """``schedbridge.estimate`` as seconds; a value that is not a positive number is ignored (logged)."""
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 < value <= MAX_ESTIMATE_S:
        return value
    log.warning("schedbridge engine: ignoring %s=%r: not a number of seconds in (0, %g]", ESTIMATE_PROP, raw,
                MAX_ESTIMATE_S)
    return None
