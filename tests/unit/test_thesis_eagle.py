"""Eagle on tiny hand-checked scenarios (SSS, sticky batch probing, SRPT + bypass budget)."""
from __future__ import annotations

import pytest

from bridge.sim.engine import simulate
from policies.framework.api import (
    ClusterSpec, Drop, JobArrival, Launch, PolicyEnv, ProbeArrival, ProbeInfo, ProbeRejected,
    Reject, Run, RunningTask, SetTimer, SlotFreed, Status, TaskRequest, Timer,
)
from policies.common import srpt
from policies.common.idtable import IdTable
from policies.eagle.eagle import Eagle, EagleConfig, Snapshot
from policies.framework.registry import ConfigError, config_for
from tests.unit.thesis_fakes import FakeView, env
from workloads.model import Job
from workloads.synthetic import generate


def _eagle(n_nodes: int, **config: object) -> tuple[Eagle, FakeView]:
    e = env(n_nodes)
    return Eagle(EagleConfig(**{"cutoff": 10.0, **config}), e), FakeView(e.cluster)


def _arrive(policy: Eagle, view: FakeView, job: Job) -> list:
    view.jobs[job.job_id] = job
    return list(policy.on_job_arrival(JobArrival(job.submit, job), view))


def test_srpt_picks_least_remaining_within_the_bypass_budget() -> None:
    a = srpt.QueuedProbe(ProbeInfo(1, est=1.0))
    b = srpt.QueuedProbe(ProbeInfo(2, est=3.0))
    c = srpt.QueuedProbe(ProbeInfo(3, est=3.0))
    tasks_left = _left({1: 10, 2: 1, 3: 1})          # work left: 10 s, 3 s, 3 s
    queue = [a, b, c]
    chosen = srpt.pick(queue, tasks_left, cap=5.0)
    assert chosen == 1                               # job 2 (3 s left) bypasses job 1 (10 s left)
    srpt.charge(queue, chosen)
    assert a.bypassed == 3.0 and c.bypassed == 0.0
    del queue[1]
    # job 3 would push job 1's counter to 6 > 5 x 1: the budget forces job 1 first
    assert srpt.pick(queue, tasks_left, cap=5.0) == 0


def test_a_busy_entry_is_neither_picked_nor_charged() -> None:
    a, b, c = (srpt.QueuedProbe(ProbeInfo(j, est=1.0)) for j in (1, 2, 3))
    queue = [a, b, c]
    a.busy = True                                    # its task request is in flight on another slot
    assert srpt.pick(queue, _left({1: 1, 2: 5, 3: 2}), cap=5.0) == 2 and srpt.pick_last_fit(queue, cap=5.0) == 2
    srpt.charge(queue, 2)
    assert (a.bypassed, b.bypassed) == (0.0, 1.0)
    b.busy = c.busy = True
    assert srpt.pick(queue, _left({}), cap=5.0) is None and srpt.pick_last_fit(queue, cap=5.0) is None


def test_srpt_never_looks_past_a_long_entry() -> None:
    queue = [srpt.QueuedProbe(ProbeInfo(1, est=1.0, long=True)), srpt.QueuedProbe(ProbeInfo(2, est=1.0))]
    assert srpt.pick(queue, _left({}), cap=5.0) == 0


def _queue(*probes: ProbeInfo) -> list[srpt.QueuedProbe]:
    return [srpt.QueuedProbe(p) for p in probes]


def _left(tasks_left: dict[int, int]) -> IdTable[int]:
    table: IdTable[int] = IdTable()
    for job, n in tasks_left.items():
        table.set(job, n)
    return table


def test_last_fit_runs_the_last_entry_within_the_budget_not_the_least_remaining() -> None:
    queue = _queue(ProbeInfo(1, est=1.0), ProbeInfo(2, est=3.0), ProbeInfo(3, est=3.0))
    tasks_left = _left({1: 10, 2: 1, 3: 10})                                # 10 s, 3 s, 30 s
    assert srpt.pick(queue, tasks_left, cap=5.0) == 1                        # least work left
    assert srpt.pick_last_fit(queue, cap=5.0) == 2                           # last within 5 x 1 s
    queue[0].bypassed = 3.0                       # job 1 may now be bypassed by 2 s more only
    assert srpt.pick_last_fit(queue, cap=5.0) == 0
    queue.append(srpt.QueuedProbe(ProbeInfo(4, est=2.0)))
    assert srpt.pick_last_fit(queue, cap=5.0) == 3                           # passes over 2 and 3


def test_last_fit_runs_a_long_entry_behind_short_ones_and_charges_nothing() -> None:
    fits = _queue(ProbeInfo(1, est=1.0), ProbeInfo(2, est=4.0, long=True), ProbeInfo(3, est=1.0))
    assert srpt.pick(fits, _left({1: 1, 2: 1, 3: 1}), cap=5.0) == 0          # never past a long entry
    chosen = srpt.pick_last_fit(fits, cap=5.0)
    assert chosen == 1                                                       # the scan stops there
    srpt.charge(fits, chosen)
    assert fits[0].bypassed == 0.0
    too_long = _queue(ProbeInfo(1, est=1.0), ProbeInfo(2, est=20.0, long=True), ProbeInfo(3, est=1.0))
    assert srpt.pick_last_fit(too_long, cap=5.0) == 2                        # passed over
    assert srpt.pick_last_fit(_queue(ProbeInfo(1, est=20.0, long=True)), cap=5.0) == 0
    assert srpt.pick_last_fit([], cap=5.0) is None


@pytest.mark.parametrize(("queue_pick", "runs"), [("srpt", 2), ("last_fit", 3)])
def test_eagle_node_runs_what_queue_pick_chooses(queue_pick: str, runs: int) -> None:
    policy, view = _eagle(1, big_partition=100.0, min_probes=1, probe_ratio=0.1, queue_pick=queue_pick)
    probes = {}
    for job in (Job(1, 0.0, (1.0,)), Job(2, 0.0, (2.0,)), Job(3, 0.0, (1.0,) * 3)):   # work left 1, 2, 3 s
        (sent,) = _arrive(policy, view, job)
        probes[job.job_id] = sent.probe
    assert policy.on_probe_arrival(ProbeArrival(0.001, 0, probes[1]), view) == [Run(0, 0, probes[1], True)]
    view.run[0] = [RunningTask(0, 1, 0, 0.002, 0.0)]
    assert policy.on_task_request(TaskRequest(0.0015, 0, 0, probes[1]), view) == (Launch(0, 0, 1, 0),)
    for job_id in (2, 3):
        assert policy.on_probe_arrival(ProbeArrival(0.001, 0, probes[job_id]), view) == ()
    view.run[0] = []
    out = policy.on_slot_freed(SlotFreed(1.0, 0, 0, 1, 0), view)
    assert out == [Drop(0, probes[1]), Run(0, 0, probes[runs], True)]


def test_long_tasks_go_to_the_general_partition_by_least_work_left() -> None:
    policy, view = _eagle(10, big_partition=50.0)
    probes = _arrive(policy, view, Job(0, 0.0, (20.0,) * 5))
    nodes = sorted(n for p in probes for n in p.nodes)
    assert nodes == [5, 6, 7, 8, 9] and all(p.probe.long for p in probes)


def test_short_probes_are_rejected_at_nodes_holding_long_work() -> None:
    policy, view = _eagle(10, big_partition=50.0)
    (long_probe,) = _arrive(policy, view, Job(0, 0.0, (20.0,)))
    node = long_probe.nodes[0]
    view.run[node] = [RunningTask(0, 9, 0, 0.0, 0.0)]          # busy: the long probe just queues
    assert policy.on_probe_arrival(ProbeArrival(0.001, node, long_probe.probe), view) == ()
    short = ProbeInfo(1, est=1.0)
    view.jobs[1] = Job(1, 0.0, (1.0,))
    (reject,) = policy.on_probe_arrival(ProbeArrival(0.001, node, short), view)
    assert isinstance(reject, Reject) and reject.probe is short
    assert isinstance(reject.payload, Snapshot) and not reject.payload.marks_free(node)


def test_rejected_probe_goes_to_a_free_node_then_to_the_short_partition() -> None:
    policy, view = _eagle(10, big_partition=80.0, resend="each")
    _arrive(policy, view, Job(1, 0.0, (1.0,) * 3))
    copy = Snapshot(bits=sum(1 << n for n in range(2, 10) if n != 7), ts=5)
    status = Status()
    for _ in range(20):
        (retry,) = policy.on_probe_rejected(ProbeRejected(0.002, 3, ProbeInfo(1, est=1.0), status, copy), view)
        assert retry.nodes[0] in (0, 1, 7) and retry.probe.round == 1
    for _ in range(20):
        (retry,) = policy.on_probe_rejected(
            ProbeRejected(0.003, 7, ProbeInfo(1, est=1.0, round=1), status, copy), view)
        assert retry.nodes[0] in (0, 1) and retry.probe.round == 2


def test_rejections_of_one_instant_are_resent_together_from_the_freshest_copy() -> None:
    policy, view = _eagle(10, big_partition=80.0)           # nodes 0-1 short-only, 2-9 general
    _arrive(policy, view, Job(1, 0.0, (1.0,) * 3))
    stale = Snapshot(bits=sum(1 << n for n in range(2, 9)), ts=4)       # node 9 looks free
    fresh = Snapshot(bits=sum(1 << n for n in range(2, 10)), ts=5)      # node 9 took long work since
    status = Status()
    targets = []
    for _ in range(20):
        first = policy.on_probe_rejected(ProbeRejected(0.002, 3, ProbeInfo(1, est=1.0), status, stale), view)
        assert first == (SetTimer(0.002, None, 1),)           # waits for the rest of this instant
        assert policy.on_probe_rejected(ProbeRejected(0.002, 4, ProbeInfo(1, est=1.0), status, fresh), view) == ()
        resent = policy.on_timer(Timer(0.002, None, 1), view)
        assert len(resent) == 2 and all(p.probe.round == 1 for p in resent)
        targets += [p.nodes[0] for p in resent]
    assert set(targets) == {0, 1}                             # never node 9: the stale copy lost
    each, view = _eagle(10, big_partition=80.0, resend="each")
    _arrive(each, view, Job(1, 0.0, (1.0,) * 3))
    drawn = {each.on_probe_rejected(ProbeRejected(0.002, 3, ProbeInfo(1, est=1.0), status, stale), view)[0].nodes[0]
             for _ in range(60)}
    assert 9 in drawn                                         # "each" re-sends from the copy it has


@pytest.mark.parametrize("per", ["job", "task"])
def test_a_long_jobs_tasks_carry_the_bitvector_after_the_whole_job_is_placed(per: str) -> None:
    policy, view = _eagle(10, big_partition=50.0, bitvector_copy=per)
    probes = _arrive(policy, view, Job(0, 0.0, (20.0,) * 3))
    copies = [p.probe.info for p in probes]
    placed = [p.nodes[0] for p in probes]
    assert not any(copies[-1].marks_free(n) for n in placed)
    if per == "job":
        assert all(c is copies[0] for c in copies)
    else:                                                     # the first copy misses the later nodes
        assert copies[0].marks_free(placed[-1]) and copies[0].ts < copies[-1].ts


def test_resend_and_bitvector_copy_are_checked() -> None:
    for bad in ("resend=later", "bitvector_copy=node"):
        with pytest.raises(ConfigError):
            config_for("eagle", [bad])


def test_sticky_probe_keeps_the_node_on_the_same_job() -> None:
    policy, view = _eagle(1, big_partition=100.0, min_probes=1, probe_ratio=0.1)
    (probe_a,) = _arrive(policy, view, Job(1, 0.0, (1.0,) * 2))
    (probe_b,) = _arrive(policy, view, Job(2, 0.0, (9.0,) * 3))
    a, b = probe_a.probe, probe_b.probe
    (run,) = policy.on_probe_arrival(ProbeArrival(0.001, 0, a), view)
    assert run == Run(0, 0, a, True)
    view.run[0] = [RunningTask(0, 1, 0, 0.002, 0.0)]
    assert policy.on_probe_arrival(ProbeArrival(0.001, 0, b), view) == ()
    assert policy.on_task_request(TaskRequest(0.0015, 0, 0, a), view) == (Launch(0, 0, 1, 0),)
    view.run[0] = []
    assert policy.on_slot_freed(SlotFreed(1.0, 0, 0, 1, 0), view) == [Run(0, 0, a, True)]   # sticks
    assert policy.on_task_request(TaskRequest(1.001, 0, 0, a), view) == (Launch(0, 0, 1, 1),)
    out = policy.on_slot_freed(SlotFreed(2.0, 0, 0, 1, 1), view)
    assert out == [Drop(0, a), Run(0, 0, b, True)]               # job 1 is done: move on to job 2


def test_a_probe_of_a_job_with_no_task_left_is_dropped_when_it_arrives() -> None:
    """The node looks for such probes only when something may have made one (a job left, a probe
    came back from a request, or one arrived for a job already gone): this arrival is the last."""
    policy, view = _eagle(1, big_partition=100.0, min_probes=1, probe_ratio=0.1)
    (sent,) = _arrive(policy, view, Job(1, 0.0, (1.0,)))
    a = sent.probe
    assert policy.on_probe_arrival(ProbeArrival(0.001, 0, a), view) == [Run(0, 0, a, True)]
    view.run[0] = [RunningTask(0, 1, 0, 0.002, 0.0)]
    assert policy.on_task_request(TaskRequest(0.0015, 0, 0, a), view) == (Launch(0, 0, 1, 0),)
    view.run[0] = []
    assert policy.on_slot_freed(SlotFreed(1.0, 0, 0, 1, 0), view) == [Drop(0, a)]   # job 1 handed out its task
    assert policy.on_probe_arrival(ProbeArrival(1.5, 0, a), view) == [Drop(0, a)]   # a late copy: not run


def test_fifo_ablation_uses_one_task_per_probe() -> None:
    policy, view = _eagle(1, big_partition=100.0, min_probes=1, probe_ratio=0.1, sbp_srpt=False)
    (probe_a,) = _arrive(policy, view, Job(1, 0.0, (1.0,) * 2))
    (run,) = policy.on_probe_arrival(ProbeArrival(0.001, 0, probe_a.probe), view)
    assert run.keep is False


def test_config_refuses_impossible_values() -> None:
    with pytest.raises(ValueError, match="big_partition"):
        EagleConfig(big_partition=120.0)
    with pytest.raises(ValueError, match="general partition"):
        EagleConfig(big_partition=0.0)
    with pytest.raises(ConfigError):
        config_for("eagle", ["rounds=0"])
    assert config_for("eagle", ["sss=false"]).sss is False
    with pytest.raises(ValueError, match="queue_pick must be 'srpt' or 'last_fit', got 'lifo'"):
        EagleConfig(queue_pick="lifo")
    assert config_for("eagle", ["queue_pick=last_fit"]).queue_pick == "last_fit"


def _simulate(**config: object) -> dict[str, int]:
    kind = generate("yahoo", jobs=250, seed=4, load=0.95, nodes=150)
    jobs = [Job(i, j.submit_time, j.durations) for i, j in enumerate(kind.jobs)]
    spec = ClusterSpec(150, 1)
    policy = Eagle(EagleConfig(cutoff=90.5811, big_partition=98.0, **config), PolicyEnv(spec, 2))
    result = simulate(jobs, policy, spec, report_long=lambda j: j.estimate > 90.5811)
    assert result.unfinished == []
    assert sum(result.log.seg_done) == sum(j.n_tasks for j in jobs)
    return result.log.counters


def test_eagle_places_no_probe_behind_a_long_task() -> None:
    with_sss = _simulate()
    assert with_sss["short_tasks_after_long"] == 0
    assert with_sss["probes_behind_long"] <= with_sss["rejected_probes"]    # every such probe was refused
    without = _simulate(sss=False)
    assert without["short_tasks_after_long"] > 0 and without["rejected_probes"] == 0
