"""``fair``, the simulator's model of Spark's FAIR scheduler: the order in which pools get slots."""
from __future__ import annotations

from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.model import Job


def starts(policy: str, jobs: list[Job], slots: int) -> dict[int, list[float]]:
    """Each job's task start times, sorted, on one node of ``slots`` slots without network delay."""
    spec = ClusterSpec(1, slots, network_delay=0.0)
    result = simulate(jobs, registry.create(policy, PolicyEnv(spec, 0)), spec)
    assert not result.unfinished
    lg = result.log
    out: dict[int, list[float]] = {}
    for job, start in zip(lg.seg_job, lg.seg_start):
        out.setdefault(int(job), []).append(round(float(start), 6))
    return {j: sorted(s) for j, s in out.items()}


def test_a_short_job_gets_the_next_free_slot_from_a_long_one_even_behind_its_later_stage() -> None:
    """Jobs 0 and 1 are two stages of one user job (unit 0), which holds both slots; job 2, its own
    pool, arrives after job 1 and still gets the first slot that frees: its pool runs nothing."""
    jobs = [Job(0, 0.0, (10.0, 12.0)), Job(1, 1.0, (10.0,), unit=0), Job(2, 2.0, (1.0,))]
    assert starts("fair", jobs, 2) == {0: [0.0, 0.0], 1: [11.0], 2: [10.0]}
    assert starts("fifo", jobs, 2)[2] == [12.0]  # FIFO keeps it behind job 1


def test_two_pools_alternate_on_the_slots_as_they_free() -> None:
    """A holds both slots; once B arrives, each slot that frees goes to the pool running fewer tasks,
    so the two pools hold one slot each."""
    jobs = [Job(0, 0.0, (2.0,) * 6), Job(1, 0.1, (2.0,) * 4)]
    assert starts("fair", jobs, 2) == {0: [0.0, 0.0, 2.0, 4.0, 6.0, 8.0], 1: [2.0, 4.0, 6.0, 8.0]}
    assert starts("fifo", jobs, 2)[1] == [6.0, 6.0, 8.0, 8.0]


def test_pools_running_as_many_tasks_go_in_unit_id_order() -> None:
    """One slot: when it frees, both pools run nothing and the lower unit id wins, not the earlier job."""
    jobs = [Job(0, 0.0, (1.0,) * 3, unit=7), Job(1, 0.5, (1.0,), unit=3)]
    assert starts("fair", jobs, 1) == {0: [0.0, 2.0, 3.0], 1: [1.0]}

