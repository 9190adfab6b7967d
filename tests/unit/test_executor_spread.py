"""`replay --preempt` sizes executor containers so that exactly N + Q fit on every NodeManager, and
stops, naming the nodes, when that cannot be done or YARN placed them otherwise."""
from __future__ import annotations

import pytest

from bridge.replay.executor_spread import (Node, SpreadError, await_spread, check_spread, increment_mb, megabytes,
                                           rounded, size)
from yarnclient.models import AllocatedContainer

TESTBED = [Node("localhost:45455", 5, 4096), Node("localhost:45456", 5, 4096)]  # 4 vcores raised by Q = 1


def fits(container: int, memory: int, step: int, am: int) -> int:
    """How many executors YARN can put on a node of ``memory`` MB, with or without the AM there."""
    return (memory - am) // rounded(container, step)


@pytest.mark.parametrize("per_node", [2, 3])
def test_exactly_n_plus_q_fit_on_each_testbed_node_with_or_without_the_am(per_node: int) -> None:
    sizing = size(TESTBED, per_node, {}, 128)
    am = rounded(sizing.am_heap_mb + sizing.am_overhead_mb, 128)
    assert sizing.container_mb % 128 == 0
    assert fits(sizing.container_mb, 4096, 128, am) == per_node  # the node with the AM
    assert fits(sizing.container_mb, 4096, 128, 0) == per_node   # the other: not one more
    conf = sizing.spark_conf()
    assert megabytes(conf["spark.executor.memory"], "") + megabytes(conf["spark.executor.memoryOverhead"], "") \
        == sizing.container_mb


def test_kairos_hol_shape_gets_the_largest_size_that_fits() -> None:
    sizing = size(TESTBED, 2, {"spark.executor.memory": "512m"}, 128)
    # (k+1) C > 4096 -> C >= 1366; 2 C + 512 <= 4096 -> C <= 1792, a multiple of 128
    assert (sizing.container_mb, sizing.heap_mb) == (1792, 512)
    assert sizing.spark_conf()["spark.executor.memoryOverhead"] == "1280m"


def test_four_per_testbed_node_fit_beside_the_default_am() -> None:
    # Kairos with Q = 2 on two one-core executors per NodeManager: (k+1) C > 4096 -> C >= 820;
    # 4 C + 512 <= 4096 -> C <= 896, a multiple of 128 (a 640 MB AM would leave none)
    sizing = size(TESTBED, 4, {}, 128)
    assert (sizing.container_mb, sizing.am_heap_mb + sizing.am_overhead_mb) == (896, 512)
    with pytest.raises(SpreadError, match="exactly 4 fit"):
        size(TESTBED, 4, {"spark.yarn.am.memory": "384m"}, 128)


def test_a_coarse_increment_with_no_size_that_fits_is_an_error_naming_the_nodes() -> None:
    with pytest.raises(SpreadError, match=r"exactly 2 fit .*localhost:45455: 4096 MB, localhost:45456: 4096 MB.*"
                                          r"rounds to 1024 MB"):
        size(TESTBED, 2, {}, 1024)


def test_too_few_vcores_for_the_executors_and_the_am_is_an_error() -> None:
    with pytest.raises(SpreadError, match=r"need 6 vcores per NodeManager; localhost:45455 advertises 5"):
        size(TESTBED, 5, {}, 128)


def test_a_manual_overhead_is_refused_rather_than_overridden() -> None:
    with pytest.raises(SpreadError, match=r"remove --conf spark.executor.memoryOverhead"):
        size(TESTBED, 2, {"spark.executor.memoryOverhead": "1024m"}, 128)


def test_unequal_nodes_must_each_hold_exactly_n_plus_q() -> None:
    nodes = [Node("a:1", 8, 4096), Node("b:1", 8, 4608)]
    sizing = size(nodes, 2, {}, 128)
    for node in nodes:
        assert fits(sizing.container_mb, node.memory_mb, 128, 0) == 2
    with pytest.raises(SpreadError, match="give the NodeManagers equal memory"):
        size([Node("a:1", 8, 4096), Node("b:1", 8, 16384)], 2, {}, 128)


def test_sizes_and_increments_read_as_spark_and_yarn_read_them() -> None:
    assert megabytes("2g", "k") == 2048 and megabytes("384", "k") == 384 and megabytes("1536M", "k") == 1536
    with pytest.raises(ValueError, match="spark.executor.memory: 'lots'"):
        megabytes("lots", "spark.executor.memory")
    assert increment_mb({"yarn.scheduler.minimum-allocation-mb": "128"}) == 128
    fair = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler"
    assert increment_mb({"yarn.resourcemanager.scheduler.class": fair,
                         "yarn.scheduler.minimum-allocation-mb": "128"}) == 1024


def container(cid: str, node: str, am: bool = False) -> AllocatedContainer:
    return AllocatedContainer(cid, node, "", 1664, 1, am, {})


def test_the_spread_is_checked_without_the_am() -> None:
    placed = [container("c1", "a:1", am=True), container("c2", "a:1"), container("c3", "a:1"),
              container("c4", "b:1"), container("c5", "b:1")]
    await_spread(lambda: placed, ["a:1", "b:1"], 2, timeout_s=0)
    uneven = [*placed[:3], container("c4", "a:1"), container("c5", "b:1")]
    with pytest.raises(SpreadError, match=r"\{'a:1': 3, 'b:1': 1\} \(node: executors\), not 2 on each"):
        await_spread(lambda: uneven, ["a:1", "b:1"], 2, timeout_s=0)


def test_waiting_ends_when_every_executor_is_placed_or_at_the_timeout() -> None:
    batches = iter([[container("c2", "a:1")], [container("c2", "a:1"), container("c3", "b:1")]])
    clock = iter(range(100))
    await_spread(lambda: next(batches), ["a:1", "b:1"], 1, timeout_s=10,
                 clock=lambda: float(next(clock)), sleep=lambda s: None)
    with pytest.raises(SpreadError, match=r"after 3 s YARN had placed 1 of 2 executors \(\{'a:1': 1\}\)"):
        await_spread(lambda: [container("c2", "a:1")], ["a:1", "b:1"], 1, timeout_s=3,
                     clock=lambda: float(next(clock)), sleep=lambda s: None)
    with pytest.raises(SpreadError, match=r"'c:1': 1"):  # a node the RM did not list as running
        check_spread({"a:1": 1, "b:1": 1, "c:1": 1}, ["a:1", "b:1"], 1)
