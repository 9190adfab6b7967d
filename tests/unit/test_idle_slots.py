"""Idle slot-seconds from small synthetic event logs whose answer is worked out by hand in each test.

The events carry only the fields Spark 4.3 writes that the measure reads, with Spark's own names."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bridge.apps.report.idle_slots import EventLogError, integrate, read
from bridge.drivers.planners import make_planner
from bridge.plugin.host import PolicyHost


def app_start(t: int) -> dict:
    return {"Event": "SparkListenerApplicationStart", "App Name": "t", "App ID": "app-1", "Timestamp": t}


def app_end(t: int) -> dict:
    return {"Event": "SparkListenerApplicationEnd", "Timestamp": t}


def env(task_cpus: int | None = None, pairs: bool = False) -> dict:
    props = {"spark.app.name": "t"} | ({"spark.task.cpus": str(task_cpus)} if task_cpus is not None else {})
    return {"Event": "SparkListenerEnvironmentUpdate",
            "Spark Properties": [list(kv) for kv in props.items()] if pairs else props}


def executor(t: int, ex: str, cores: int) -> dict:
    return {"Event": "SparkListenerExecutorAdded", "Timestamp": t, "Executor ID": ex,
            "Executor Info": {"Host": "h", "Total Cores": cores}}


def executor_removed(t: int, ex: str) -> dict:
    return {"Event": "SparkListenerExecutorRemoved", "Timestamp": t, "Executor ID": ex, "Removed Reason": "x"}


def submitted(t: int, stage: int, tasks: int, attempt: int = 0) -> dict:
    return {"Event": "SparkListenerStageSubmitted",
            "Stage Info": {"Stage ID": stage, "Stage Attempt ID": attempt, "Number of Tasks": tasks,
                           "Submission Time": t}}


def completed(t: int, stage: int, attempt: int = 0) -> dict:
    return {"Event": "SparkListenerStageCompleted",
            "Stage Info": {"Stage ID": stage, "Stage Attempt ID": attempt, "Submission Time": 0,
                           "Completion Time": t}}


def start(t: int, stage: int, index: int, task_id: int, ex: str = "1") -> dict:
    return {"Event": "SparkListenerTaskStart", "Stage ID": stage, "Stage Attempt ID": 0,
            "Task Info": {"Task ID": task_id, "Index": index, "Attempt": 0, "Launch Time": t, "Executor ID": ex,
                          "Finish Time": 0}}


def end(t: int, stage: int, index: int, task_id: int, reason: str = "Success") -> dict:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0,
            "Task End Reason": {"Reason": reason},
            "Task Info": {"Task ID": task_id, "Index": index, "Attempt": 0, "Launch Time": 0, "Finish Time": t}}


def one_stage_three_tasks_two_slots() -> list[dict]:
    """One 2-core executor from 1 s; a 3-task stage submitted at 2 s; tasks at 3-5, 4-7 and 6-8 s."""
    return [env(), app_start(0), executor(1000, "1", 2), submitted(2000, 0, 3),
            start(3000, 0, 0, 0), start(4000, 0, 1, 1), end(5000, 0, 0, 0), start(6000, 0, 2, 2),
            end(7000, 0, 1, 1), end(8000, 0, 2, 2), completed(8000, 0), app_end(10000)]


def test_idle_is_free_slots_capped_by_pending_tasks_integrated_over_time() -> None:
    # 2-3 s: 2 free, 3 pending -> 2; 3-4 s: 1 free, 2 pending -> 1; 4-5 s: none free;
    # 5-6 s: 1 free, 1 pending -> 1; 6-7 s: none free; 7-8 s: 1 free, nothing pending -> 0.
    result = integrate(one_stage_three_tasks_two_slots())
    assert result.idle_slot_s == pytest.approx(4.0)
    assert result.busy_slot_s == pytest.approx(1 + 2 + 1 + 2 + 1)
    # pending: 3 (2-3 s) + 2 (3-4) + 1 (4-5) + 1 (5-6) = 7 task-seconds
    assert result.pending_task_s == pytest.approx(7.0)
    assert (result.runtime_s, result.max_slots, result.tasks, result.app_id) == (10.0, 2, 3, "app-1")


def test_no_idle_without_pending_tasks_or_without_executors() -> None:
    # The stage waits 1-3 s with no executor at all (nothing free), then runs its one task at once.
    log = [app_start(0), submitted(1000, 0, 1), executor(3000, "1", 4), start(3000, 0, 0, 0),
           end(4000, 0, 0, 0), completed(4000, 0), app_end(9000)]
    result = integrate(log)
    assert result.idle_slot_s == 0.0 and result.pending_task_s == pytest.approx(2.0)


def test_slots_are_cores_divided_by_task_cpus_from_either_property_shape() -> None:
    # task.cpus 2: a 4-core executor has 2 slots, a 3-core one 1 slot; 5 pending tasks for 1 s -> 3.
    for pairs in (False, True):
        log = [env(task_cpus=2, pairs=pairs), app_start(0), executor(0, "1", 4), executor(0, "2", 3),
               submitted(1000, 0, 5), completed(2000, 0), app_end(2000)]
        result = integrate(log)
        assert (result.idle_slot_s, result.max_slots) == (pytest.approx(3.0), 3)
    # the same when spark.task.cpus arrives after the executors registered
    log = [app_start(0), executor(0, "1", 4), executor(0, "2", 3), env(task_cpus=2),
           submitted(1000, 0, 5), completed(2000, 0), app_end(2000)]
    assert integrate(log).idle_slot_s == pytest.approx(3.0)


def test_a_failed_task_is_pending_again_and_a_removed_executor_frees_nothing() -> None:
    # 1 slot per executor. Task 0 fails at 2 s and is relaunched at 3.5 s: 1.5 slot-s idle.
    # Executor 2 (idle, 1 slot) is removed at 1 s, so 0-1 s has 2 free slots but only... nothing
    # pending before 1 s: the stage is submitted at 1 s, when executor 1 takes the task at once.
    log = [app_start(0), executor(0, "1", 1), executor(0, "2", 1), executor_removed(1000, "2"),
           submitted(1000, 0, 1), start(1000, 0, 0, 0), end(2000, 0, 0, 0, reason="ExceptionFailure"),
           start(3500, 0, 0, 1), end(4000, 0, 0, 1), completed(4000, 0), app_end(4000)]
    result = integrate(log)
    assert result.idle_slot_s == pytest.approx(1.5) and result.tasks == 2


def test_events_are_ordered_by_their_own_times_not_by_log_order() -> None:
    # The listener bus delivers task 0's end (at 5 s) after task 2's start (at 5 s) and after
    # task 1's start (at 4 s): measured by the log's times, as in the first test with 2 starting at 5 s.
    log = [env(), app_start(0), executor(1000, "1", 2), submitted(2000, 0, 3),
           start(3000, 0, 0, 0), start(4000, 0, 1, 1), start(5000, 0, 2, 2), end(5000, 0, 0, 0),
           end(7000, 0, 1, 1), end(8000, 0, 2, 2), completed(8000, 0), app_end(10000)]
    # 2-3 s: 2; 3-4 s: 1; afterwards no slot free while anything is pending.
    assert integrate(log).idle_slot_s == pytest.approx(3.0)


def test_a_task_of_a_completed_stage_keeps_its_slot() -> None:
    # Stage 0 completes at 2 s while a copy of its task runs on until 4 s on the only slot; stage
    # 1 (1 task) is submitted at 2 s and waits for that slot without any slot being free: 0 idle.
    log = [app_start(0), executor(0, "1", 1), submitted(0, 0, 1), start(0, 0, 0, 0), completed(2000, 0),
           submitted(2000, 1, 1), end(4000, 0, 0, 0, reason="TaskKilled"), start(4500, 1, 0, 1),
           end(5000, 1, 0, 1), completed(5000, 1), app_end(5000)]
    result = integrate(log)
    assert result.idle_slot_s == pytest.approx(0.5)  # 4-4.5 s: the freed slot before stage 1's launch


def test_two_stages_share_the_free_slots() -> None:
    # 4 slots; stages of 1 and 2 tasks submitted at 0 s, each task starts at 1 s: 3 idle for 1 s.
    log = [app_start(0), executor(0, "1", 4), submitted(0, 0, 1), submitted(0, 1, 2),
           start(1000, 0, 0, 0), start(1000, 1, 0, 1), start(1000, 1, 1, 2),
           end(2000, 0, 0, 0), end(2000, 1, 0, 1), end(2000, 1, 1, 2), completed(2000, 0), completed(2000, 1),
           app_end(2000)]
    assert integrate(log).idle_slot_s == pytest.approx(3.0)


def test_read_a_log_file_cut_in_the_middle_of_a_line(tmp_path: Path) -> None:
    lines = [json.dumps(e) for e in one_stage_three_tasks_two_slots()[:-3]]  # up to task 1's end at 7 s
    path = tmp_path / "app-1.inprogress"
    path.write_text("\n".join(lines) + '\n{"Event": "SparkListenerTaskEnd", "Stage', encoding="utf-8")
    result = read(path)
    assert result.idle_slot_s == pytest.approx(4.0) and result.runtime_s == 7.0


def test_a_file_that_is_not_an_event_log_is_refused_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"hello": 1}\n', encoding="utf-8")
    with pytest.raises(EventLogError, match="notes.json: no SparkListenerApplicationStart"):
        read(path)
    bad = tmp_path / "bad"
    bad.write_text(json.dumps(app_start(0)) + "\n" + json.dumps({"Event": "SparkListenerStageSubmitted"}) + "\n")
    with pytest.raises(EventLogError, match="bad: malformed event"):
        read(bad)
    cpus = tmp_path / "cpus"
    cpus.write_text(json.dumps(env(task_cpus=0)) + "\n")
    with pytest.raises(EventLogError, match="spark.task.cpus must be at least 1"):
        read(cpus)


def test_the_benchmark_submits_stock_and_policies_as_users_do(tmp_path: Path) -> None:
    from bridge.apps.report.idle_bench import command, program_args

    stock = command("stock", tmp_path, tmp_path / "s.json", executors=2, parallelism=4, host_log=tmp_path / "h")
    hawk = command("hawk", tmp_path, tmp_path / "s.json", executors=2, parallelism=4, host_log=tmp_path / "h")
    assert stock[1:3] == ["--master", "yarn"] and not any("schedbridge" in arg for arg in stock)
    assert hawk[1:4] == ["submit", "--master", "spark-schedbridge://yarn"]
    assert "spark.schedbridge.policy=hawk" in hawk and f"spark.schedbridge.stats.file={tmp_path / 's.json'}" in hawk
    assert f"spark.schedbridge.host.log={tmp_path / 'h'}" in hawk
    for cmd in (stock, hawk):
        assert "spark.eventLog.compress=false" in cmd and "spark.default.parallelism=4" in cmd
    script, data, iterations = program_args("pagerank")
    assert Path(script).is_file() and data.startswith("file://") and iterations == "10"


def test_the_table_gives_each_policys_median_idle_over_stocks() -> None:
    from bridge.apps.report.idle_bench import Run, table

    def run(kind: str, idle: float, held: int = 0, rule: float = 0.0) -> Run:
        return Run("tc", kind, 1, True, 10.0, 9.0, idle, 5.0, 4, {"held_rounds": held} if kind != "stock" else {}, "",
                   rule)

    lines = table([run("stock", 2.0), run("stock", 4.0), run("fifo", 9.0, held=3), run("fifo", 12.0, held=5, rule=4.0)])
    assert lines[1].split() == ["tc", "stock", "9.0/9.0", "2.0/4.0", "-", "1.00", "-", "-"]
    assert lines[2].split() == ["tc", "fifo", "9.0/9.0", "9.0/12.0", "0.0/4.0", "2.83", "3/5", "0"]


def test_the_rule_held_figure_is_read_from_the_hosts_detach_line(tmp_path: Path) -> None:
    from bridge.apps.report.idle_bench import rule_held
    from bridge.plugin.host import log as host_log

    log = tmp_path / "host.log"
    handler = logging.FileHandler(log)
    host_log.addHandler(handler)
    host_log.setLevel(logging.INFO)
    try:
        host = PolicyHost(make_planner("fifo"))
        host.held.record("app-1", 1_000, 2)
        host.held.record("app-1", 3_500, 0)
        host.handle(json.dumps({"v": 2, "kind": "detach", "app": "app-1"}))
    finally:
        host_log.removeHandler(handler)
        handler.close()
    assert rule_held(log) == pytest.approx(5.0)
