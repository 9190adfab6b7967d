"""Psychas–Ghaderi stability examples at reduced length (fixed seed).

Fig. 3a: one unit server, sizes 0.4/0.6, geometric service (mean 100): VQS can only run two
0.4 jobs or one 0.6 job, so it supports at most 4μ/3 ≈ 0.0133 jobs/slot; at 0.014 its queue
grows while BF-J/S and VQS-BF (which pair 0.4 + 0.6, up to 0.02) stay small.
Fig. 3b: capacity 10, sizes 2/5 (2:1), deterministic 100-slot service, λ = 0.0306: BF-J/S
locks into (2, 1) whose rates (0.02, 0.01) are below λ = (0.0204, 0.0102); VQS is stable.
"""
from bridge.sim.measures import mean_queue, queue_at
from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.multires import slotted


def _run(policy: str, jobs, capacity: float):
    spec = ClusterSpec(1, 512, ("size",), (capacity,), 0.0)
    return simulate(jobs, registry.create(policy, PolicyEnv(spec, 1), registry.config_for(policy, {"J": 4})), spec)


def test_fig3a_vqs_unstable_above_two_thirds_of_0_02():
    horizon = 150_000
    over = slotted.generate(slotted.fig3a(0.014, horizon), seed=1)
    q = {p: mean_queue(_run(p, over, 1.0), horizon / 2, horizon) for p in ("vqs", "bf-js", "vqs-bf")}
    assert q["vqs"] > 25 and q["bf-js"] < 5 and q["vqs-bf"] < 5
    under = slotted.generate(slotted.fig3a(0.011, horizon), seed=1)
    assert mean_queue(_run("vqs", under, 1.0), horizon / 2, horizon) < 10


def test_fig3b_best_fit_locks_while_vqs_is_stable():
    horizon = 600_000
    jobs = slotted.generate(slotted.fig3b(0.0306, horizon), seed=1)
    bf_end, = queue_at(_run("bf-js", jobs, 10.0), [horizon])
    vqs_end, = queue_at(_run("vqs", jobs, 10.0), [horizon])
    assert bf_end > 100 and vqs_end < 40
