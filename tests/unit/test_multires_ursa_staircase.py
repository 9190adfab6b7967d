"""Ursa's §5.3 staircase is deterministic: EJF with monotasks reproduces the closed form."""
from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.multires import staircase

SPEC = ClusterSpec(4, 4, staircase.RESOURCES, staircase.capacity(2, 2), 0.0)


def _jcts(policy: str, jobs: int, monotasks: bool) -> list[float]:
    result = simulate(staircase.generate(jobs, 8, monotasks=monotasks),
                      registry.create(policy, PolicyEnv(SPEC, 1)), SPEC)
    return [result.log.job_finish[j] for j in range(jobs)]


def test_monotask_staircase_matches_closed_form():
    assert _jcts("ursa", 6, True) == [40.0, 44.0, 80.0, 84.0, 120.0, 124.0]
    assert [staircase.ideal_jct(k) for k in range(1, 7)] == [40.0, 44.0, 80.0, 84.0, 120.0, 124.0]


def test_executor_style_tasks_serialise_jobs():
    # holding the core through the shuffle: one job at a time, 40 s each
    assert _jcts("capacity", 4, False) == [40.0, 80.0, 120.0, 160.0]


def test_peak_demand_baselines_place_less_than_algorithm1():
    """Table 4's mechanism: reserving a task's peak (a core and a network slot) until it ends
    wastes what monotasks release; ignoring network (Tetris2) wastes less than Tetris."""
    from bridge.sim.measures import measure
    from workloads.multires import tpch_shape

    spec = ClusterSpec(2, 12, tpch_shape.RESOURCES, (8.0, 4.0, 64.0), 0.0)
    jobs = tpch_shape.generate(6, 4.0, seed=1)
    makespan = {p: measure(simulate(jobs, registry.create(p, PolicyEnv(spec, 1)), spec)).makespan
                for p in ("ursa", "tetris2", "tetris")}
    assert makespan["ursa"] < makespan["tetris2"] < makespan["tetris"]
