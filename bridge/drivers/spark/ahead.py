"""Launches ahead: the plugin launches before it asks, and the policy's decision still rules.

A round trip per Spark task end costs Spark's scheduler thread a millisecond or two. So a reply
predicts, per executor, the stage a freed slot of it may launch at once (``Placement.next``: the
stage its last policy task was of, while the policy still owes tasks of it); the plugin launches
on the prediction and reports the launch as ``ahead`` in its next round. The engine planner
verifies each one after the policy has heard the round's task ends: if the policy granted that
stage a slot of that executor, the launch is bound to that grant (a hit: the policy's decision,
taken earlier in real time); else it is withdrawn (``Placement.withdraw``: Spark kills and re-queues
the task) and the policy's own grant waits for the core. Every task still runs where the policy
placed it; launching ahead only moves hits earlier.

This module keeps one world's part of it: what to predict, and the launches withdrawn but not
ended, which Spark no longer counts as pending although the policy still owes their tasks; and,
per application across its worlds, when to stop predicting (:class:`AheadBackoff`): a policy that
decides elsewhere than at task ends (at its timers, or giving freed cores to other stages) would
otherwise have most launches ahead killed.
"""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bridge.drivers.ledger import Ledger, StageKey
from bridge.protocol.messages import Grant, Launched, OfferRound, Prediction


def launches_ahead(rnd: OfferRound) -> dict[int, Launched]:
    """The round's launches ahead: Spark task id -> its report."""
    return {task: rep for rep in rnd.launched if rep.ahead for task in rep.tasks}


def confirmed(guesses: Mapping[int, Launched], hits: Sequence[bool]) -> tuple[Grant, ...]:
    """The launches ahead the policy's decisions confirmed (``hits``, in ``guesses``' order), per
    stage and executor: its placements as grants, for the host's log of decisions."""
    count = Counter((rep.stage, rep.attempt, rep.executor)
                    for rep, hit in zip(guesses.values(), hits, strict=True) if hit)
    return tuple(Grant(stage, attempt, executor, n) for (stage, attempt, executor), n in count.items())


class AheadLaunches:
    """One world's record of launches ahead."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], StageKey] = {}  # (app, executor) -> the stage of its last bound launch
        self.withdrawn: dict[int, StageKey] = {}         # withdrawn Spark task, not ended yet -> its stage

    def bound(self, app: str, executor: str, key: StageKey) -> None:
        """A task of stage ``key`` was bound on ``app``'s ``executor`` (a grant's launch, or a hit)."""
        self.last[(app, executor)] = key

    def withdraw(self, spark_task: int, key: StageKey) -> None:
        self.withdrawn[spark_task] = key

    def ended(self, spark_task: int) -> bool:
        """A Spark task ended: True if it was a withdrawn launch (nothing more to do)."""
        return self.withdrawn.pop(spark_task, None) is not None

    def is_withdrawn(self, spark_task: int) -> bool:
        return spark_task in self.withdrawn

    def unbound(self, app: str, guesses: Mapping[int, Launched]) -> Counter[StageKey]:
        """Per stage, its tasks Spark runs on a launch ahead that no grant holds: the round's
        launches (before they are verified) and the withdrawn ones still running. Spark does not
        count them pending, yet the policy owes them."""
        count = Counter((app, rep.stage, rep.attempt) for rep in guesses.values())
        count.update(key for key in self.withdrawn.values() if key[0] == app)
        return count

    def predictions(self, app: str, ledger: Ledger) -> tuple[Prediction, ...]:
        """Per executor of ``app``, the stage of its last bound launch, if the policy still owes tasks of it."""
        return tuple(Prediction(executor, key[1], key[2]) for (a, executor), key in sorted(self.last.items())
                     if a == app and sum(ledger.job(j).owed for j in ledger.jobs_of(key)) > 0)


@dataclass(frozen=True, slots=True)
class BackoffRule:
    """When an application's launches ahead miss too often to predict for it (docs/launch-ahead.md).

    A miss costs a killed task and its re-run; a pause costs only what launching ahead saves, a
    round trip per task end, so pauses are long and a probe after one is a single launch."""

    window: int = 8          # the application's last verified launches ahead that the rule weighs
    pause_misses: int = 3    # a miss pauses predictions if the window then holds this many misses or more,
                             # and more misses than hits
    first_pause: int = 32    # the application's task ends a first pause lasts; each further one doubles,
    max_pause: int = 1024    # up to this, until a window of hits in a row starts over at first_pause


DEFAULT_RULE = BackoffRule()


class _Record:
    """One application's recent launches ahead and its pause."""

    __slots__ = ("recent", "pause", "left")

    def __init__(self, rule: BackoffRule) -> None:
        self.recent: deque[bool] = deque(maxlen=rule.window)  # True: a hit
        self.pause = rule.first_pause  # the next pause's length, in task ends
        self.left = 0                  # task ends until predictions resume


class AheadBackoff:
    """Per application, whether the host predicts for it: not while a pause its misses started lasts."""

    def __init__(self, rule: BackoffRule = DEFAULT_RULE) -> None:
        self.rule = rule
        self._apps: dict[str, _Record] = {}

    def ended(self, app: str, tasks: int) -> None:
        """``tasks`` of ``app``'s tasks ended (launches withdrawn aside): a pause runs down by them."""
        if (rec := self._apps.get(app)) is not None:
            rec.left = max(rec.left - tasks, 0)

    def verified(self, app: str, hits: Iterable[bool]) -> int:
        """``app``'s launches ahead were verified, in launch order (True: a hit). Returns the
        length of the pause they start (0: none; a pause in progress is not lengthened)."""
        rule = self.rule
        rec = self._apps.get(app)
        started = 0
        for hit in hits:
            if rec is None:
                rec = self._apps[app] = _Record(rule)
            rec.recent.append(hit)
            misses = rec.recent.count(False)
            if hit and misses == 0 and len(rec.recent) == rule.window:
                rec.pause = rule.first_pause
            elif not hit and not rec.left and misses >= rule.pause_misses and 2 * misses > len(rec.recent):
                started = rec.left = rec.pause
                rec.pause = min(2 * rec.pause, rule.max_pause)
        return started

    def paused(self, app: str) -> bool:
        rec = self._apps.get(app)
        return rec is not None and rec.left > 0

    def forget(self, app: str) -> None:
        self._apps.pop(app, None)
