"""Falcon-family behaviour in the simulator: determinism, δ, dependency awareness."""
from bridge.sim.measures import measure
from bridge.sim.engine import simulate
from policies import registry
from policies.api import ClusterSpec, PolicyEnv
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
