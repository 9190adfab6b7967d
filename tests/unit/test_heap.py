"""The simulator's heap (policies/common/heap.py) and the kernel's use of it (bridge/cluster/kernel.py)."""
from __future__ import annotations

import heapq
import random

import pytest

from bridge.cluster.kernel import Kernel
from policies.framework.api import Timer
from policies.common.heap import MinHeap


@pytest.mark.parametrize("seed", range(5))
def test_push_pop_and_replace_top_keep_key_rank_then_tie_order(seed: int) -> None:
    rng = random.Random(seed)
    heap, model = MinHeap(), []
    for i in range(3000):
        op = rng.random()
        key, rank = float(rng.randrange(50)), rng.choice((0.0, 0.5, 1.0))   # many equal keys and ranks
        tie = rng.randrange(1 << 62) if seed % 2 else i                      # the tie decides the rest
        if op < 0.5 or not model:
            heap.push(key, rank, tie, tie)
            heapq.heappush(model, (key, rank, tie))
        elif op < 0.75:
            smallest = (heap.top_key(), heap.top_rank(), heap.top_tie())
            assert heap.pop() == smallest[2] and smallest == heapq.heappop(model)
        else:
            smallest = (heap.top_key(), heap.top_rank(), heap.top_tie())
            heap.replace_top(key, rank, tie, tie)
            assert smallest == heapq.heapreplace(model, (key, rank, tie))
        assert len(heap) == len(model) and (not model or (heap.top_key(), heap.top_rank(), heap.top_tie()) == model[0])
        assert not model or heap.top_item() == heap.top_tie()   # a reused slot holds its new item
    out = []
    while heap:
        out.append((heap.top_key(), heap.top_rank(), heap.top_tie()))
        heap.pop()
    assert out == sorted(model)


def test_a_heap_built_from_entries_pops_them_in_order() -> None:
    rng = random.Random(7)
    entries = [(float(rng.randrange(20)), float(rng.randrange(3)), rng.randrange(1 << 40), object())
               for _ in range(500)]
    heap = MinHeap(entries)
    out = []
    while heap:
        out.append((heap.top_key(), heap.top_rank(), heap.top_tie(), heap.top_item()))
        assert heap.pop() is out[-1][3]
    assert out == sorted(entries, key=lambda e: e[:3])


def test_a_tie_must_fit_64_bits() -> None:
    with pytest.raises((OverflowError, ValueError)):   # pure Python's error, the compiled core's
        MinHeap().push(0.0, 0.0, 1 << 64, None)


def test_a_handler_that_fails_consumes_its_event_and_leaves_the_rest_in_order() -> None:
    k = Kernel()
    seen: list[float] = []

    def handle(ev: Timer) -> list[Timer] | None:
        seen.append(ev.time)
        if ev.key == "boom":
            raise RuntimeError("policy failed")
        return [Timer(ev.time + 10, None, "later")] if ev.key == "first" else None

    k.on(Timer, handle)
    k.schedule_all([Timer(1.0, None, "first"), Timer(2.0, None, "boom"), Timer(3.0, None, "last")])
    with pytest.raises(RuntimeError):
        k.run()
    assert seen == [1.0, 2.0] and k.pending() == 2 and k.events == 1   # the failed one is not counted
    k.run()
    assert seen == [1.0, 2.0, 3.0, 11.0] and k.pending() == 0 and k.events == 3


def test_run_until_and_the_progress_tick() -> None:
    k = Kernel()
    k.on(Timer, lambda ev: [Timer(ev.time + 1, None, None)] if ev.time < 9 else None)
    k.schedule(Timer(0.0, None, None))
    ticks: list[tuple[int, float]] = []
    k.run(until=4.5, tick=lambda n, t: ticks.append((n, t)), tick_every=2)
    assert k.now == 4.0 and k.events == 5 and ticks == [(2, 1.0), (4, 3.0)] and k.next_time() == 5.0
    k.run(tick=lambda n, t: ticks.append((n, t)), tick_every=2)
    assert k.events == 10 and ticks[2:] == [(6, 5.0), (8, 7.0), (10, 9.0)]
