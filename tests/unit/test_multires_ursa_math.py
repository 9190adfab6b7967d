"""Ursa's placement score F(t, w), Algorithm 1 and the EJF/SRJF orders."""
import pytest

from policies.ursa.ordering import ejf_bonus, monotask_order, srjf_priority, srjf_score
from policies.ursa.placement import (STAGE_BONUS, Stage, headroom, needs, opens, place_batch, place_singly, score,
                                     stage_score)

HARD = (False, False, True)  # cpu, network, memory


def test_headroom_is_unused_share_of_ept():
    assert headroom(1.0, 0.25) == 0.75 and headroom(1.0, 2.0) == 0.0


def test_score_caps_increment_and_excludes_blocked_workers():
    assert score((0.5, 1.0, 1.0), (0.8, 0.1, 0.2), HARD) == pytest.approx(0.5 * 0.5 + 0.1 + 0.2)
    assert score((0.0, 1.0, 1.0), (0.1, 0.0, 0.1), HARD) is None  # needs CPU, none left
    assert score((0.0, 1.0, 1.0), (0.0, 0.3, 0.1), HARD) == pytest.approx(0.4)  # no CPU needed
    assert score((1.0, 1.0, 0.1), (0.1, 0.0, 0.2), HARD) is None  # memory does not fit


def test_score_pairs_heavy_resource_with_light_worker():
    cpu_heavy = (0.6, 0.1, 0.0)
    cpu_light_worker, net_light_worker = (0.9, 0.2, 1.0), (0.2, 0.9, 1.0)
    assert score(cpu_light_worker, cpu_heavy, HARD) > score(net_light_worker, cpu_heavy, HARD)


def test_stage_score_bonus_only_when_whole_stage_fits():
    heads = {"w1": [1.0, 1.0, 1.0]}
    inc = lambda t: (1.0, 0.0, 0.1)  # noqa: E731  one task uses a whole EPT of CPU
    whole = stage_score(Stage("s", ("a",)), heads, inc, HARD)
    partial = stage_score(Stage("s", ("a", "b")), heads, inc, HARD)
    assert whole.score == pytest.approx(1.1 + STAGE_BONUS)
    assert partial.pairs == [("a", "w1")] and partial.score == pytest.approx(1.1)
    assert heads["w1"] == [1.0, 1.0, 1.0]  # scored on a copy


def test_place_batch_prefers_complete_stages_and_repeats():
    heads = {"w1": [1.0, 1.0, 1.0], "w2": [1.0, 1.0, 1.0]}
    inc = lambda t: (1.0, 0.0, 0.1) if t.startswith("big") else (0.5, 0.0, 0.1)  # noqa: E731
    stages = [Stage("wide", ("big1", "big2", "big3")), Stage("small", ("s1", "s2"))]
    placed = place_batch(stages, heads, inc, HARD)
    # "small" fits entirely (bonus), one task per worker (F is higher on the idle one);
    # then two of three "big" tasks still fit (capped), the third finds no CPU headroom.
    assert placed[:2] == [("s1", "w1"), ("s2", "w2")]
    assert sorted(t for t, _ in placed[2:]) == ["big1", "big2"]


def test_order_bonus_breaks_stage_ties_toward_older_job():
    heads = {"w1": [1.0, 1.0, 1.0]}
    inc = lambda t: (1.0, 0.0, 0.1)  # noqa: E731
    stages = [Stage("young", ("y",), ejf_bonus(0.01, 10.0, 12.0)),
              Stage("old", ("o",), ejf_bonus(0.01, 0.0, 12.0))]
    assert place_batch(stages, heads, inc, HARD) == [("o", "w1")]


def test_srjf_weights_contended_resources_and_orders_small_jobs_first():
    assert srjf_score((2.0, 1.0), (4.0, 1.0)) == pytest.approx(2 * 1.5 + 1 * 1.0)
    assert srjf_priority((1.0, 0.0), (4.0, 1.0)) > srjf_priority((3.0, 0.0), (4.0, 1.0))
    assert srjf_priority((0.0, 0.0), (4.0, 1.0)) == float("inf")


def test_monotask_order_cpu_descending_network_ascending():
    assert sorted([monotask_order((0,), 5, True), monotask_order((0,), 9, True)]) == [(0, -9), (0, -5)]
    assert sorted([monotask_order((0,), 9, False), monotask_order((0,), 5, False)]) == [(0, 5), (0, 9)]
    assert monotask_order((0.0, 1), 9, True) < monotask_order((0.0, 2), 1, True)  # job order first


@pytest.mark.parametrize("seed", range(4))
def test_greedy_baselines_place_as_a_scan_of_every_worker_for_every_task(seed: int) -> None:
    """Capacity/Tetris keep the workers each waiting demand fits in a heap by score, rescored
    as rooms change, and skip a demand that fits nowhere: the same placements as the plain scan,
    on tables with full and over-committed (negative) workers and ties."""
    import random

    from policies.common.vectors import fits, sub
    from policies.ursa.policy import Table, alignment, greedy, most_available
    from policies.ursa.room import FreeRoom

    rng = random.Random(seed)
    cap = (4.0, 16.0)
    free = {w: (rng.choice([-1.0, 0.0, 0.5, 2.0, 4.0]), rng.choice([-2.0, 0.0, 3.0, 16.0])) for w in range(12)}
    demands = {(t // 10, t): (rng.choice([0.5, 1.0, 2.0]), rng.choice([1.0, 4.0, 8.0])) for t in range(60)}
    stages = [Stage(s, tuple((s, t) for t in range(s * 10, s * 10 + 10))) for s in range(6)]  # (job, task) keys
    for rate in (most_available, alignment):
        room = FreeRoom(free, cap, rate)
        for d in demands.values():
            room.watch(d)
        table = Table({}, (True, True), cap, frozenset(demands.values()), room)
        got = greedy(stages, table, lambda t: (0.0, 0.0), demands.__getitem__)
        rooms, want = dict(free), []
        for s in stages:
            for t in s.tasks:
                fit = [(rate(demands[t], f, cap), -w, w) for w, f in rooms.items() if fits(demands[t], f)]
                if fit:
                    w = max(fit)[2]
                    rooms[w] = sub(rooms[w], demands[t])
                    want.append((t, w))
        assert got == want and room.free == rooms and 0 < len(got) < 60


def test_free_room_picks_what_a_scan_picks_while_rooms_change_thousands_of_times() -> None:
    """The heaps drop stale entries and start afresh when mostly stale; after every change the
    best worker of each watched demand is the scan's (ties: lowest id), or None when none fits."""
    import random

    from policies.common.vectors import fits
    from policies.ursa.policy import alignment
    from policies.ursa.room import FreeRoom

    rng = random.Random(3)
    cap = (4.0, 16.0)
    free = {w: cap for w in range(8)}
    room = FreeRoom(free, cap, alignment)
    demands = [(1.0, 4.0), (2.0, 1.0), (0.5, 8.0)]
    for d in demands:
        room.watch(d)
    for _ in range(3000):
        w = rng.randrange(8)
        free[w] = (rng.choice([0.0, 0.5, 1.0, 2.0, 4.0]), rng.choice([0.0, 1.0, 4.0, 8.0, 16.0]))
        room.set(w, free[w])
        for d in demands:
            fit = [(alignment(d, f, cap), -v, v) for v, f in free.items() if fits(d, f)]
            assert room.best(d) == (max(fit)[2] if fit else None)
    assert all(len(heap) <= 4 * 8 + 64 for heap in room._heaps.values())


def _reference_batch(stages, heads, increment, hard, stage_bonus=STAGE_BONUS):
    """Algorithm 1 as the paper states it: every stage rescored against every worker after each commit."""
    live = {w: list(d) for w, d in heads.items()}
    pending, placed = list(stages), []
    while pending:
        plans = []
        for s in pending:
            local, pairs, total, bonus = {w: list(d) for w, d in live.items()}, [], 0.0, stage_bonus
            for t in s.tasks:
                inc = increment(t)
                found = [(f, w) for w, d in local.items() if (f := score(d, inc, hard)) is not None]
                if not found:
                    bonus = 0.0
                    continue
                best = max(found, key=lambda x: x[0])  # first of the best, in worker order
                pairs.append((t, best[1]))
                local[best[1]] = [max(0.0, d - i) for d, i in zip(local[best[1]], inc)]
                total += best[0]
            if pairs:
                plans.append((total / len(pairs) + bonus + s.order_bonus, s, pairs))
        if not plans:
            break
        _, s, pairs = max(plans, key=lambda p: p[0])
        for t, w in pairs:
            live[w] = [max(0.0, d - i) for d, i in zip(live[w], increment(t))]
        placed.extend(pairs)
        rest = tuple(t for t in s.tasks if t not in {t for t, _ in pairs})
        pending = [p for p in pending if p is not s] + ([Stage(s.key, rest, s.order_bonus)] if rest else [])
    return placed


@pytest.mark.parametrize("seed", range(30))
def test_place_batch_is_algorithm_1_rescoring_every_stage_on_every_worker(seed: int) -> None:
    """place_batch scores only the workers a task can use and keeps the plans no commit touched,
    place_singly rescores a one-task plan only when it reaches the top: the same placements as
    rescoring everything, on loaded, idle and memory-tight workers and
    tasks that use CPU, network or neither (ties included: few distinct values)."""
    import random

    rng = random.Random(seed)
    heads = {w: [rng.choice([0.0, 0.0, 0.3, 1.0]), rng.choice([0.0, 0.5, 1.0]), rng.choice([0.05, 0.2, 1.0])]
             for w in range(rng.randint(1, 12))}
    incs = {(s, t): (rng.choice([0.0, 0.1, 0.4, 1.5]), rng.choice([0.0, 0.0, 0.3]), rng.choice([0.0, 0.1, 0.25]))
            for s in range(6) for t in range(rng.randint(1, 8))}
    stages = [Stage(s, tuple(k for k in incs if k[0] == s), rng.choice([0.0, 0.5])) for s in range(6)]
    stages = [s for s in stages if s.tasks]
    uses = {needs(inc) for inc in incs.values()}  # lets a stage stop once no worker is open to any
    for bonus in (STAGE_BONUS, 0.0):
        want = _reference_batch(stages, heads, incs.__getitem__, HARD, stage_bonus=bonus)
        assert place_batch(stages, heads, incs.__getitem__, HARD, stage_bonus=bonus) == want
        assert place_batch(stages, heads, incs.__getitem__, HARD, stage_bonus=bonus, uses=uses) == want
        opened = {u: [w for w, d in heads.items() if opens(d, u)] for u in uses}
        assert place_batch(stages, heads, incs.__getitem__, HARD, stage_bonus=bonus, uses=uses, opened=opened) == want
        values: dict[tuple[float, ...], list[float]] = {}  # workers with equal headrooms share one object
        shared = {w: values.setdefault(tuple(d), d) for w, d in heads.items()}
        assert place_batch(stages, shared, incs.__getitem__, HARD, stage_bonus=bonus, uses=uses) == want
        singles = [Stage(t, (t,), s.order_bonus) for s in stages for t in s.tasks]  # the per-task ablation
        want = _reference_batch(singles, heads, incs.__getitem__, HARD, 0.0)
        assert place_batch(singles, heads, incs.__getitem__, HARD, 0.0) == want
        assert place_batch(singles, heads, incs.__getitem__, HARD, 0.0, uses=uses) == want
        assert place_singly(singles, heads, incs.__getitem__, HARD) == want
        assert place_singly(singles, heads, incs.__getitem__, HARD, uses=uses) == want
        # the caller's lists of the workers open to each set of used resources, as a scan finds them
        opened = {u: [w for w, d in heads.items() if opens(d, u)] for u in uses}
        assert place_singly(singles, heads, incs.__getitem__, HARD, uses=uses, opened=opened) == want
        assert place_singly(singles, shared, incs.__getitem__, HARD, uses=uses) == want
        assert place_singly(stages, heads, incs.__getitem__, HARD, uses=uses) == want  # tasks of a stage apart


@pytest.mark.parametrize("seed", range(20))
def test_a_front_is_the_undominated_tasks_as_members_are_placed(seed: int) -> None:
    """Front files each task under one member and refiles only those of a placed member: after
    every placement its members are the tasks no earlier unplaced one dominates (few distinct
    increments, so ties, chains and tasks dominated by several members are common)."""
    import random

    from policies.ursa.dominance import Front, dominates

    rng = random.Random(seed)
    incs = {t: (rng.choice([0.0, 0.1, 0.4]), rng.choice([0.0, 0.3]), rng.choice([0.1, 0.25])) for t in range(40)}
    front = Front(tuple(incs), incs.__getitem__, HARD)
    left = list(incs)
    while left:
        want = [t for i, t in enumerate(left) if not any(dominates(incs[e], incs[t], HARD) for e in left[:i])]
        assert front.members == want and front.tasks == tuple(left)
        placed = rng.choice(want)
        joined = front.place(placed)
        left.remove(placed)
        assert joined == [t for t in front.members if t not in want]


@pytest.mark.parametrize("seed", range(10))
def test_place_singly_keeps_fronts_between_batches_with_the_same_placements(seed: int) -> None:
    """Fronts kept from batch to batch (stages losing what was placed, headrooms changing, now
    and then a stage gaining ready tasks, which rebuilds its front) place what scanning every
    stage afresh places."""
    import random

    from policies.ursa.dominance import Fronts

    rng = random.Random(seed)
    incs = {(s, t): (rng.choice([0.1, 0.4, 1.5]), rng.choice([0.0, 0.3]), rng.choice([0.0, 0.1]))
            for s in range(4) for t in range(30)}
    ready = {s: [k for k in incs if k[0] == s][:20] for s in range(4)}
    fronts: Fronts[tuple[int, int]] = Fronts()
    done: set[tuple[int, int]] = set()
    for _ in range(25):
        heads = {w: [rng.choice([0.0, 0.5, 1.0]), rng.choice([0.0, 1.0]), rng.choice([0.05, 1.0])] for w in range(5)}
        stages = [Stage(s, tuple(ts), 0.1 * s) for s, ts in ready.items() if ts]
        uses = {needs(incs[t]) for s in stages for t in s.tasks}
        want = place_singly(stages, heads, incs.__getitem__, HARD, uses=uses)
        assert place_singly(stages, heads, incs.__getitem__, HARD, uses=uses, fronts=fronts) == want
        for t, _ in want:
            ready[t[0]].remove(t)
            done.add(t)
        s = rng.randrange(4)
        waiting = [k for k in incs if k[0] == s and k not in done and k not in ready[s]]
        if rng.random() < 0.3 and waiting:  # a task of stage s became ready
            ready[s] = sorted([*ready[s], rng.choice(waiting)])
    assert len(done) > 20
