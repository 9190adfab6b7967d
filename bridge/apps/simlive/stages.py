"""A measured run played stage by stage, as the live engine schedules it (``--job-model stages``).

Live, the engine hands a policy each Spark stage as a job of its own when the driver submits it
(``bridge.drivers.spark.engine``): a TPC-H query's later stages arrive only when the stages they
need have ended, and queue behind everything submitted meanwhile. The ``tasks`` model plays a
replayed job as one job with a stage DAG inside, so a FIFO simulator runs its later stages at
once where live they waited (docs/sim-to-real.md, "The mission's workloads: the study").

Here every stage that ran tasks is one simulator job of its tasks' measured work (our reading):

* **closed loop**: it arrives when its parent stages (Spark's, and for a Spark job's first stages
  what had ended when the driver submitted that Spark job: :func:`~bridge.apps.simlive.measured.stage_graph`)
  end *in the simulation*, plus the gap measured live between the last of them ending and its
  submission (the driver's work: stage completion, result handling, planning the next Spark job);
  a first stage arrives its live delay after the replayed job's submission;
* **what the policy is told**, as live: the stages of one replayed job are one user job (their
  ``unit``, the id of its first stage) with the runtime estimate its live policy was told
  (``user-jobs.csv``, which the replay writes: from an estimates file, learned, or the engine's
  default; a run without it, the default), and the successors are the stages after it in its
  Spark job with their task counts (Falcon's Eq. 2 reads them);
* **a replayed job ends** when its last stage does, plus the time measured live from its last
  task's end to the job's end (collecting and checking the result).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bridge.apps.simlive.compare import CompareError
from bridge.apps.simlive.measured import in_stage_order, replay_t0, spark_by_job, stage_graph, succeeded_tasks
from bridge.drivers.spark.dag import successors_of
from bridge.drivers.spark.engine import EngineParams
from bridge.history.events import StageSubmitted
from bridge.protocol.messages import JobStart, StageSpec
from bridge.replay.eventlog import SparkJob, replayed_job_id, stage_submissions
from bridge.replay.results import USER_JOBS
from workloads.model import Job, Successor
from workloads.spec import Submission

LIVE_ESTIMATE = EngineParams().estimate   # what the live engine tells a policy of a job without an estimate


@dataclass(frozen=True)
class StagePlay:
    """The simulator's jobs for one live run, one per stage that ran, and how to read them back."""

    jobs: list[Job]
    owner: dict[int, int]     # simulator job id -> replayed job id
    tail: dict[int, float]    # replayed job id -> live seconds from its last task's end to its end


def stage_play(live_dir: Path, submissions: Sequence[Submission], estimate: float = LIVE_ESTIMATE) -> StagePlay:
    """Every replayed job of the run in ``live_dir`` as its stages (see the module docstring);
    ``estimate`` for a job the run recorded no estimate of."""
    told = estimates_told(live_dir)
    by_job = dict(tuple(succeeded_tasks(live_dir, submissions).groupby("job_id")))
    spark = spark_by_job(live_dir)
    submitted = stage_submissions(live_dir / "eventlogs")
    live = pd.read_csv(live_dir / "jobs.csv").set_index("job_id")
    t0 = replay_t0(live_dir)
    jobs: list[Job] = []
    owner: dict[int, int] = {}
    tail: dict[int, float] = {}
    for s in submissions:
        mine = in_stage_order(by_job[s.job_id])
        first = len(jobs)
        jobs += _stage_jobs(s, mine, spark.get(s.job_id, []), submitted, float(live.at[s.job_id, "submit_s"]),
                            t0, first, told.get(s.job_id, estimate))
        owner.update((j.job_id, s.job_id) for j in jobs[first:])
        tail[s.job_id] = max(0.0, float(live.at[s.job_id, "end_s"]) - float(mine["finish_s"].max()))
    return StagePlay(jobs, owner, tail)


def _stage_jobs(submission: Submission, tasks: pd.DataFrame, spark: Sequence[SparkJob],
                submitted: dict[tuple[str, int], float], live_submit: float, t0: float, first_id: int,
                estimate: float) -> list[Job]:
    """One replayed job's stages as simulator jobs with ids from ``first_id`` (times in seconds
    after the replay's start, ``t0`` its epoch)."""
    graph = stage_graph(submission.job_id, tasks, spark, t0)
    demands = graph.demands(submission)
    found = []
    for k, (stage, parents, owner) in enumerate(zip(graph.ran, graph.parents, graph.owner)):
        at = submitted.get((owner.app_id, stage))
        if at is None:
            raise CompareError(f"job {submission.job_id}: stage {stage} ran but its event log has no "
                               f"{StageSubmitted.NAME} for it")
        release = max((graph.ended[p] for p in parents), default=live_submit)
        gap = max(0.0, at - t0 - release)
        work = tuple(float(w) for w in tasks.loc[tasks["stage_id"] == stage, "work"])
        found.append(Job(first_id + k, submission.time_s + (0.0 if parents else gap), work, estimate=estimate,
                         demands=None if demands is None else (demands[k],) * len(work),
                         successors=_successors(owner, stage, estimate),
                         after=tuple(first_id + p for p in parents), after_gap=gap if parents else 0.0,
                         unit=first_id))
    return found


def estimates_told(live_dir: Path) -> dict[int, float]:
    """The estimate the live policy was told per replayed job (by its job group), from the run's
    ``user-jobs.csv``; empty for a run without one (stock Spark, or recorded before it existed)."""
    path = live_dir / USER_JOBS
    if not path.is_file():
        return {}
    rows = pd.read_csv(path, dtype={"occurrence": str})
    told = {}
    for occurrence, estimate in zip(rows["occurrence"], rows["estimate_s"].astype(float)):
        job = replayed_job_id({"spark.jobGroup.id": occurrence})
        if job is not None:
            told[job] = estimate
    return told


def _successors(owner: SparkJob, stage: int, estimate: float) -> tuple[Successor, ...]:
    """The stages after ``stage`` in its Spark job, as the live engine gives them to the policy."""
    start = JobStart(0, 0, tuple(StageSpec(s, owner.tasks.get(s, 0), parents) for s, parents in owner.stages.items()),
                     {})
    return successors_of(start, stage, estimate)


def replayed_table(stage_table: pd.DataFrame, play: StagePlay, nominal: Mapping[int, Job], slots: int) -> pd.DataFrame:
    """The simulator's per-stage job table as one row per replayed job (the columns of
    :meth:`~bridge.sim.engine.SimResult.job_table`): submitted, sized and estimated as its
    ``nominal`` job (the replayed job the live policy's classes are about), finished when its last
    stage did plus its measured tail."""
    grouped = stage_table.assign(owner=stage_table["job_id"].map(play.owner)).groupby("owner")
    ids = pd.Index(sorted(nominal), name="job_id")
    out = pd.DataFrame({"submit": [nominal[j].submit for j in ids],
                        "finish": grouped["finish"].max() + pd.Series(play.tail),
                        "n_tasks": grouped["n_tasks"].sum(),
                        "estimate": [nominal[j].estimate for j in ids],
                        "mean_duration": [nominal[j].mean_duration for j in ids],
                        "max_duration": grouped["max_duration"].max(), "work": grouped["work"].sum(),
                        "rejected": grouped["rejected"].any()}, index=ids)
    out["ideal"] = [max(m, w / slots) for m, w in zip(out["max_duration"], out["work"])]
    return out.reset_index()
