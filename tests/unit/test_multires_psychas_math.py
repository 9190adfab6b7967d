"""VQS classes and configurations, and the Best-Fit / VQS planners (Psychas & Ghaderi)."""
from fractions import Fraction

import pytest

from policies.psychas.algorithms import (ServerMix, bf_js, best_fit_server, fifo_first_fit,
                                         vqs_bf_fill, vqs_fill)
from policies.psychas.partition import Partition, max_weight, reduced_configurations
from policies.psychas.queues import SizeQueue, VirtualQueues, Waiting


def test_partition_boundaries_j4_match_the_spec_table():
    p = Partition(4)
    sups = [p.bounds(j)[1] for j in range(8)]
    assert sups == [1, Fraction(2, 3), Fraction(1, 2), Fraction(1, 3), Fraction(1, 4),
                    Fraction(1, 6), Fraction(1, 8), Fraction(1, 12)]
    # classes tile (1/16, 1]: each inf is the next class's sup
    assert all(p.bounds(j)[0] == p.bounds(j + 1)[1] for j in range(7))
    assert p.bounds(7)[0] == Fraction(1, 16)


@pytest.mark.parametrize("size,cls", [(1.0, 0), (0.7, 0), (2 / 3, 1), (0.6, 1), (0.5, 2), (0.4, 2),
                                      (1 / 3, 3), (0.25, 4), (0.2, 4), (1 / 6, 5), (1 / 8, 6),
                                      (1 / 12, 7), (0.07, 7), (1 / 16, 7), (0.001, 7)])
def test_classify_exact_boundaries(size, cls):
    assert Partition(4).classify(size) == cls


def test_tiny_jobs_round_up_and_bad_sizes_fail():
    p = Partition(4)
    assert p.effective_size(0.01) == 1 / 16 and p.effective_size(0.3) == 0.3
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError):
            p.classify(bad)
    with pytest.raises(ValueError):
        Partition(1)


@pytest.mark.parametrize("J", range(2, 11))
def test_reduced_configurations_count_and_each_fits_one_server(J):
    configs = reduced_configurations(J)
    assert len(configs) == 4 * J - 4
    part = Partition(J)
    assert all(k.load(part) <= 1 for k in configs)
    assert all(k.load(part) == 1 for k in configs if k.family != "C")
    assert all(k.count(1) <= 1 for k in configs)


def test_j4_configuration_list():
    got = {tuple(sorted(k.counts)) for k in reduced_configurations(4)}
    want = {((0, 1),), ((2, 2),), ((4, 4),), ((6, 8),), ((3, 3),), ((5, 6),), ((7, 12),),
            ((1, 1), (4, 1)), ((1, 1), (6, 2)), ((1, 1), (3, 1)), ((1, 1), (5, 2)), ((1, 1), (7, 4))}
    assert got == want  # neither e1 alone nor e1 + e2


def test_max_weight_picks_largest_inner_product_with_list_order_ties():
    configs = reduced_configurations(4)
    q = [0] * 8
    q[2], q[1], q[4] = 3, 5, 1
    best = max_weight(configs, q)  # 2e2: 6; e1+e4: 5+1 = 6 -> tie keeps A first
    assert best.counts == ((2, 2),)
    q[1] = 10
    assert max_weight(configs, q).counts == ((1, 1), (4, 1))  # 10 + 1 > 6 > 4 (4e4)


def _queue(sizes):
    q = SizeQueue()
    jobs = [Waiting(s, i, f"j{i}") for i, s in enumerate(sizes)]
    for j in jobs:
        q.add(j)
    return q, jobs


def test_best_fit_server_picks_least_residual_that_fits():
    assert best_fit_server(0.3, [0.9, 0.35, 0.2, 0.35]) == 1
    assert best_fit_server(0.95, [0.9, 0.35]) is None


def test_bfjs_refill_order_departed_servers_first_then_arrivals():
    q, jobs = _queue([0.5, 0.3, 0.2, 0.45])
    residuals = [0.6, 0.1, 0.5]
    arrivals = [jobs[3]]  # j3 arrived this slot; j0..j2 were waiting
    out = bf_js(residuals, departed=[2, 0], queue=q, arrivals=arrivals)
    # server 2 (departed first) takes the largest fitting: j0 (0.5); then server 0 takes
    # j3 (0.45, largest ≤ 0.6), then nothing else fits there (0.15 left: none ≤).
    assert out == [("j0", 2), ("j3", 0)]
    assert len(q) == 2 and residuals == pytest.approx([0.15, 0.1, 0.0])


def test_bfjs_places_new_arrival_best_fit_when_no_departures():
    q, jobs = _queue([0.3, 0.2])
    out = bf_js([0.25, 0.5], departed=[], queue=q, arrivals=[jobs[1]])
    assert out == [("j1", 0)]  # j0 was old and no server departed: it waits


def test_fifo_first_fit_blocks_at_head_of_line():
    q, _ = _queue([0.7, 0.1, 0.2])
    assert fifo_first_fit([0.5, 0.6], q) == []
    q, _ = _queue([0.5, 0.6, 0.1])
    assert fifo_first_fit([0.5, 0.7], q) == [("j0", 0), ("j1", 1), ("j2", 1)]


def _vqs(sizes, J=4):
    vq = VirtualQueues(Partition(J))
    for i, s in enumerate(sizes):
        vq.add(Waiting(s, i, f"j{i}"))
    return vq


def test_vqs_reserves_two_thirds_for_class1():
    vq = _vqs([0.6, 0.25, 0.24, 0.22])  # one class-1 job, three class-4 jobs
    config = next(k for k in reduced_configurations(4) if k.counts == ((1, 1), (4, 1)))
    out, residuals = [], [1.0]
    vqs_fill(0, config, ServerMix(False, (0,) * 8, 0.0), residuals, vq, out)
    assert out == [("j0", 0), ("j1", 0)]  # only 1/3 left for class 4: one 0.25 job
    assert vq.lengths()[4] == 2


def test_vqs_cannot_pair_0_4_with_0_6_but_vqs_bf_fills_best_fit():
    a2 = next(k for k in reduced_configurations(4) if k.counts == ((2, 2),))
    vq = _vqs([0.4, 0.6])
    out = []
    vqs_fill(0, a2, ServerMix(False, (0,) * 8, 0.0), [1.0], vq, out)
    assert out == [("j0", 0)]
    vq = _vqs([0.4, 0.6])
    out = []
    vqs_bf_fill(0, a2, ServerMix(False, (0,) * 8, 0.0), [1.0], vq, out)
    assert out == [("j0", 0), ("j1", 0)]


def test_vqs_places_more_than_k_when_actual_sizes_are_small():
    a2 = next(k for k in reduced_configurations(4) if k.counts == ((4, 4),))
    vq = _vqs([0.2] * 6)  # 0.2 ∈ I_4 (upper-rounded 1/4): five still fit
    out = []
    vqs_fill(0, a2, ServerMix(False, (0,) * 8, 0.0), [1.0], vq, out)
    assert len(out) == 5
