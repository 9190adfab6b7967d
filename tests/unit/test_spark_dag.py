"""A Spark job's stage DAG turned into one stage's successors (what live Falcon's Eq. 2 sums)."""
from bridge.drivers.spark.dag import successors_of
from bridge.protocol.messages import JobStart, StageSpec
from workloads.model import Successor

# 0 and 1 are roots; 2 after 0; 3 (the result stage) after 1 and 2.
JOB = JobStart(0, 7, (StageSpec(0, 4, ()), StageSpec(1, 2, ()), StageSpec(2, 5, (0,)), StageSpec(3, 1, (1, 2))), {})


def test_descendants_come_parents_first_and_wait_for_the_stage_or_each_other():
    assert successors_of(JOB, 0, 3.0) == (Successor(5, 3.0, (-1,)), Successor(1, 3.0, (0,)))


def test_parents_on_other_branches_are_left_out():
    assert successors_of(JOB, 1, 1.0) == (Successor(1, 1.0, (-1,)),)  # stage 2 is not 1's concern
    assert successors_of(JOB, 2, 1.0) == (Successor(1, 1.0, (-1,)),)


def test_the_result_stage_and_unknown_stages_have_none():
    assert successors_of(JOB, 3, 1.0) == ()
    assert successors_of(JOB, 99, 1.0) == ()


def test_a_stage_of_zero_tasks_still_counts_as_one():
    job = JobStart(0, 1, (StageSpec(0, 3, ()), StageSpec(1, 0, (0,))), {})
    assert successors_of(job, 0, 1.0) == (Successor(1, 1.0, (-1,)),)
