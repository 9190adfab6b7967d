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
ended, which Spark no longer counts as pending although the policy still owes their tasks.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from bridge.drivers.ledger import Ledger, StageKey
from bridge.protocol.messages import Launched, OfferRound, Prediction


def launches_ahead(rnd: OfferRound) -> dict[int, Launched]:
    """The round's launches ahead: Spark task id -> its report."""
    return {task: rep for rep in rnd.launched if rep.ahead for task in rep.tasks}


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
