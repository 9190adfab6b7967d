"""Properties of the pure packing helpers over random demand vectors."""
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.common.vectors import dominant, fits, most_matched
from policies.falcon.packing import PackItem, deviation, pack_complementary
from policies.psychas.algorithms import bf_js
from policies.psychas.queues import SizeQueue, Waiting

share = st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0))


@settings(max_examples=40)
@given(st.lists(share, max_size=12))
def test_packing_partitions_tasks_into_complementary_pairs(shares):
    items = [PackItem(i, s) for i, s in enumerate(shares)]
    entities = pack_complementary(items)
    assert sorted(k for e in entities for k in e) == list(range(len(shares)))
    assert all(len(e) in (1, 2) for e in entities)
    assert all(dominant(shares[a]) != dominant(shares[b]) for a, *rest in entities for b in rest)


@settings(max_examples=40)
@given(share, share)
def test_deviation_is_half_squared_distance(a, b):
    assert abs(deviation(a, b) - 0.5 * sum((x - y) ** 2 for x, y in zip(a, b))) < 1e-12


@settings(max_examples=40)
@given(share, st.lists(share, min_size=1, max_size=6))
def test_most_matched_fits_and_leaves_least(demand, avail):
    servers = [(i, a, (1.0, 1.0)) for i, a in enumerate(avail)]
    chosen = most_matched(demand, servers)
    feasible = [i for i, a, _ in servers if fits(demand, a)]
    assert (chosen is None) == (not feasible)
    if chosen is not None:
        left = lambda i: sum(avail[i]) - sum(demand)  # noqa: E731
        assert all(left(chosen) <= left(i) + 1e-9 for i in feasible)


@settings(max_examples=40)
@given(st.lists(st.floats(0.01, 1.0), max_size=10), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4))
def test_bfjs_never_overfills_a_server(sizes, residuals):
    queue = SizeQueue()
    jobs = [Waiting(s, i, i) for i, s in enumerate(sizes)]
    for j in jobs:
        queue.add(j)
    res = list(residuals)
    placed = bf_js(res, range(len(res)), queue, jobs)
    for server, r0 in enumerate(residuals):
        assert sum(sizes[k] for k, s in placed if s == server) <= r0 + 1e-6
    assert len(placed) + len(queue) == len(sizes)
