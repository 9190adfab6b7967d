"""Simulator jobs for workloads without trace durations (WordCount, TPC-H), from a live run's tasks.

A trace job tells the simulator how long each task takes; a WordCount or TPC-H job does not, so
each live run is simulated from its own tasks' measured work (our reading):

* **a task's work** is its full-share time: launch to finish on its executor, less what its
  container's shrinking took (``preemption.json``: from a suspend acknowledged until the next
  resume, the container ran at the share the agent answered, so each such second is worth
  ``share`` full-share seconds). A shrunk container stretches wall time; this measure does not,
  so a preempting run and a non-preempting one measure the same work. Spark's Executor CPU Time
  was not usable: PySpark runs the job's Python code in a worker process whose CPU Spark does not
  count (measured on kairos-hol under FIFO: a long reduce ran 19.9 s with 0.07 s of Executor CPU
  Time).
* **a job** is either its tasks (``tasks``): every succeeded task one simulator task of its work,
  demanding what its job declares for its stage's kind (``workloads.demands``: a reduce stage if
  Spark lists parent stages for it), else one core, in stages whose parents are Spark's (the event
  logs' stage infos, a stage that ran no task bridged to its own parents), so that a placement
  policy places each task and Falcon meets the DAG; or **one simulator task** holding a slot for
  its stages in sequence (a stage needs the one before it), each stage as long as its longest task (``critical-path``:
  the stage's tasks in parallel) or as all its tasks' work together (``serial``: on one slot).
  With one task per stage (kairos-hol) the last two give the job's summed task times, as an
  earlier hand-made trace had them.
* **each stage its own job** (``stages``; ``bridge.apps.simlive.stages``), as the live engine hands
  stages to a policy, arriving when its parent stages end in the simulation. Here (the jobs' sizes)
  a ``stages`` job is its ``tasks`` job.
* **Spark jobs in sequence** (``tasks``; our reading): a replayed job may run several Spark jobs
  (a TPC-H query does: a broadcast's, then the query's). A Spark job's stages that have no parent
  in it wait for every stage of the same replayed job that had finished when the Spark job was
  submitted, since the driver submitted it only then; Spark jobs submitted while another ran do
  not wait for it.

A one-task job's runtime estimate is its measured work; a ``tasks`` job's is the mean of its tasks'
(what a policy that uses estimates is told).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bridge.apps.simlive.compare import CompareError
from bridge.replay.eventlog import SparkJob, spark_jobs
from workloads.demands import Demand
from workloads.model import Job
from workloads.spec import Submission, declared_demands

JOB_MODELS = ("critical-path", "serial", "tasks", "stages")
# the default where a workload has no trace durations (sim-vs-live, the demo plan): the model that
# agrees with live (docs/sim-to-real.md, "The mission's workloads")
DEFAULT_JOB_MODEL = "stages"
STAGED_MODELS = ("tasks", "stages")   # whose jobs keep their tasks in stages (stages: bridge.apps.simlive.stages)
_STAGE = {"critical-path": "max", "serial": "sum"}


Shrunk = tuple[float, float, float]   # (start, end) epoch seconds a container was shrunk, and its share


def shrunk_intervals(path: Path) -> dict[str, list[Shrunk]]:
    """Per container, the (start, end) epoch seconds it spent shrunk and the cores it ran at
    meanwhile, from a replay's ``preemption.json`` (none if the file does not exist: a run
    without preemption)."""
    if not path.is_file():
        return {}
    since: dict[str, tuple[float, float]] = {}
    intervals: dict[str, list[Shrunk]] = {}
    for command in json.loads(path.read_text()):
        container, at = command["container"], float(command.get("at_epoch", math.nan))
        if math.isnan(at):
            raise CompareError(f"{path}: a command without at_epoch (a replay from before it was recorded)")
        if command["action"] == "suspend" and command["status"] == "ok":
            since.setdefault(container, (at, _share(path, command)))
        elif command["action"] == "resume" and command["status"] != "error" and container in since:
            start, share = since.pop(container)
            intervals.setdefault(container, []).append((start, at, share))
    for container, (start, share) in since.items():  # never resumed while recorded: shrunk to the end
        intervals.setdefault(container, []).append((start, math.inf, share))
    return intervals


def _share(path: Path, command: Mapping[str, object]) -> float:
    share = command.get("share")
    if not isinstance(share, (int, float)):
        raise CompareError(f"{path}: a suspend of {command['container']} without the share the agent answered "
                           "(a replay from before it was recorded, 2026-11-27): run it again")
    return float(share)


def offslot_share(live_dir: Path) -> float:
    """The cores a task off its slot ran at in the run in ``live_dir``: its node agents' minimum
    share (0 for a run without preemption); CompareError if its agents answered different shares,
    since the simulator plays one."""
    path = live_dir / "preemption.json"
    shares = {share for spans in shrunk_intervals(path).values() for _, _, share in spans}
    if len(shares) > 1:
        raise CompareError(f"{path}: containers were shrunk to different shares ({sorted(shares)}); "
                           "the simulator plays one off-slot share: give every node agent the same --min-share")
    return shares.pop() if shares else 0.0


def shrunk_time(start: float, end: float, intervals: Sequence[Shrunk]) -> float:
    """Full-share seconds lost in [start, end] to ``intervals`` (disjoint): their overlap at the
    share each ran at."""
    return sum(max(0.0, min(end, b) - max(start, a)) * (1.0 - min(share, 1.0)) for a, b, share in intervals)


def task_work(tasks: pd.DataFrame, t0: float, shrunk: Mapping[str, Sequence[Shrunk]]) -> pd.Series:
    """Each task's full-share time (tasks.csv rows; times relative to ``t0``, the replay's start):
    its time on the executor less what shrinking took from it; never below 0 (rounding could make
    it -1e-15)."""
    work = [max(0.0, finish - launch - shrunk_time(t0 + launch, t0 + finish, shrunk.get(str(container), ())))
            for launch, finish, container in zip(tasks["launch_s"], tasks["finish_s"], tasks["container_id"])]
    return pd.Series(work, index=tasks.index, dtype=float)


def replay_t0(live_dir: Path) -> float:
    """A replay's time 0 (epoch seconds), from its meta.json."""
    return float(json.loads((live_dir / "meta.json").read_text())["t0_epoch"])


def live_tasks(live_dir: Path) -> pd.DataFrame:
    """A replay's tasks.csv, every attempt with its full-share time as ``work`` (a failed attempt
    held its slot too)."""
    tasks = pd.read_csv(live_dir / "tasks.csv")
    tasks["work"] = task_work(tasks, replay_t0(live_dir), shrunk_intervals(live_dir / "preemption.json"))
    return tasks


def measured_jobs(live_dir: Path, submissions: Sequence[Submission], model: str) -> list[Job]:
    """The replay's jobs as the simulator plays them, from the run's measured task work under
    ``model`` (see the module docstring)."""
    if model not in JOB_MODELS:
        raise CompareError(f"job model {model!r}: one of {', '.join(JOB_MODELS)}")
    tasks = succeeded_tasks(live_dir, submissions)
    if model in STAGED_MODELS:
        by_job, spark, t0 = dict(tuple(tasks.groupby("job_id"))), spark_by_job(live_dir), replay_t0(live_dir)
        return [staged_job(s, by_job[s.job_id], spark.get(s.job_id, []), t0) for s in submissions]
    per_stage = tasks.groupby(["job_id", "stage_id"])["work"].agg(_STAGE[model])
    work = per_stage.groupby(level="job_id").sum()
    return [Job(s.job_id, s.time_s, (float(work[s.job_id]),), estimate=float(work[s.job_id])) for s in submissions]


def succeeded_tasks(live_dir: Path, submissions: Sequence[Submission]) -> pd.DataFrame:
    """The run's succeeded tasks with their ``work``; CompareError naming the submitted jobs that
    have none (a failed job cannot be simulated)."""
    tasks = live_tasks(live_dir)
    tasks = tasks[tasks["status"] == "succeeded"]
    if missing := [s.job_id for s in submissions if s.job_id not in set(tasks["job_id"])]:
        raise CompareError(f"{live_dir / 'tasks.csv'}: no succeeded task of job(s) {missing[:5]} to measure "
                           "its work from (a failed job cannot be simulated)")
    return tasks


def spark_by_job(live_dir: Path) -> dict[int, list[SparkJob]]:
    """Each replayed job's Spark jobs, by submission, from the run's event logs."""
    spark: dict[int, list[SparkJob]] = {}
    for job in spark_jobs(live_dir / "eventlogs"):
        spark.setdefault(job.replayed, []).append(job)
    return spark


@dataclass(frozen=True)
class StageGraph:
    """One replayed job's stages that ran tasks, in Spark's stage id order: each one's parents
    (indices into ``ran``), the Spark job that listed it first, when its last task ended (seconds
    after the replay's start), and whether Spark lists parent stages for it (a reduce stage, as the
    live engine tells one: ``workloads.demands``)."""

    ran: list[int]
    parents: list[tuple[int, ...]]
    owner: list[SparkJob]
    ended: list[float]
    reduce: list[bool]

    def demands(self, submission: Submission) -> list[Demand] | None:
        """Each stage's task demand as ``submission`` declares it (None: it declares none)."""
        declared = declared_demands(submission.params)
        return None if declared is None else [declared.of_stage(has_parents=r) for r in self.reduce]


def stage_graph(job_id: int, tasks: pd.DataFrame, spark: Sequence[SparkJob], t0: float) -> StageGraph:
    """The stages of replayed job ``job_id`` (``tasks``: its succeeded tasks; ``spark``: its Spark jobs
    by submission). CompareError if a stage that ran is in no Spark job's stage infos (an event log
    that does not belong to this run)."""
    ran = sorted(set(tasks["stage_id"]))
    index = {stage: i for i, stage in enumerate(ran)}
    infos: dict[int, tuple[int, ...]] = {}
    owner: dict[int, SparkJob] = {}
    for job in spark:   # a stage reused by a later Spark job keeps the first's parents and owner
        for stage, listed in job.stages.items():
            infos.setdefault(stage, listed)
            owner.setdefault(stage, job)
    if unknown := [stage for stage in ran if stage not in owner]:
        raise CompareError(f"job {job_id}: stage(s) {unknown[:5]} ran but no Spark job of its event logs lists them")
    ended = tasks.groupby("stage_id")["finish_s"].max()
    parents = []
    for stage in ran:
        direct = _ran_parents(stage, infos, index, set())
        if not direct:   # a root of its Spark job: after what had ended when the driver submitted it
            direct = {p for p in ran if p != stage and owner[p] is not owner[stage]
                      and ended[p] + t0 <= owner[stage].submitted_epoch_s}
        parents.append(tuple(sorted(index[p] for p in direct)))
    return StageGraph(ran, parents, [owner[s] for s in ran], [float(ended[s]) for s in ran],
                      [bool(infos.get(s)) for s in ran])


def in_stage_order(tasks: pd.DataFrame) -> pd.DataFrame:
    return tasks.sort_values(["stage_id", "launch_s", "task_id"], kind="stable")


def staged_job(submission: Submission, tasks: pd.DataFrame, spark: Sequence[SparkJob], t0: float) -> Job:
    """One replayed job as its tasks in stages (``tasks``: its succeeded tasks with their work;
    ``spark``: its Spark jobs by submission; see :func:`stage_graph`)."""
    tasks = in_stage_order(tasks)
    graph = stage_graph(submission.job_id, tasks, spark, t0)
    index = {stage: i for i, stage in enumerate(graph.ran)}
    stage_of = tuple(index[s] for s in tasks["stage_id"])
    demands = graph.demands(submission)
    return Job(submission.job_id, submission.time_s, tuple(float(w) for w in tasks["work"]),
               demands=None if demands is None else tuple(demands[k] for k in stage_of),
               stage_of=stage_of, stage_parents=tuple(graph.parents))


def _ran_parents(stage: int, infos: dict[int, tuple[int, ...]], ran: Mapping[int, int], seen: set[int]) -> set[int]:
    """``stage``'s parents that ran tasks, looking through parents that ran none (skipped)."""
    found: set[int] = set()
    for parent in infos.get(stage, ()):
        if parent in seen:
            continue
        seen.add(parent)
        found |= {parent} if parent in ran else _ran_parents(parent, infos, ran, seen)
    return found
