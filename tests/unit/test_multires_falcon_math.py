"""Falcon's equations on hand-computed examples (Eqs. 1–5, C1–C3, the paper's Fig. 2)."""
import random

import pytest

from policies.common.vectors import dominant, fits, leftover, most_matched
from policies.falcon.packing import PackItem, deviation, pack_complementary
from policies.falcon.preemption import (Reading, SpTask, beat_ratio, choose, indicator,
                                        reverse_rank, satisfies_c3, selective_preemption)
from policies.falcon.priority import dag_priorities, leaf_priority, successor_weight
from workloads.model import Job, Successor, WorkloadError


def test_eq1_deviation_hand_computed():
    # mean (0.35, 0.35): (0.25² + 0.15²)·2 = 0.17 = ½‖(0.5, −0.3)‖²
    assert deviation((0.6, 0.2), (0.1, 0.5)) == pytest.approx(0.17)
    assert deviation((0.3, 0.3), (0.3, 0.3)) == 0.0


def test_packing_pairs_highest_deviation_with_other_dominant_resource():
    items = [PackItem("A", (0.6, 0.1)), PackItem("B", (0.5, 0.2)),
             PackItem("C", (0.1, 0.5)), PackItem("D", (0.2, 0.7))]
    # A: DV(C)=0.205 < DV(D)=0.26 -> A+D; B is left with C only.
    assert pack_complementary(items) == [("A", "D"), ("B", "C")]


def test_packing_respects_compatibility_and_leaves_singletons():
    items = [PackItem("A", (0.6, 0.1)), PackItem("B", (0.5, 0.2)), PackItem("D", (0.2, 0.7))]
    assert pack_complementary(items, lambda a, b: {a, b} != {"A", "D"}) == [("A",), ("B", "D")]


def test_most_matched_server_is_best_fit_on_normalised_leftover():
    servers = [("s1", (4, 4), (8, 8)), ("s2", (2, 1), (8, 8)), ("s3", (0.5, 8), (8, 8))]
    assert most_matched((1, 1), servers) == "s2"
    assert leftover((4, 4), (1, 1), (8, 8)) == pytest.approx(0.75)
    assert most_matched((9, 1), servers) is None
    assert dominant((0.2, 0.7)) == 1 and fits((1, 1), (1, 1)) and not fits((1.1, 0), (1, 1))


def test_eq3_leaf_priority():
    assert leaf_priority(0.1, 1.0) == pytest.approx(0.5 * 10 + 0.5 * 1)
    assert leaf_priority(0.0, 0.0) == pytest.approx(0.5 / 1e-3)
    with pytest.raises(ValueError):
        leaf_priority(1, 1, 0.5, 0.6)


def test_eq2_sums_children_so_paths_multiply():
    # a -> b, a -> c, b -> d, c -> d: two paths from a to the only leaf d.
    children = {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}
    prio = dag_priorities(children, lambda t: 5.5)
    assert prio == {"d": 5.5, "b": 5.5, "c": 5.5, "a": 11.0}
    fan = dag_priorities({"a": ["b", "c"], "b": [], "c": []}, {"b": 2.0, "c": 3.0}.__getitem__)
    assert fan["a"] == 5.0


def test_eq2_over_successor_stages_with_barriers():
    """The job's sinks -> B (3 tasks) -> D (1 task) and -> C (2 tasks) -> D: each sink task has
    every task of B and C as children; each B and C task has D's one task."""
    succ = (Successor(3, 1.0, (-1,)), Successor(2, 1.0, (-1,)), Successor(1, 4.0, (0, 1)))
    leaf = {4.0: 7.0}
    assert successor_weight(succ, lambda s: leaf[s.estimate]) == pytest.approx(3 * 7.0 + 2 * 7.0)
    chain = (Successor(5, 1.0, (-1,)), Successor(4, 2.0, (0,)))  # paths multiply: 5 * 4 leaves
    assert successor_weight(chain, lambda s: s.estimate) == pytest.approx(5 * 4 * 2.0)
    assert successor_weight((), lambda s: 1.0) == 0.0


@pytest.mark.parametrize("bad", [Successor(0, 1.0, (-1,)), Successor(1, -1.0, (-1,)),
                                 Successor(1, 1.0, ()), Successor(1, 1.0, (0,))])
def test_successors_must_be_sized_and_wait_for_the_job_or_earlier_ones(bad):
    with pytest.raises(WorkloadError, match="successor 0"):
        Job(1, 0.0, (1.0,), successors=(bad,))


def test_eq4_eq5_on_the_papers_ten_task_queue():
    queue = [float(p) for p in range(1, 11)]
    assert indicator(2, 1) == 1 and indicator(1, 1) == 0
    assert beat_ratio(6, queue) == 0.5
    assert [p for p in queue if satisfies_c3(p, queue, 0.5)] == [6, 7, 8, 9, 10]   # top ⌊10·0.5⌋
    assert [p for p in queue if satisfies_c3(p, queue, 0.35)] == [5, 6, 7, 8, 9, 10]  # top ⌊6.5⌋
    assert [reverse_rank(p, queue) for p in queue] == list(range(1, 11))


@pytest.mark.parametrize("k,eligible", [(1, 0), (2, 1), (3, 1), (4, 2)])
def test_c3_edge_cases(k, eligible):
    queue = [float(p) for p in range(k)]
    assert sum(satisfies_c3(p, queue, 0.35) for p in queue) == eligible


def test_ties_do_not_count_toward_c3():
    assert not satisfies_c3(5, [5, 5, 5], 0.35)


def test_roulette_weights_are_normalised_reverse_ranks():
    queue = [float(p) for p in range(1, 11)]
    eligible = [SpTask(p, p) for p in queue[4:]]
    rng = random.Random(7)
    draws = [choose(eligible, queue, rng).key for _ in range(9000)]
    assert draws.count(10.0) / 9000 == pytest.approx(10 / 45, abs=0.02)
    assert draws.count(5.0) / 9000 == pytest.approx(5 / 45, abs=0.02)


def test_sequential_reading_accepts_the_queue_top_first():
    queue = [float(p) for p in range(1, 11)]
    eligible = [SpTask(p, p) for p in queue[4:]]
    assert choose(eligible, queue, random.Random(1), Reading.SEQUENTIAL).key == 10.0


def test_selective_preemption_c1_c2_and_victim_choice():
    waiting = [SpTask("w10", 10.0), SpTask("w1", 1.0), SpTask("w2", 2.0)]
    running = [SpTask("r3", 3.0, remaining=0.5), SpTask("r7", 7.0, remaining=0.2)]
    indep = lambda a, b: (a, b) != ("w10", "r3")  # noqa: E731  w10 depends on r3
    decision = selective_preemption(waiting, running, indep, random.Random(0))
    assert (decision.preemptor, decision.victim) == ("w10", "r7")
    all_indep = selective_preemption(waiting, running, lambda a, b: True, random.Random(0))
    assert all_indep.victim == "r3"  # lowest priority the candidate beats


def test_selective_preemption_refuses_lone_task_and_unrunnable_tasks():
    running = [SpTask("r", 0.1)]
    assert selective_preemption([SpTask("w", 9.0)], running, lambda a, b: True, random.Random(0)) is None
    blocked = [SpTask("w", 9.0, runnable=False), SpTask("x", 1.0)]
    assert selective_preemption(blocked, running, lambda a, b: True, random.Random(0)) is None


def test_victim_tie_goes_to_largest_remaining():
    running = [SpTask("short", 1.0, remaining=0.1), SpTask("long", 1.0, remaining=0.9)]
    waiting = [SpTask("w", 9.0), SpTask("x", 0.5)]
    assert selective_preemption(waiting, running, lambda a, b: True, random.Random(0)).victim == "long"


def test_a_stage_dag_is_one_task_level_dag():
    job = Job(0, 0.0, (1.0, 1.0, 1.0, 1.0), parents=((), (), (), (0,)), stage_of=(0, 0, 1, 1),
              stage_parents=((), (0,)))
    assert job.task_parents() == ((), (), (0, 1), (0, 0, 1))
    assert Job(0, 0.0, (1.0,)).task_parents() == ((),)


@pytest.mark.parametrize("masters", [1, 2])
def test_falcon_and_its_baselines_wait_for_parent_stages_on_any_cluster(masters):
    """A stage DAG's child task was dispatched at the job's arrival and then never run: Falcon's
    book saw only task-level parents, so the job never finished on 4 nodes with one master."""
    from bridge.sim.engine import Simulation
    from bridge.sim.shape import uniform
    from policies.framework.api import PolicyEnv
    from policies.framework.registry import config_for, create

    job = Job(0, 0.0, (1.0, 0.9, 0.8), stage_of=(0, 0, 1), stage_parents=((), (0,)))
    shape = uniform(4, 1)
    spec = shape.spec(0.0)
    for name in ("falcon", "natjam", "snb", "amoeba", "srpt-preempt"):
        policy = create(name, PolicyEnv(spec, 1), config_for(name, {"masters": str(masters)}))
        result = Simulation(shape.with_demands([job]), policy, spec).run()
        assert not result.unfinished, name
        # Falcon starts the child when its parents are done; the dependency-oblivious baselines may
        # start it first, holding a slot without progress (a disorder)
        assert result.log.job_finish[0] == pytest.approx(1.8) if name == "falcon" else \
            result.log.job_finish[0] >= 1.8 - 1e-9, name
