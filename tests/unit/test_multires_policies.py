"""Falcon-family behaviour in the simulator: determinism, δ, dependency awareness."""
from bridge.sim.measures import measure
from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.multires import dag_jobs

SPEC = ClusterSpec(4, 6, dag_jobs.RESOURCES, dag_jobs.WORKER, 0.0005)
JOBS = dag_jobs.generate(dag_jobs.DagSpec(12, 50.0), seed=3)


def _run(policy: str, record: bool = False, **settings):
    pol = registry.create(policy, PolicyEnv(SPEC, 5), registry.config_for(policy, settings))
    return simulate(JOBS, pol, SPEC, switch_cost=0.002, record=record)


def test_same_seed_same_decisions():
    a, b = _run("falcon", record=True), _run("falcon", record=True)
    assert a.log.records == b.log.records and a.log.records


def test_larger_delta_never_preempts_more():
    counts = [measure(_run("falcon", delta=d)).preemptions for d in (0.0, 0.35, 0.8)]
    assert counts[0] >= counts[1] >= counts[2] and counts[0] > counts[2]


def test_falcon_enforces_precedence_while_oblivious_baselines_disorder():
    assert measure(_run("falcon")).disorders == 0
    assert all(measure(_run(p)).disorders > 0 for p in ("natjam", "amoeba", "srpt-preempt", "snb"))


def _most_suspended_on_a_node(result) -> int:
    from policies.framework.api import Resume, Suspend
    held: dict[int, int] = {}
    most = 0
    for _ev, decisions in result.log.records:
        for d in decisions:
            if isinstance(d, (Suspend, Resume)):
                held[d.node] = held.get(d.node, 0) + (1 if isinstance(d, Suspend) else -1)
                most = max(most, held[d.node])
    return most


def test_a_worker_holds_at_most_max_suspended_tasks_as_live_executors_allow():
    assert _most_suspended_on_a_node(_run("falcon", record=True, delta=0.0)) > 1   # the paper's: no limit
    capped = _run("falcon", record=True, delta=0.0, max_suspended=1)
    assert _most_suspended_on_a_node(capped) == 1 and capped.unfinished == []


def test_live_each_allowed_suspended_task_is_an_extra_executor_and_no_limit_is_refused():
    import pytest
    from bridge.drivers.node_engine import live_params
    for policy in ("falcon", "natjam", "amoeba", "snb", "srpt-preempt"):
        entry = registry.default_registry().get(policy)
        live = registry.config_for(policy, live_params(policy, {}))
        assert entry.preempts.extra_tasks(live) == 1
        assert entry.preempts.extra_tasks(registry.config_for(policy, {"max_suspended": "3"})) == 3
        with pytest.raises(ValueError, match="max_suspended=0 .no limit. cannot run live"):
            entry.preempts.extra_tasks(registry.config_for(policy, {}))
