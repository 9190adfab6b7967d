"""Declared task demands live: executors of (cores, GB), a stage's tasks' demand from its job
property, and Falcon packing against both."""
from __future__ import annotations

from collections import Counter

import pytest

from bridge.drivers.planners import make_planner
from bridge.drivers.spark.engine import ONE_SLOT, EnginePlanner, task_demand
from bridge.drivers.topology import EXECUTOR_RESOURCES, SLOT_RESOURCE, executor_spec, slot_spec
from bridge.plugin.host import PolicyHost
from bridge.protocol.messages import ExecutorAdded, StageDemand
from tests.unit.test_spark_live_engine import LIVE_POLICIES, FakeSpark, drive
from workloads.demands import DEMAND_PROP, TaskDemands

DECLARED = TaskDemands(map=(1.0, 0.75), reduce=(2.0, 0.25))


def stage(parents: tuple[int, ...] = (), props: dict[str, str] | None = None) -> StageDemand:
    return StageDemand(5, 0, 1, 4, 4, 0, {}, props if props is not None else {DEMAND_PROP: DECLARED.to_property()},
                       parents)


def executors(*memory_mb: int, cores: int = 2) -> list[ExecutorAdded]:
    return [ExecutorAdded(0, str(i), "h", cores, memory_mb=m) for i, m in enumerate(memory_mb)]


def test_executors_are_cores_and_memory_when_the_plugin_reports_their_memory() -> None:
    spec = executor_spec(executors(1024, 1024), slots=2)
    assert (spec.resources, spec.capacity, spec.node_capacity, spec.slots_per_node) == \
        (EXECUTOR_RESOURCES, (2.0, 1.0), None, 2)
    mixed = executor_spec(executors(1024, 2048), slots=2)
    assert mixed.capacity == (2.0, 2.0) and mixed.node_capacity == ((2.0, 1.0), (2.0, 2.0))
    assert executor_spec(executors(1024, 0), slots=2).resources == SLOT_RESOURCE   # one unknown: slots


def test_a_stage_asks_its_declared_demand_by_kind_else_one_slots_share() -> None:
    spec, faults = executor_spec(executors(2048), slots=2), Counter[str]()
    assert task_demand(spec, stage(parents=()), faults) == (1.0, 0.75)        # a map stage
    assert task_demand(spec, stage(parents=(3,)), faults) == (2.0, 0.25)      # a reduce stage
    assert task_demand(spec, stage(props={}), faults) == (1.0, 1.0)           # nothing declared: a slot's share
    assert task_demand(spec, None, faults) == (1.0, 1.0)                      # a task Spark placed itself
    assert not faults
    assert task_demand(slot_spec(1, 2), stage(), faults) == ONE_SLOT          # executors as slots


def test_a_demand_that_does_not_fit_an_executor_is_cut_to_it_and_counted() -> None:
    spec, faults = executor_spec(executors(512), slots=2), Counter[str]()   # 2 cores, 0.5 GB
    assert task_demand(spec, stage(parents=()), faults) == (1.0, 0.5)
    assert faults == {"cut": 1}
    assert task_demand(spec, stage(props={DEMAND_PROP: "[1, 2]"}), faults) == (1.0, 0.25)   # malformed: a share
    assert faults == {"cut": 1, "malformed": 1}


def run_falcon(declared: dict[int, TaskDemands]) -> list[list[int]]:
    """One executor of 2 cores and 1 GB, stage 1 memory-heavy and stage 2 CPU-light: the stages
    each round ran together, under Falcon."""
    spark = FakeSpark({"1": 2}, {s: (4, {DEMAND_PROP: d.to_property()}) for s, d in declared.items()})
    for ev in spark.events:
        ev["memory_mb"] = 1024
    host = PolicyHost(make_planner("falcon", {}))
    rounds = []
    for _ in range(40):
        before = len(spark.ran_on)
        spark.apply(host.handle(spark.request()))
        rounds.append(sorted(s for s, _ in spark.ran_on[before:]))
        spark.finish_all()
        if not any(spark.pending.values()) and not spark.running:
            break
    assert sorted(s for s, _ in spark.ran_on) == [1] * 4 + [2] * 4
    return [r for r in rounds if r]


def test_falcon_live_never_overcommits_an_executors_memory_and_pairs_complementary_tasks() -> None:
    rounds = run_falcon({1: TaskDemands.uniform((1.0, 0.75)), 2: TaskDemands.uniform((1.0, 0.1))})
    assert all(r.count(1) <= 1 for r in rounds)      # two 0.75 GB tasks never share 1 GB
    assert [1, 2] in rounds                           # a memory-heavy task beside a CPU one
    undeclared = run_falcon({1: TaskDemands.uniform((1.0, 0.5)), 2: TaskDemands.uniform((1.0, 0.5))})
    assert [1, 1] in undeclared or [2, 2] in undeclared   # when memory does not bind, both slots fill alike


@pytest.mark.parametrize("memory_mb", [0, 1024])
def test_the_executors_memory_crosses_the_protocol(memory_mb: int) -> None:
    from bridge.protocol.messages import parse_event

    raw = {"e": "executor_added", "t": 0, "executor": "1", "host": "h", "cores": 2, "container": "", "nm": ""}
    event = parse_event({**raw, "memory_mb": memory_mb} if memory_mb else raw)
    assert isinstance(event, ExecutorAdded) and event.memory_mb == memory_mb


@pytest.mark.parametrize("policy", [p for p in LIVE_POLICIES if p != "spark-fifo"])  # that one keeps no state
def test_every_live_policy_places_every_task_on_executors_of_cores_and_memory(policy: str) -> None:
    """With nothing declared a task is one slot's share of cores and memory, so slots bind as before."""
    spark = FakeSpark({"1": 2, "2": 2}, {3: (7, {}), 4: (5, {"schedbridge.estimate": "200"})})
    for ev in spark.events:
        ev["memory_mb"] = 2048
    host = PolicyHost(make_planner(policy, {}))
    drive(host, spark)
    assert sorted(s for s, _ in spark.ran_on) == [3] * 7 + [4] * 5
    assert isinstance(host.planner, EnginePlanner) and host.planner.world is not None
    assert host.planner.world.state.spec.capacity == (2.0, 2.0)


def test_the_planner_reports_the_stages_whose_demands_it_cut() -> None:
    """What a replay records in meta.json (`demand_faults`): a stage's 2 GB on a 1 GB executor."""
    spark = FakeSpark({"1": 2}, {1: (2, {DEMAND_PROP: TaskDemands.uniform((1.0, 2.0)).to_property()})})
    for ev in spark.events:
        ev["memory_mb"] = 1024
    host = PolicyHost(make_planner("falcon", {}))
    drive(host, spark)
    assert sorted(s for s, _ in spark.ran_on) == [1, 1]
    assert host.planner.demand_faults().get("cut", 0) >= 1
    assert make_planner("spark-fifo", {}).demand_faults() == {}
