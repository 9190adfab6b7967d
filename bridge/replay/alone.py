"""`replay --measure-alone`: each category's runtime alone, measured on the cluster of the replay.

A job's slowdown is its JCT over its runtime alone. A workload file may state that per category
(``duration_alone_s``), but only a run on the same cluster, in the same application, under the
same policy says what "alone" costs there. So before time 0 the first job of every category runs
once, by itself, through the replay's own launcher (shared mode: in the replay's application, after
its warm-up; per-job mode: as its own application, start-up included as in the replay's JCTs), and
its wall time becomes ``duration_alone_s`` of every job of that category. These runs are under
their own job group (`jobs.job_group` with ``alone``), so no task of theirs is counted as a
replayed job's.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from bridge.replay.launchers import Outcome
from workloads.spec import Submission


def first_of_each_category(submissions: Iterable[Submission]) -> list[Submission]:
    """The earliest-submitted job of every category, in submission order: the ones timed alone."""
    firsts: dict[str, Submission] = {}
    for sub in submissions:
        firsts.setdefault(sub.category, sub)
    return list(firsts.values())


def measure(run: Callable[[Submission], Outcome], submissions: Iterable[Submission],
            report: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> dict[str, float]:
    """Category -> seconds its first job took alone, running one after another with ``run``.

    A category whose run did not succeed is left out (its jobs keep the workload file's value, if
    any) and ``report`` says so, with the error: one failed run should not cost the replay."""
    alone: dict[str, float] = {}
    for sub in first_of_each_category(submissions):
        report(f"replay: timing category {sub.category!r} alone (job {sub.job_id})")
        start = clock()
        outcome = run(sub)
        if outcome.status == "succeeded":
            alone[sub.category] = clock() - start
        else:
            kept = "none" if sub.duration_alone_s is None else f"{sub.duration_alone_s:g} s"
            report(f"replay: category {sub.category!r} alone {outcome.status}: {outcome.error}; its jobs keep "
                   f"the workload file's duration_alone_s ({kept})")
    return alone


def with_alone(submission: Submission, alone: dict[str, float]) -> Submission:
    """``submission`` with its category's measured runtime alone, if one was measured."""
    seconds = alone.get(submission.category)
    return submission if seconds is None else replace(submission, duration_alone_s=seconds)
