"""Ursa's §5.3 staircase is deterministic: EJF with monotasks reproduces the closed form."""
from bridge.sim.engine import simulate
from policies import registry
from policies.api import ClusterSpec, PolicyEnv
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
