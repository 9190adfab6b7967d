"""Launches ahead, host side (``bridge.drivers.spark.ahead``): the plugin launches on a
``next`` prediction before asking; the host binds a launch the policy's decision confirms (a hit)
and withdraws any other, whose task the policy still owes; it stops predicting for a while for an
application whose launches ahead mostly miss (``AheadBackoff``: its rule is tested on its own, the
rest with rounds through the JSON protocol)."""
from __future__ import annotations

import json
import logging
from typing import Any

from bridge.drivers.planners import make_planner
from bridge.drivers.spark.ahead import AheadBackoff, BackoffRule
from bridge.drivers.spark.engine import EnginePlanner
from bridge.plugin.host import PolicyHost


def executor(name: str) -> dict[str, Any]:
    return {"e": "executor_added", "t": 0, "executor": name, "host": "h" + name, "cores": 1, "container": "", "nm": ""}


class Script:
    """One application on executors of one core ("1", ...), played round by round; fifo serves it."""

    def __init__(self, executors: int = 1) -> None:
        self.host = PolicyHost(make_planner("fifo", {}))
        self.round = 0
        self.executors = [executor(str(e + 1)) for e in range(executors)]

    @property
    def planner(self) -> EnginePlanner:
        assert isinstance(self.host.planner, EnginePlanner)
        return self.host.planner

    def send(self, pending: dict[int, int], events: list[dict[str, Any]] = (), launched: list[dict[str, Any]] = (),
             free: int | dict[str, int] = 0, ahead: bool = True) -> dict[str, Any]:
        """One round; ``pending``: stage -> Spark's pending tasks (a stage with none still runs);
        ``free``: executor -> free cores (a number: executor "1"'s)."""
        free = free if isinstance(free, dict) else {"1": free}
        self.round += 1
        msg = {"v": 2, "kind": "round", "app": "a", "round": self.round, "now_ms": 1000 * self.round,
               "cpus_per_task": 1, "launched": list(launched), "events": list(events), "ahead": ahead,
               "slots": [{"executor": e, "host": "h" + e, "free": n} for e, n in free.items() if n],
               "stages": [{"stage": s, "attempt": 0, "job": s, "tasks": 9, "pending": n, "running": 0,
                           "locality": {}, "props": {}, "parents": []} for s, n in sorted(pending.items())]}
        if self.round == 1:
            msg |= {"snapshot": {"executors": self.executors, "running": [], "jobs": []},
                    "conf": {"policy": "fifo", "params": {}}}
        reply = json.loads(self.host.handle(json.dumps(msg)))
        assert "error" not in reply, reply
        return reply

    def owed(self, stage: int) -> tuple[int, int]:
        """(tasks the policy owes, tasks retired) of ``stage``."""
        ledger = self.planner.world.ledger
        jobs = [ledger.job(j) for j in ledger.jobs_of(("a", stage, 0))]
        return sum(j.owed for j in jobs), sum(j.retired for j in jobs)

    def outcomes(self) -> tuple[float | None, float | None]:
        sample = self.host.metrics.registry.get_sample_value
        return tuple(sample("schedbridge_host_ahead_launches_total", {"outcome": o})  # type: ignore[return-value]
                     for o in ("hit", "miss"))

    def pauses(self) -> float | None:
        return self.host.metrics.registry.get_sample_value("schedbridge_host_ahead_pauses_total")


def task(kind: str, t: int, stage: int, **end: Any) -> dict[str, Any]:
    event = {"e": kind, "t": 0, "task": t, "stage": stage, "attempt": 0, "index": t, "executor": "1",
             "host": "h1", "speculative": False}
    return event | ({"duration_ms": 1, "reason": end.get("reason", "Success")} if kind == "task_end" else {})


def launch(stage: int, *tasks: int, ahead: bool = False) -> dict[str, Any]:
    return {"stage": stage, "attempt": 0, "executor": "1", "tasks": list(tasks)} | (
        {"ahead": True} if ahead else {})


def running_stage_3(s: Script) -> dict[str, Any]:
    """Stage 3 (two tasks) granted the one core, its first task launched as task 0: the reply."""
    assert s.send({3: 2}, free=1)["assign"] == [{"stage": 3, "attempt": 0, "executor": "1", "slots": 1}]
    return s.send({3: 1}, [task("task_start", 0, 3)], [launch(3, 0)])


def test_next_predicts_the_executors_last_stage_only_when_the_plugin_launches_ahead() -> None:
    s = Script()
    assert s.send({3: 2}, free=1, ahead=False).keys() >= {"assign"}
    assert "next" not in s.send({3: 1}, [task("task_start", 0, 3)], [launch(3, 0)], ahead=False)
    assert s.send({3: 1})["next"] == [{"executor": "1", "stage": 3, "attempt": 0}]
    assert "next" not in s.send({3: 1}, ahead=False)


def test_a_hit_is_bound_to_the_policys_grant_and_retires_nothing() -> None:
    s = Script()
    assert running_stage_3(s)["next"] == [{"executor": "1", "stage": 3, "attempt": 0}]
    # task 0 ends; the plugin launches stage 3's last task on the freed core at once (Spark: none pending)
    reply = s.send({3: 0}, [task("task_end", 0, 3), task("task_start", 1, 3)], [launch(3, 1, ahead=True)])
    ledger = s.planner.world.ledger
    assert ledger.knows(1) and not ledger.is_foreign(1)   # the policy's task, not one Spark placed itself
    assert s.owed(3) == (0, 0)                            # launched, not retired
    assert not reply["assign"] and "withdraw" not in reply and "next" not in reply  # stage 3 owes nothing
    assert s.outcomes() == (1.0, 0.0)
    s.send({}, [task("task_end", 1, 3)])
    assert s.planner.job_specs == {}                      # its end finished the policy's task


def test_the_hosts_log_of_placements_lists_the_hits_beside_the_grants(caplog) -> None:
    s = Script()
    with caplog.at_level(logging.DEBUG, logger="bridge.plugin.host.placements"):
        running_stage_3(s)
        s.send({3: 0}, [task("task_end", 0, 3), task("task_start", 1, 3)], [launch(3, 1, ahead=True)])
    lines = [r.getMessage() for r in caplog.records if r.name == "bridge.plugin.host.placements"]
    assert lines == ["schedbridge host: a round 1: s3.0->1x1", "schedbridge host: a round 3: ahead s3.0->1x1"]


def test_a_miss_is_withdrawn_and_the_policys_own_grant_waits_for_the_core() -> None:
    s = Script()
    running_stage_3(s)
    s.send({3: 1, 4: 1})  # stage 4 arrives behind stage 3 (fifo)
    # task 0 ends; the plugin launches stage 4 there (a wrong guess): fifo gives the core to stage 3
    reply = s.send({3: 1, 4: 0}, [task("task_end", 0, 3)], [launch(4, 7, ahead=True)])
    assert reply["withdraw"] == [7]
    assert reply["assign"] == [{"stage": 3, "attempt": 0, "executor": "1", "slots": 1}]
    assert s.owed(4) == (1, 0)              # Spark's pending 0 does not retire the withdrawn launch's task
    assert s.outcomes() == (0.0, 1.0)
    # Spark killed it (its start reported late) and launched the grant; stage 4 waits for the core
    s.send({3: 0, 4: 1}, [task("task_start", 7, 4), task("task_end", 7, 4, reason="TaskKilled"),
                          task("task_start", 8, 3)], [launch(3, 8)])
    ledger = s.planner.world.ledger
    assert not ledger.is_foreign(7) and not ledger.knows(7) and ledger.knows(8)
    assert s.owed(4) == (1, 0)
    reply = s.send({4: 1}, [task("task_end", 8, 3)], free=1)
    assert reply["assign"] == [{"stage": 4, "attempt": 0, "executor": "1", "slots": 1}]  # the killed task's core


def test_a_hit_that_ended_before_the_round_frees_its_core() -> None:
    s = Script()
    running_stage_3(s)
    s.send({3: 1, 4: 1})
    events = [task("task_end", 0, 3), task("task_start", 1, 3), task("task_end", 1, 3)]
    reply = s.send({4: 1}, events, [launch(3, 1, ahead=True)], free=1)
    assert not s.planner.world.ledger.knows(1) and s.owed(3) == (0, 0)
    assert reply["assign"] == [{"stage": 4, "attempt": 0, "executor": "1", "slots": 1}]
    assert s.outcomes() == (1.0, 0.0)


def test_a_core_refilled_twice_between_two_requests_is_two_hits() -> None:
    """A short task launched on a prediction ends, and the plugin refills its core again before the
    next request: the second launch took the core the first one's end freed, so it is verified
    after that end (in launch order), not withdrawn."""
    s = Script()
    assert s.send({3: 4}, free=1)["assign"] == [{"stage": 3, "attempt": 0, "executor": "1", "slots": 1}]
    s.send({3: 3}, [task("task_start", 0, 3)], [launch(3, 0)])
    events = [task("task_end", 0, 3), task("task_start", 1, 3), task("task_end", 1, 3), task("task_start", 2, 3)]
    reply = s.send({3: 1}, events, [launch(3, 1, ahead=True), launch(3, 2, ahead=True)])
    assert "withdraw" not in reply and not reply["assign"]
    assert s.outcomes() == (2.0, 0.0)
    ledger = s.planner.world.ledger
    assert ledger.knows(2) and not ledger.knows(1) and s.owed(3) == (1, 0)


def test_a_launch_ahead_retires_no_grant_the_policy_made_elsewhere() -> None:
    """Spark no longer counts the launched task pending; counted as owed anyway, the grant of the
    stage waiting on executor 2 stays the policy's (not retired as if Spark no longer needed it)."""
    s = Script(executors=2)
    both = [{"stage": 3, "attempt": 0, "executor": e, "slots": 1} for e in ("1", "2")]
    assert s.send({3: 3}, free={"1": 1, "2": 1})["assign"] == both
    s.send({3: 2}, [task("task_start", 0, 3)], [launch(3, 0)])  # executor 2's grant not launched yet
    reply = s.send({3: 1}, [task("task_end", 0, 3), task("task_start", 5, 3)], [launch(3, 5, ahead=True)])
    assert s.owed(3) == (1, 0) and s.planner.world.ledger.knows(5)
    assert reply["assign"] == both[1:] and "withdraw" not in reply


def test_a_withdrawn_launch_whose_start_spark_reports_late_holds_no_core() -> None:
    """A launch of a stage the policy has no job for is a miss; its task_start, heard only with
    its kill, does not make it a task Spark placed itself (which would hold the core for good)."""
    s = Script()
    s.send({3: 1}, free=1)
    s.send({3: 0}, [task("task_start", 0, 3)], [launch(3, 0)])
    assert s.send({}, [task("task_end", 0, 3)], [launch(9, 7, ahead=True)])["withdraw"] == [7]
    s.send({}, [task("task_start", 7, 9), task("task_end", 7, 9, reason="TaskKilled")], free=1)
    assert s.send({5: 1}, free=1)["assign"] == [{"stage": 5, "attempt": 0, "executor": "1", "slots": 1}]


RULE = BackoffRule(window=4, pause_misses=3, first_pause=5, max_pause=20)
HIT, MISS = True, False


def test_a_run_of_misses_pauses_predictions_for_some_task_ends_then_they_resume() -> None:
    b = AheadBackoff(RULE)
    assert b.verified("a", [MISS, MISS]) == 0 and not b.paused("a")
    assert b.verified("a", [MISS]) == 5 and b.paused("a") and not b.paused("other")
    b.ended("a", 4)
    assert b.paused("a")
    b.ended("a", 1)
    assert not b.paused("a")


def test_hits_keep_predictions_on() -> None:
    """Misses now and then, never the most of the window, pause nothing (hawk's or eagle's 7-8 of 9)."""
    b = AheadBackoff(RULE)
    assert b.verified("a", [HIT, MISS, HIT, MISS, HIT, HIT, MISS, HIT, MISS] * 5) == 0
    assert not b.paused("a")
    assert b.verified("a", [MISS]) == 5  # 3 misses of the last 4, more than its hits


def test_a_pause_doubles_while_misses_persist_up_to_the_cap_and_a_window_of_hits_starts_over() -> None:
    b = AheadBackoff(RULE)
    pauses = []
    for _ in range(5):
        pauses.append(b.verified("a", [MISS] * 3))  # the first misses; after a pause, one probe pauses again
        b.ended("a", 100)
    assert pauses == [5, 10, 20, 20, 20]
    assert b.verified("a", [HIT] * 3 + [MISS]) == 0  # 1 miss of 4: predictions stay on
    assert b.verified("a", [HIT] * 4 + [MISS] * 3) == 5


def test_misses_of_launches_made_before_a_pause_do_not_lengthen_it() -> None:
    b = AheadBackoff(RULE)
    assert b.verified("a", [MISS] * 3) == 5
    assert b.verified("a", [MISS] * 2) == 0
    b.ended("a", 5)
    assert not b.paused("a")


def test_an_applications_record_goes_with_it() -> None:
    b = AheadBackoff(RULE)
    b.verified("a", [MISS] * 3)
    b.forget("b")
    assert b.paused("a")
    b.forget("a")
    assert not b.paused("a") and b.verified("a", [MISS] * 3) == 5  # a first pause again


class Misses:
    """fifo runs stage 3 (100 tasks) on the one core; stage 4 waits behind it. Each task end either
    refills the core with stage 3 by the policy's grant, or with stage 4 on a guess (a miss: the
    host withdraws it and the grant follows)."""

    def __init__(self) -> None:
        self.s = Script()
        self.s.send({3: 100}, free=1)
        self.pending, self.running, self.killed = 99, 0, 1000
        assert self.s.send({3: 99}, [task("task_start", 0, 3)], [launch(3, 0)])["next"]
        self.s.send({3: 99, 4: 1})

    def end(self, guess: bool = False) -> dict[str, Any]:
        """The running task ends (and the plugin launches stage 4 on the freed core if ``guess``);
        the policy's grant of stage 3 then runs the next task. The reply to the end's round."""
        s, nxt = self.s, self.running + 1
        reply = s.send({3: self.pending, 4: 0 if guess else 1}, [task("task_end", self.running, 3)],
                       [launch(4, self.killed, ahead=True)] if guess else [])
        assert reply["assign"] == [{"stage": 3, "attempt": 0, "executor": "1", "slots": 1}]
        assert reply.get("withdraw", []) == ([self.killed] if guess else [])
        kill = [task("task_start", self.killed, 4), task("task_end", self.killed, 4, reason="TaskKilled")]
        self.pending -= 1
        s.send({3: self.pending, 4: 1}, (kill if guess else []) + [task("task_start", nxt, 3)], [launch(3, nxt)])
        self.killed += guess
        self.running = nxt
        return reply


def test_the_host_stops_predicting_for_an_application_whose_launches_ahead_miss_and_tries_again_later() -> None:
    m = Misses()
    assert all("next" in m.end(guess=True) for _ in range(2))
    assert "next" not in m.end(guess=True) and m.s.pauses() == 1.0  # 3 misses of 3
    first = BackoffRule().first_pause
    replies = [m.end() for _ in range(first)]  # task ends by the policy's grants (withdrawn ones do not count)
    assert ["next" in r for r in replies] == [False] * (first - 1) + [True]
    assert m.s.outcomes() == (0.0, 3.0)
    assert "next" not in m.end(guess=True) and m.s.pauses() == 2.0  # one more miss: a pause twice as long
    assert sum("next" in m.end() for _ in range(first)) == 0
