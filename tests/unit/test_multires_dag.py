"""Precedence-graph helpers: order, cycles, independence."""
import pytest

from workloads.dag import (CycleError, UnknownParentError, ancestors, children_of, independent,
                           topological_order)

DIAMOND = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"], "e": []}


def test_topological_order_and_children():
    assert topological_order(DIAMOND) == ["a", "e", "b", "c", "d"]
    assert children_of(DIAMOND)["a"] == ("b", "c")


def test_cycle_and_unknown_parent_are_named():
    with pytest.raises(CycleError) as err:
        topological_order({"x": ["y"], "y": ["x"], "z": []})
    assert err.value.task in {"x", "y"}
    with pytest.raises(UnknownParentError, match="'q'"):
        topological_order({"x": ["q"]})


def test_independence_is_no_ancestry_either_way():
    anc = ancestors(DIAMOND)
    assert anc["d"] == {"a", "b", "c"}
    assert independent("b", "c", anc) and independent("e", "d", anc)
    assert not independent("a", "d", anc) and not independent("d", "a", anc)
