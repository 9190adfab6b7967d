"""Hand-checked tiny scenarios, one per shared mechanism and per core policy."""
from __future__ import annotations

import pytest

from bridge.sim.engine import simulate
from bridge.cluster.events import FreeSlot, SegmentEnd
from bridge.cluster.kernel import Kernel, SimulationError
from policies.framework.api import (
    Assign, ClusterSpec, DecisionError, Give, JobArrival, PolicyEnv, Probe, ProbeArrival, ProbeInfo, Run,
    RunningTask, Steal, StealAttempt,
)
from policies.common.lwl import LwlTable
from policies.common.partitions import Partition
from policies.common.probing import LateBinder, probe_count
from policies.common.stealing import first_short_group_after_long, pick_victims
from policies.framework.registry import ConfigError, config_for, create
from tests.unit.thesis_fakes import FakeView
from workloads.model import Job

D = 0.0005


# --- stealing rule (Hawk Fig. 2.3) ----------------------------------------------------------------

def _q(s: str) -> list[str]:
    return list(s)


@pytest.mark.parametrize("queue,running_short,expected", [
    ("SSLSSLS", True, (3, 5)),   # a1/a2: running short: skip leading shorts and the long, take SS
    ("LSSSLS", True, (1, 4)),    # running short, queue starts with a long
    ("SSLSS", False, (0, 2)),    # b1/b2: running long: the shorts right behind it
    ("LLSSL", False, (2, 4)),    # running long with longs queued first
    ("SSS", True, (3, 3)),       # nothing behind a long: nothing to steal
    ("", False, (0, 0)),
])
def test_first_consecutive_short_group_after_long(queue, running_short, expected):
    assert first_short_group_after_long(_q(queue), lambda e: e == "L", running_short) == expected


def test_steal_cap_limits_group():
    assert first_short_group_after_long(_q("LSSSS"), lambda e: e == "L", False, cap=2) == (1, 3)


def test_victims_never_the_thief():
    import random
    v = pick_victims(random.Random(1).random, 10, 5, 8, thief=6)
    assert len(v) == 10 and all(5 <= x < 8 and x != 6 for x in v)
    assert pick_victims(random.Random(1).random, 10, 6, 7, thief=6) == ()


def test_hawk_victim_gives_first_short_group_behind_long():
    spec = ClusterSpec(4)
    hawk = create("hawk", PolicyEnv(spec, 1), config_for("hawk", ["big_partition=50", "cutoff=10"]))
    view = FakeView(spec)
    s1, s2, s3 = (ProbeInfo(1, est=1.0) for _ in range(3))
    lg = ProbeInfo(2, est=100.0, long=True)
    for p in (s1, lg, s2, s3):
        busy = FakeView(spec, run={3: [RunningTask(0, 9, 0, 0.0, 0.0, ProbeInfo(9))]})
        hawk.on_probe_arrival(ProbeArrival(0.0, 3, p), busy)
    view.run[3] = [RunningTask(0, 9, 0, 0.0, 0.0, ProbeInfo(9))]  # running a short task
    out = hawk.on_steal_attempt(StealAttempt(1.0, 0, (2, 3, 3)), view)   # node 2 has nothing to give
    assert out == (Give(3, 0, (s2, s3)),)
    assert list(hawk.queues[3]) == [s1, lg]
    assert hawk.on_steal_attempt(StealAttempt(1.0, 0, (2, 3)), view) == ()   # nothing left behind the long


def test_hawk_idle_node_steals_from_general_partition_only():
    spec = ClusterSpec(10)
    hawk = create("hawk", PolicyEnv(spec, 1), config_for("hawk", ["big_partition=50", "steal_attempts=10"]))
    out = hawk.after_idle(2, 0, FakeView(spec))
    assert len(out) == 1 and isinstance(out[0], Steal)
    assert out[0].thief == 2 and len(out[0].victims) == 10 and all(5 <= v < 10 for v in out[0].victims)
    hawk = create("hawk", PolicyEnv(spec, 1), config_for("hawk", ["stealing=false"]))
    assert hawk.after_idle(2, 0, FakeView(spec)) == ()


def test_hawk_stealing_rescues_short_tasks_end_to_end():
    """Node 1 (general partition) runs a long task; job B's probes queue behind it. Node 0 runs
    job A, becomes idle and steals B's probes (a node steals when it *becomes* idle)."""
    spec = ClusterSpec(2)
    long_job = Job(0, 0.0, (100.0,), 100.0)
    a = Job(1, 0.5, (1.0,), 1.0)
    b = Job(2, 1.0, (1.0, 1.0), 1.0)
    hawk = create("hawk", PolicyEnv(spec, 1), config_for("hawk", ["cutoff=10", "big_partition=50"]))
    hawk.probe_rng = _Fixed([0.1, 0.1] + [0.99] * 4)   # A's probes -> node 0, B's -> node 1
    r = simulate([long_job, a, b], hawk, spec, report_long=lambda j: j.estimate > 10)
    assert r.log.counters["probes_behind_long"] == 4
    assert r.log.counters["stolen_entries"] == 4
    assert r.log.job_finish[2] < 5            # not stuck behind the 100 s task
    assert r.log.counters["short_tasks_after_long"] == 0


class _Stealer:
    """Queues every entry at its node; node 0 runs what reaches it. The second entry queued at
    node 2 makes node 0 steal from ``victims``; ``answer(ev, queued)`` is its steal hook."""

    name = "stealer"

    def __init__(self, victims, answer):
        self.victims, self.answer = victims, answer
        self.queued: dict[int, list[ProbeInfo]] = {}
        self.attempts: list[StealAttempt] = []

    def on_job_arrival(self, ev, view):
        return tuple(Assign(2, ProbeInfo(ev.job.job_id).bind(t)) for t in range(ev.job.n_tasks))

    def on_probe_arrival(self, ev, view):
        if ev.node == 0:
            return (Run(0, view.free_slot(0), ev.probe),)
        self.queued.setdefault(ev.node, []).append(ev.probe)
        return (Steal(0, self.victims),) if len(self.queued[2]) == 2 else ()

    def on_steal_attempt(self, ev, view):
        self.attempts.append(ev)
        return self.answer(ev, self.queued)


def _steal_run(victims, answer):
    policy = _Stealer(victims, answer)
    result = simulate([Job(0, 0.0, (1.0, 1.0))], policy, ClusterSpec(4))
    return policy.attempts, result.log.counters


def test_a_steal_is_one_hook_call_counting_the_victims_asked_up_to_the_giver():
    give = lambda ev, queued: (Give(2, ev.thief, (queued[2].pop(),)),)   # noqa: E731
    attempts, counters = _steal_run((1, 3, 2, 2), give)
    assert attempts == [StealAttempt(0.0005, 0, (1, 3, 2, 2))]
    assert (counters["steal_requests"], counters["steals"], counters["stolen_entries"]) == (3, 1, 1)
    assert counters["launches"] == 1             # the stolen entry ran at the thief


def test_a_steal_nobody_answers_counts_every_victim():
    attempts, counters = _steal_run((1, 3, 2, 2), lambda ev, queued: ())
    assert len(attempts) == 1 and counters["steal_requests"] == 4 and counters["steals"] == 0


@pytest.mark.parametrize("nodes", [(3, 4), (-1,), (0, 2, 4, 1)])
def test_a_probe_to_a_node_out_of_range_is_refused(nodes):
    class Prober:
        name = "prober"

        def on_job_arrival(self, ev, view):
            return (Probe(nodes, ProbeInfo(ev.job.job_id)),)

    with pytest.raises(DecisionError, match=r"node out of range 0\.\.3 in"):
        simulate([Job(0, 0.0, (1.0,))], Prober(), ClusterSpec(4))


def test_a_give_from_a_node_not_asked_is_refused():
    with pytest.raises(DecisionError, match="Give from node 2 to node 0 answers a steal of node 0 from"):
        _steal_run((1, 3), lambda ev, queued: (Give(2, ev.thief, (queued[2].pop(),)),))


class _Fixed:
    def __init__(self, xs):
        self.xs = list(xs)

    def random(self):
        return self.xs.pop(0)


# --- LWL ----------------------------------------------------------------------------------------

def test_lwl_picks_least_work_left():
    t = LwlTable(3, range(3))
    assert [t.place(0.0, 10.0) for _ in range(3)] == [0, 1, 2]   # ties: free longest, then id
    t.started(0, (0, 0), 0.0, 10.0)
    t.started(1, (0, 1), 0.0, 10.0)
    # at t=4: node 0/1 have 6 s left, node 2 has 10 s queued -> 0 (tie with 1, lower key first)
    assert t.place(4.0, 5.0) == 0
    # node 0: 6 + 5 = 11 left; node 1: 6; node 2: 10 -> node 1
    assert t.place(4.0, 1.0) == 1
    t.finished(2, (0, 2), 5.0)  # never started from the table's view, but finished: only queued work left
    assert t.work_left(0, 4.0) == pytest.approx(11.0)


def test_lwl_elapsed_time_counts_but_not_below_zero():
    t = LwlTable(2, range(2))
    t.place(0.0, 10.0)
    t.started(0, (0, 0), 0.0, 10.0)
    assert t.work_left(0, 30.0) == 0.0        # overran its estimate: no work left
    assert t.has_work(0)                      # but still busy


def test_lwl_groups_share_work():
    t = LwlTable(4, range(2, 4))
    g = t.add_group(range(0, 4))
    assert t.place(0.0, 5.0) in (2, 3)
    assert all(t.place(0.0, 1.0, g) in (0, 1) for _ in range(2))


def test_central_lwl_policy_places_on_least_loaded():
    spec = ClusterSpec(2)
    pol = create("lwl", PolicyEnv(spec, 1))
    view = FakeView(spec)
    out = pol.on_job_arrival(JobArrival(0.0, Job(0, 0.0, (10.0, 10.0, 1.0), 7.0)), view)
    assert out[0].nodes == (0, 1, 0)


# --- late binding -----------------------------------------------------------------------------

def test_sparrow_late_binding_one_task_two_probes():
    spec = ClusterSpec(2)
    pol = create("sparrow", PolicyEnv(spec, 1))
    pol.rng = _Fixed([0.1, 0.9])              # probes to node 0 and node 1
    r = simulate([Job(0, 0.0, (5.0,))], pol, spec)
    # probe arrives at d, asks for a task (arrives 2d), launch reply lands at 3d
    assert r.log.job_finish[0] == pytest.approx(3 * D + 5.0)
    assert r.log.counters["task_requests"] == 2 and r.log.counters["cancels"] == 1
    assert r.log.counters["launches"] == 1


def test_late_binder_hands_out_each_task_once():
    b = LateBinder()
    job = Job(0, 0.0, (1.0, 2.0))
    b.add(job)
    assert [b.take(0), b.take(0), b.take(0)] == [0, 1, -1]


def test_probe_count():
    assert probe_count(3, 2.0) == 6
    assert probe_count(3, 2.0, minimum=20) == 20


# --- partitions ---------------------------------------------------------------------------------

def test_partition_ranges():
    p = Partition.from_percent(100, 100, 83)
    assert (p.short_lo, p.short_hi, p.long_lo, p.long_hi) == (0, 100, 17, 100)
    assert list(p.short_only) == list(range(17))


@pytest.mark.parametrize("setting", ["big_partition=101", "big_partition=-1", "small_partition=150",
                                     "big_partition=0", "probe_ratio=0", "steal_attempts=-1"])
def test_hawk_refuses_impossible_values(setting):
    with pytest.raises(ConfigError):
        config_for("hawk", [setting])


# --- DLWL ----------------------------------------------------------------------------------------

def test_dlwl_greedy_on_snapshot_spreads_a_job():
    spec = ClusterSpec(3)
    pol = create("dlwl", PolicyEnv(spec, 1), config_for("dlwl", ["noise=false", "big_partition=100"]))
    out = pol.on_job_arrival(JobArrival(0.0, Job(0, 0.0, (4.0,) * 4, 4.0)), FakeView(spec))
    nodes = [d.node for d in out if hasattr(d, "probe")]
    assert sorted(nodes) == [0, 0, 1, 2]
    assert list(pol.snap) == [8.0, 4.0, 4.0]


def test_dlwl_srpt_runs_job_with_least_remaining_work():
    spec = ClusterSpec(1)
    pol = create("dlwl", PolicyEnv(spec, 1), config_for("dlwl", ["noise=false", "big_partition=100", "cutoff=100"]))
    view = FakeView(spec)
    view.run[0] = [RunningTask(0, 9, 0, 0.0, 0.0)]
    big = Job(1, 0.0, (3.0,) * 3, 3.0)
    small = Job(2, 0.0, (1.0,), 1.0)
    pol.on_job_arrival(JobArrival(0.0, big), view)
    pol.on_job_arrival(JobArrival(0.0, small), view)
    for t in range(3):
        pol.on_probe_arrival(ProbeArrival(0.0, 0, ProbeInfo(1, t, 3.0)), view)
    pol.on_probe_arrival(ProbeArrival(0.0, 0, ProbeInfo(2, 0, 1.0)), view)
    from policies.framework.api import SlotFreed
    view.run[0] = []
    (run,) = pol.on_slot_freed(SlotFreed(1.0, 0, 0, 9, 0), view)
    assert run.probe.job_id == 2                 # remaining 1 < 9


# --- kernel -------------------------------------------------------------------------------------

def test_kernel_orders_by_time_tier_then_sequence():
    # tiers: SegmentEnd 0, FreeSlot 1, StealAttempt 2; the node field names the event here
    k = Kernel()
    seen = []
    for kind in (SegmentEnd, FreeSlot, StealAttempt):
        k.on(kind, lambda e: seen.append(e.thief if e.__class__ is StealAttempt else e.node))
    for e in (FreeSlot(1.0, 2, 0), SegmentEnd(1.0, 1, 0, 0), StealAttempt(1.0, 4, ()), FreeSlot(1.0, 3, 0),
              StealAttempt(0.5, 0, ())):
        k.schedule(e)
    k.run()
    assert seen == [0, 1, 2, 3, 4]
    assert k.events == 5 and k.now == 1.0


def test_kernel_refuses_the_past():
    k = Kernel()
    k.on(FreeSlot, lambda e: [FreeSlot(e.time - 1, 0, 0)])
    k.schedule(FreeSlot(5.0, 0, 0))
    with pytest.raises(SimulationError):
        k.run()


def test_lwl_heap_stays_bounded_and_correct():
    t = LwlTable(3, range(3))
    for i in range(5000):
        node = t.place(float(i), 1.0)
        t.started(node, (i, 0), float(i), 1.0)
        t.finished(node, (i, 0), float(i) + 0.5)
    assert all(len(h) <= 4 * 3 + 1024 for h in t._heaps)
    assert t.place(10_000.0, 1.0) in (0, 1, 2) and not t.running[0] and not t.running[1]
