"""Launches ahead, host side (``bridge.drivers.spark.ahead``): the plugin launches on a
``next`` prediction before asking; the host binds a launch the policy's decision confirms (a hit)
and withdraws any other, whose task the policy still owes. Rounds go through the JSON protocol."""
from __future__ import annotations

import json
from typing import Any

from bridge.drivers.planners import make_planner
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
