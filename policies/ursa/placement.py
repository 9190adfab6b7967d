"""Ursa's placement score and stage-aware batch placement (EuroSys '20, §4.2.2, Alg. 1).

Per resource r a worker has a normalised headroom D_r(w) = max(0, (EPT − APT_r(w)) / EPT):
how much of one scheduling interval's worth of work it can still absorb. Placing task t
adds Inc_r(t, w). The score F(t, w) = Σ_r D_r(w)·min(Inc_r, D_r) pairs heavy use of a
resource with workers where that resource is light; a worker with no headroom on a
resource the task needs is excluded, so work waits at the scheduler (late binding).

No nested functions here: compiled (:mod:`policies.framework.compiled`), a closure and its
environment form a reference cycle, which keeps a batch's state alive until the cyclic garbage
collector runs (the simulator runs it seldom), doubling the peak memory of a run.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from heapq import heapify, heappop, heappush
from typing import Final, Generic, TypeVar

from policies.common.vectors import ceiling
from policies.ursa.dominance import Fronts

Vector = tuple[float, ...]
# a worker's headrooms and which resources are hard: a list and a tuple, which the compiled core
# (:mod:`policies.framework.compiled`) indexes natively
Head = list[float]
Hard = tuple[bool, ...]
# Tasks and workers are any hashable keys the caller chooses; the functions keep their types.
T = TypeVar("T", bound=Hashable)
W = TypeVar("W", bound=Hashable)
# Inc_r(t, w) with cluster-wide processing rates (our reading): the same on every worker.
Increment = Callable[[T], Vector]

# "a large number" (Alg. 1, line 7): F ≤ #resources, so any EJF term below this is dominated.
STAGE_BONUS = 1e6


def headroom(ept: float, apt: float) -> float:
    """D_r(w) for a time-like resource: the unused share of one EPT."""
    return max(0.0, (ept - apt) / ept)


def score(head: Sequence[float], inc: Vector, hard: Hard) -> float | None:
    """Eq. (1) F(t, w), or None when w is excluded: some needed resource has no headroom,
    or a hard resource (memory) does not fit."""
    f = _score(list(head), inc, hard)
    return None if f == EXCLUDED else f


EXCLUDED = -math.inf  # below every F (a sum of non-negative terms)


def _score(head: Head, inc: Vector, hard: Hard) -> float:
    """:func:`score` with :data:`EXCLUDED` for None: no boxed result on the hot path. Loops by
    index, which the compiled core (:mod:`policies.framework.compiled`) runs on native floats."""
    total = 0.0
    for r, i in enumerate(inc):
        d = head[r]
        if i > 0 and (d <= 0 or (hard[r] and i > d + 1e-9)):
            return EXCLUDED
        total += d * (d if d < i else i)  # min(i, d)
    return total


class Stage(Generic[T]):
    """The ready, unplaced tasks of one stage of one job, plus its job-order bonus
    (EJF's W·T or SRJF's weighted priority). Plain classes, not dataclasses, here: mypyc
    cannot build a generic dataclass (mypyc/mypyc#827)."""

    def __init__(self, key: Hashable, tasks: tuple[T, ...], order_bonus: float = 0.0) -> None:
        self.key: Final = key
        self.tasks: Final = tasks
        self.order_bonus: Final = order_bonus


class Plan(Generic[T, W]):
    """A stage's tentative placement and its Alg. 1 score."""

    def __init__(self, stage: Stage[T], score: float) -> None:
        self.stage = stage
        self.score = score
        self.pairs: list[tuple[T, W]] = []


def needs(inc: Vector) -> tuple[int, ...]:
    """The resources a task uses: a worker without headroom on one of them is excluded."""
    return tuple(r for r, i in enumerate(inc) if i > 0)


def opens(head: Head, used: tuple[int, ...], hard_incs: Sequence[tuple[int, float]] = ()) -> bool:
    """Whether Eq. 1 lets a worker with headroom ``head`` take a task that uses ``used``, with
    these increments on hard resources (:func:`score` is None exactly when this is False)."""
    return all(head[r] > 0 for r in used) and all(i <= head[r] + 1e-9 for r, i in hard_incs)


Uses = tuple[int, ...]  # the resources a task uses (:func:`needs`)


def _open_to(heads: dict[W, Head], used: Uses, over: dict[W, Head] | None = None) -> list[W]:
    """The workers of ``heads`` open to ``used``, read through ``over`` (a batch's commits) if given."""
    if over is None:
        return [w for w, d in heads.items() if opens(d, used)]
    return [w for w, d in heads.items() if opens(over.get(w) or d, used)]


def stage_score(stage: Stage[T], heads: dict[W, Head], increment: Increment[T],
                hard: Hard, stage_bonus: float = STAGE_BONUS,
                opened: dict[Uses, list[W]] | None = None, uses: Collection[Uses] = ()) -> Plan[T, W]:
    """Alg. 1 StageScore on a copy of the headrooms: each task to its best worker in turn
    (ties: first worker in ``heads`` order); mean F plus the bonus if every task placed.

    Only workers with headroom on every resource a task uses are scored (the others are
    excluded by Eq. 1), kept per set of used resources (``opened``: the caller's lists for
    ``heads``, shared between stages): on a busy cluster most workers have none, and a stage
    of thousands of tasks costs a lookup per task, not a scan of every worker. Once no worker
    is open to any set of resources the tasks use (``uses``, when the caller knows them all),
    the rest of the stage cannot place and is not scored one task at a time. Workers that share
    one headroom object (the caller may share one among workers with equal headrooms, as
    idle workers have) are scored once per task."""
    local: dict[W, Head] = {}  # the workers this plan has used, with its tentative load
    candidates: dict[Uses, list[W]] = {}
    shared: dict[Uses, list[W]] = {} if opened is None else opened
    plan: Plan[T, W] = Plan(stage, 0.0)
    total, bonus = 0.0, stage_bonus
    for task in stage.tasks:
        inc = increment(task)
        best = _best_worker(_candidates(needs(inc), candidates, shared, heads, local), local, heads, inc, hard)
        if best is None:
            bonus = 0.0
            if uses and not any(_candidates(u, candidates, shared, heads, local) for u in uses):
                break
            continue
        chosen = best[1]
        plan.pairs.append((task, chosen))
        local[chosen] = [max(0.0, d - i) for d, i in zip(local.get(chosen, heads[chosen]), inc)]
        for n, ws in candidates.items():  # headroom only shrinks: a worker can only close
            if not opens(local[chosen], n) and chosen in ws:
                ws.remove(chosen)
        total += best[0]
    plan.score = (total / len(plan.pairs) if plan.pairs else 0.0) + bonus + stage.order_bonus
    return plan


def _candidates(used: Uses, candidates: dict[Uses, list[W]], shared: dict[Uses, list[W]],
                heads: dict[W, Head], local: dict[W, Head]) -> list[W]:
    """A plan's workers open to ``used``: those open in ``heads`` (kept in ``shared``) that its
    tentative load (``local``) left open, kept in ``candidates`` for the plan to trim."""
    ws = candidates.get(used)
    if ws is None:
        common = shared.get(used)
        if common is None:
            common = shared[used] = _open_to(heads, used)
        ws = candidates[used] = [w for w in common if w not in local or opens(local[w], used)]
    return ws


def _best_worker(workers: list[W], local: dict[W, Head], heads: dict[W, Head],
                 inc: Vector, hard: Hard) -> tuple[float, W] | None:
    """The first of ``workers`` with the highest F for a task, and that F. A worker whose headroom
    object was already scored for it would score the same, so it is not chosen and not scored."""
    best = EXCLUDED
    chosen: W | None = None
    scored: list[Head] = []  # few objects (many workers share one): a scan by identity beats hashing ids
    for w in workers:
        head = heads[w]
        if local:
            head = local.get(w) or head
        if _among(head, scored):
            continue
        scored.append(head)
        f = _score(head, inc, hard)
        if f > best:
            best, chosen = f, w
    return None if chosen is None else (best, chosen)


def _among(head: Head, heads: list[Head]) -> bool:
    """Whether ``head`` is one of ``heads`` (the object, not an equal one)."""
    for h in heads:
        if h is head:
            return True
    return False


def _commit_pairs(pairs: Sequence[tuple[W, Vector]], live: dict[W, Head],
                  opened: dict[Uses, list[W]], heads: dict[W, Head]) -> set[W]:
    """Commit a plan's (worker, increment) ``pairs`` to the live headrooms (``live``, falling back
    on ``heads`` for a worker it lacks) and drop the workers it closed from ``opened``; returns the
    workers it used (the plans that chose one of them may have changed)."""
    used: set[W] = set()
    for w, inc in pairs:
        _commit_to(w, inc, live, opened, heads)
        used.add(w)
    return used


def _commit_to(worker: W, inc: Vector, live: dict[W, Head], opened: dict[Uses, list[W]], heads: dict[W, Head]
               ) -> None:
    """:func:`_commit_pairs` of one pair (a worker once closed to a set of resources stays closed)."""
    head = live[worker] = [max(0.0, d - i) for d, i in zip(live.get(worker) or heads[worker], inc)]
    for n, ws in opened.items():
        if not opens(head, n) and worker in ws:
            ws.remove(worker)


def _none_open(heads: dict[W, Head], live: dict[W, Head],
               opened: dict[Uses, list[W]], uses: Collection[Uses]) -> bool:
    """Whether no worker is open to any set of resources in ``uses`` (all the tasks use, if
    known): then every plan left would place nothing, so a batch ends without rescoring them
    (a plan no commit touched has its workers still open, so none is left with pairs)."""
    return bool(uses) and not any(_open_list(heads, live, opened, used) for used in uses)


def _open_list(heads: dict[W, Head], live: dict[W, Head],
               opened: dict[Uses, list[W]], used: Uses) -> list[W]:
    """The workers open to ``used``, from ``opened`` (found by a scan of ``heads`` as the batch's
    commits ``live`` left them, and kept there, if missing)."""
    ws = opened.get(used)
    if ws is None:
        ws = opened[used] = _open_to(heads, used, live)
    return ws


def _opened_copy(opened: Mapping[Uses, Sequence[W]] | None) -> dict[Uses, list[W]]:
    """A batch's lists of open workers, copied: the batch trims them as workers close."""
    return {used: list(ws) for used, ws in (opened or {}).items()}


def place_batch(stages: Sequence[Stage[T]], heads: dict[W, Head],
                increment: Increment[T], hard: Hard,
                stage_bonus: float = STAGE_BONUS, uses: Collection[Uses] = (),
                opened: Mapping[Uses, Sequence[W]] | None = None) -> list[tuple[T, W]]:
    """One scheduling round: repeat Alg. 1 (score every stage, commit the best plan,
    rescore) until no stage can place a task. Ties between stages keep input order.

    Committing a plan only lowers the headroom of the workers it used, so a stage whose plan
    used none of them would choose the same workers with the same scores (a lowered worker
    it passed over stays passed over) and keeps its plan; a stage that placed nothing never
    will. Only the other plans are rescored. ``uses``: every set of resources the tasks use,
    if known (:func:`stage_score`); ``opened``: the workers open to some of them, in ``heads``
    order, if the caller keeps them (the others are found by a scan)."""
    live, open_to = dict(heads), _opened_copy(opened)  # a commit replaces a worker's headrooms
    plans = [stage_score(s, live, increment, hard, stage_bonus, open_to, uses) for s in stages]
    placed: list[tuple[T, W]] = []
    while True:
        plans = [p for p in plans if p.pairs]
        if not plans:
            break
        best = plans[0]  # the first with the highest score, as max() picks
        for p in plans:
            if p.score > best.score:
                best = p
        used = _commit_pairs([(w, increment(t)) for t, w in best.pairs], live, open_to, live)
        placed.extend(best.pairs)
        if _none_open(live, live, open_to, uses):
            break
        done = {t for t, _ in best.pairs}
        rest = tuple(t for t in best.stage.tasks if t not in done)
        plans = [stage_score(p.stage, live, increment, hard, stage_bonus, open_to, uses)
                 if any(w in used for _, w in p.pairs) else p for p in plans if p is not best]
        if rest:
            plans.append(stage_score(Stage(best.stage.key, rest, best.stage.order_bonus), live, increment, hard,
                                     stage_bonus, open_to, uses))
    return placed


def place_singly(stages: Sequence[Stage[T]], heads: dict[W, Head],
                 increment: Increment[T], hard: Hard, uses: Collection[Uses] = (),
                 opened: Mapping[Uses, Sequence[W]] | None = None, fronts: Fronts[T] | None = None
                 ) -> list[tuple[T, W]]:
    """:func:`place_batch` of every task of ``stages`` as a stage of its own, with its stage's
    order bonus and no stage bonus (the per-task ablation): the same placements in the same order,
    without scoring every task after every commit.

    A single task's best score only falls as headrooms fall (F is non-decreasing in every D_r,
    and a worker once excluded stays excluded), so a plan scored before some commits bounds its
    score after them. Plans wait in a heap by (score, input order); the top one is committed
    if no commit has gone to its worker since it was scored (its score is current and no other
    plan can beat it, nor tie it from earlier in the input), and rescored otherwise. A task enters
    the heap unscored, by a bound on its score (:func:`_ceiling`), and only once its stage's bound
    (on the largest increments of the stage's front, ahead of its tasks in input order) has reached
    the top: most stages never do before the batch ends (the EJF bonus ranks whole stages apart),
    so most tasks are never bounded nor scored.

    Within a stage, a task that an earlier one dominates (:mod:`policies.ursa.dominance`) scores
    no more on any worker and loses ties to it, so only the stage's front is scored, and a task
    joins it when the one it waits on is placed. ``fronts``: the caller's fronts from its earlier
    batches, kept up to date with these placements (without it each stage is scanned afresh)."""
    if not heads:
        return []
    # the headrooms of the workers this batch committed to, read before ``heads``: a batch copies
    # none of the others
    live: dict[W, Head] = {}
    open_to = _opened_copy(opened)
    commits: dict[W, int] = {}  # per worker that has taken some: the commits it took in this batch
    kept = (Fronts[T]() if fronts is None else fronts).of(stages, increment, hard)
    top = _largest(heads)
    bonus = [s.order_bonus for s in stages]
    # -score (or a bound on it), input order (STAGE: a stage's bound), its worker's commits when
    # scored (UNSCORED: a bound), the task (None: a stage's bound) and its worker
    heap: list[tuple[float, int, int, int, T | None, W | None]] = [
        (-(_ceiling(top, front.peak()) + bonus[k]), k, STAGE, UNSCORED, None, None)
        for k, front in enumerate(kept) if front.members]
    heapify(heap)  # the order is total: (input order, rank) is unique per entry
    placed: list[tuple[T, W]] = []
    while heap:
        _, k, _, seen, task, worker = heappop(heap)
        if task is None:  # a stage's bound: its front's tasks enter by theirs
            bounded = kept[k].members
        elif worker is None or seen != commits.get(worker, 0):
            inc = kept[k].increment(task)
            best = _best_worker(_open_list(heads, live, open_to, needs(inc)), live, heads, inc, hard)
            if best is not None:  # else it cannot place in this batch, nor can what it dominates
                heappush(heap, (-(best[0] + bonus[k]), k, kept[k].rank(task),
                                commits.get(best[1], 0), task, best[1]))
            continue
        else:
            _commit_to(worker, kept[k].increment(task), live, open_to, heads)
            commits[worker] = commits.get(worker, 0) + 1
            placed.append((task, worker))
            bounded = kept[k].place(task)  # the tasks that join the front
            if _none_open(heads, live, open_to, uses):
                break
        for j in bounded:
            heappush(heap, (-(_ceiling(top, kept[k].increment(j)) + bonus[k]), k, kept[k].rank(j),
                            UNSCORED, j, None))
    return placed


UNSCORED = -1  # a heap entry's commits-when-scored for a bound not yet scored
STAGE = -1  # a stage's bound's rank: ahead of its tasks' (a task's bound is at most its stage's)


def _largest(heads: dict[W, Head]) -> Vector:
    """The largest headroom per resource over ``heads`` (some; headrooms are never negative),
    reading each shared headroom object once (few values: an idle core's headroom is 1)."""
    distinct: list[Head] = []
    for head in heads.values():
        if not _among(head, distinct):
            distinct.append(head)
    return ceiling(distinct, len(distinct[0]))


def _ceiling(top: Vector, inc: Vector) -> float:
    """No worker scores a task above its F on a worker with the batch's largest headroom on every
    resource (``top``; F is non-decreasing in every D_r), summed as :func:`score` sums so that no
    rounding puts it below a true F."""
    total = 0.0
    for r, i in enumerate(inc):
        d = top[r]
        total += d * (d if d < i else i)  # min(i, d)
    return total
