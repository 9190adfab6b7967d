"""Kairos on tiny hand-checked scenarios (thesis Algorithms 2 and 3) and in the simulator."""
from __future__ import annotations

import pytest

from bridge.sim.engine import simulate
from policies.framework.api import (
    Assign, ClusterSpec, Heartbeat, JobArrival, PolicyEnv, ProbeArrival, ProbeInfo, Resume, Run,
    RunningTask, SendHeartbeat, SetTimer, SlotFreed, Suspend, TaskFinished, Timer,
)
from policies.kairos.kairos import Age, CentralOrder, Kairos, KairosConfig, KairosHeartbeat, Starvation, TieBreak
from policies.framework.registry import ConfigError, config_for, create
from tests.unit.thesis_fakes import FakeView, env
from workloads.model import Job


def _kairos(n_nodes: int, slots: int = 1, **config: object) -> tuple[Kairos, FakeView]:
    e = env(n_nodes, slots)
    return Kairos(KairosConfig(**config), e), FakeView(e.cluster)


def _of(kind: type, decisions: object) -> list:
    return [d for d in decisions if isinstance(d, kind)]


def test_las_resumes_the_least_attained_suspended_task() -> None:
    policy, view = _kairos(1)
    view.now = 500.0
    view.susp[0] = [RunningTask(-1, 1, 0, 0.0, 50.0), RunningTask(-1, 2, 0, 0.0, 20.0),
                    RunningTask(-1, 3, 0, 0.0, 80.0)]
    out = policy.on_slot_freed(SlotFreed(500.0, 0, 0, 9, 0), view)
    assert _of(Resume, out) == [Resume(0, 0, 2, 0)]


def test_arrival_preempts_the_oldest_running_task() -> None:
    policy, view = _kairos(1, slots=2)
    view.now = 100.0
    view.run[0] = [RunningTask(0, 1, 0, 90.0, 0.0), RunningTask(1, 2, 0, 30.0, 0.0)]  # ages 10, 70
    probe = ProbeInfo(5, 0)
    out = policy.on_probe_arrival(ProbeArrival(100.0, 0, probe), view)
    assert out[:2] == [Suspend(0, 1), Run(0, 1, probe)]
    timers = _of(SetTimer, out)   # an idle task now exists: both slots get quantum timers
    assert sorted(t.at for t in timers) == [190.0, 200.0]   # slot 0 started at 90; slot 1 now


def test_quantum_swaps_equal_ages_and_keeps_younger_running() -> None:
    policy, view = _kairos(1, w=10.0)
    view.run[0] = [RunningTask(0, 1, 0, 0.0, 0.0)]
    view.now = 5.0
    out = policy.on_probe_arrival(ProbeArrival(5.0, 0, ProbeInfo(2, 0)), view)  # preempts job 1 (age 5)
    view.run[0] = [RunningTask(0, 2, 0, 5.0, 0.0)]
    view.susp[0] = [RunningTask(-1, 1, 0, 0.0, 5.0)]
    (timer,) = _of(SetTimer, out)
    assert timer.at == 15.0
    view.now = 15.0   # job 2 attained 10 > 5: swap back
    out = policy.on_node_timer(Timer(15.0, 0, timer.key), view)
    assert out[:2] == [Suspend(0, 0), Resume(0, 0, 1, 0)]
    view.run[0] = [RunningTask(0, 1, 0, 15.0, 5.0)]
    view.susp[0] = [RunningTask(-1, 2, 0, 5.0, 10.0)]
    (timer,) = _of(SetTimer, out)
    view.now = timer.at   # job 1 (age 5 + 10) vs job 2 (10): the suspended one is younger -> swap
    out = policy.on_node_timer(Timer(timer.at, 0, timer.key), view)
    assert out[:2] == [Suspend(0, 0), Resume(0, 0, 2, 0)]


def test_starvation_guard_protects_a_task_preempted_too_often() -> None:
    policy, view = _kairos(1, w=10.0, starvation_preemptions=0, starvation_quanta=2)
    view.run[0] = [RunningTask(0, 1, 0, 0.0, 0.0)]
    view.now = 1.0
    policy.on_probe_arrival(ProbeArrival(1.0, 0, ProbeInfo(2, 0)), view)   # job 1 preempted once
    view.run[0] = []
    view.susp[0] = [RunningTask(-1, 1, 0, 0.0, 1.0)]
    view.now = 2.0
    out = policy.on_slot_freed(SlotFreed(2.0, 0, 0, 2, 0), view)
    assert _of(Resume, out) == [Resume(0, 0, 1, 0)]
    view.run[0] = [RunningTask(0, 1, 0, 2.0, 1.0)]
    view.susp[0] = []
    view.now = 3.0     # a new task arrives: job 1 is protected until 2 + 2 x 10, so it waits
    probe = ProbeInfo(3, 0)
    out = policy.on_probe_arrival(ProbeArrival(3.0, 0, probe), view)
    assert not _of(Suspend, out) and not _of(Run, out)


def _preempt_by_a_short_task(policy: Kairos, view: FakeView, at: float, job: int) -> list:
    """Job ``job``'s task arrives at node 0 (one slot, job 1's task running) and ends 0.5 s later,
    handing the slot back to job 1. Returns the arrival's decisions."""
    view.now = at
    view.run[0] = [RunningTask(0, 1, 0, view.now - 1.0, at - 1.0)]
    out = policy.on_probe_arrival(ProbeArrival(at, 0, ProbeInfo(job, 0)), view)
    if _of(Suspend, out):
        view.run[0], view.susp[0] = [], [RunningTask(-1, 1, 0, 0.0, at - 1.0)]   # the short task ended
        view.now = at + 0.5
        assert _of(Resume, policy.on_slot_freed(SlotFreed(at + 0.5, 0, 0, job, 0), view)) == [Resume(0, 0, 1, 0)]
        view.susp[0] = []
    return out


@pytest.mark.parametrize(("starvation", "protected"), [(Starvation.PREEMPTED, True), (Starvation.WAITED, False)])
def test_brief_preemptions_protect_a_task_only_by_the_yarn_count(starvation: Starvation, protected: bool) -> None:
    """A query's stages each preempt the batch task for half a second: the YARN prototype's count
    protects the batch task after N of them; the thesis' "cannot run for N quanta" never does."""
    policy, view = _kairos(1, w=2.0, starvation=starvation, starvation_preemptions=3, starvation_quanta=2)
    for i, at in enumerate([1.0, 2.0, 3.0, 4.0, 5.0]):
        out = _preempt_by_a_short_task(policy, view, at, job=10 + i)
        assert bool(_of(Suspend, out)) is (not protected or i < 4), (starvation, i)


def test_waited_runs_a_task_idle_for_n_quanta_next_and_protects_it() -> None:
    policy, view = _kairos(1, w=2.0, starvation=Starvation.WAITED, starvation_preemptions=2, starvation_quanta=3)
    view.run[0] = [RunningTask(0, 1, 0, 0.0, 0.0)]
    view.now = 10.0                  # job 1 (age 10) is suspended by job 2's arrival
    out = policy.on_probe_arrival(ProbeArrival(10.0, 0, ProbeInfo(2, 0)), view)
    assert out[:2] == [Suspend(0, 0), Run(0, 0, ProbeInfo(2, 0))]
    view.run[0], view.susp[0] = [RunningTask(0, 2, 0, 10.0, 0.0)], [RunningTask(-1, 1, 0, 0.0, 10.0)]
    (timer,) = _of(SetTimer, out)
    assert timer.at == 12.0           # job 2 (age 2 < 10) keeps the slot, but job 1 starves at 10 + 2 x 2
    out = policy.on_node_timer(Timer(12.0, 0, timer.key), view)
    (timer,) = _of(SetTimer, out)
    assert timer.at == 14.0 and not _of(Suspend, out)
    view.now = 14.0
    out = policy.on_node_timer(Timer(14.0, 0, timer.key), view)
    assert out[:2] == [Suspend(0, 0), Resume(0, 0, 1, 0)]   # older, but starving: it runs next
    view.run[0], view.susp[0] = [RunningTask(0, 1, 0, 14.0, 10.0)], [RunningTask(-1, 2, 0, 0.0, 4.0)]
    view.now = 15.0                  # protected for 3 x 2 s: a new task waits
    out = policy.on_probe_arrival(ProbeArrival(15.0, 0, ProbeInfo(3, 0)), view)
    assert not _of(Suspend, out) and not _of(Run, out)
    view.now = 20.5                  # protection over: the next arrival preempts it again
    out = policy.on_probe_arrival(ProbeArrival(20.5, 0, ProbeInfo(4, 0)), view)
    assert _of(Suspend, out) == [Suspend(0, 0)]


def _heartbeat(n: int, received: int, var: float = 0.0, total: float = 0.0) -> KairosHeartbeat:
    return KairosHeartbeat(n, var, total, received)


def test_central_never_exceeds_cores_plus_q_and_counts_in_flight_tasks() -> None:
    policy, view = _kairos(2, q=2)
    job = Job(0, 0.0, (1.0,) * 10)
    view.jobs[0] = job
    out = policy.on_job_arrival(JobArrival(0.0, job), view)
    per_node = [sum(1 for d in out if d.node == n) for n in (0, 1)]
    assert per_node == [3, 3]
    # node 0 reports 2 tasks after receiving 2 of its 3: one is still in flight -> full
    assert policy.on_heartbeat(Heartbeat(1.0, 0, _heartbeat(2, 2)), view) == []
    out = policy.on_heartbeat(Heartbeat(2.0, 0, _heartbeat(2, 3)), view)
    assert [d.node for d in out] == [0]


@pytest.mark.parametrize(("tie_break", "expected"), [(TieBreak.VAR, 1), (TieBreak.SUM, 2)])
def test_ties_on_task_count_go_to_the_lowest_key(tie_break: TieBreak, expected: int) -> None:
    policy, view = _kairos(3, q=2, tie_break=tie_break)
    for node, (var, total) in enumerate([(9.0, 1.0), (1.0, 5.0), (4.0, 0.5)]):
        policy.on_heartbeat(Heartbeat(0.0, node, _heartbeat(1, 0, var, total)), view)
    job = Job(0, 0.0, (1.0,))
    view.jobs[0] = job
    (assign,) = policy.on_job_arrival(JobArrival(0.0, job), view)
    assert isinstance(assign, Assign) and assign.node == expected


def test_heartbeat_carries_count_and_attained_variance() -> None:
    policy, view = _kairos(1, slots=2)
    view.now = 10.0
    view.run[0] = [RunningTask(0, 1, 0, 6.0, 0.0)]                    # age 4
    view.susp[0] = [RunningTask(-1, 2, 0, 0.0, 8.0)]                  # age 8
    out = policy.on_probe_arrival(ProbeArrival(10.0, 0, ProbeInfo(3, 0)), view)  # runs at age 0
    (hb,) = _of(SendHeartbeat, out)
    assert hb.payload.n_tasks == 3 and hb.payload.received == 1
    assert hb.payload.variance == pytest.approx(((4 - 4) ** 2 + (8 - 4) ** 2 + (0 - 4) ** 2) / 3)


def test_config_refuses_impossible_values_and_is_registered() -> None:
    with pytest.raises(ValueError):
        KairosConfig(q=-1)
    with pytest.raises(ValueError):
        KairosConfig(w=0)
    assert config_for("kairos", ["q=4", "w=50", "tie_break=sum"]).tie_break is TieBreak.SUM
    with pytest.raises(ConfigError, match="valid parameters"):
        config_for("kairos", ["quantum=5"])


class _CapChecked(Kairos):
    """Kairos that asserts, at every arrival, the node's task count is within N + Q."""

    def on_probe_arrival(self, ev, view):  # type: ignore[no-untyped-def]
        held = len(view.running(ev.node)) + len(view.suspended(ev.node)) + view.queued(ev.node)
        assert held <= view.spec.slots_per_node + self.config.q
        return super().on_probe_arrival(ev, view)


@pytest.mark.parametrize("slots", [1, 2])
def test_simulated_kairos_finishes_every_task_within_the_cap(slots: int) -> None:
    jobs = [Job(i, i * 0.7, tuple(0.5 + (i * 7 + k * 3) % 11 for k in range(1 + i % 5))) for i in range(60)]
    spec = ClusterSpec(4, slots)
    policy = _CapChecked(KairosConfig(q=2, w=2.0), PolicyEnv(spec, 3))
    result = simulate(jobs, policy, spec)
    assert result.unfinished == []
    assert sum(result.log.seg_done) == sum(j.n_tasks for j in jobs)
    assert result.log.counters["suspends"] == result.log.counters["resumes"] > 0
    assert create("kairos", PolicyEnv(spec, 1)).name == "kairos"


def test_periodic_heartbeats_when_an_interval_is_set() -> None:
    policy, view = _kairos(1, heartbeat_interval=5.0)
    out = policy.on_probe_arrival(ProbeArrival(1.0, 0, ProbeInfo(1, 0)), view)
    assert not _of(SendHeartbeat, out) and _of(SetTimer, out) == [SetTimer(6.0, 0, "heartbeat")]
    view.run[0] = [RunningTask(0, 1, 0, 1.0, 0.0)]
    view.now = 6.0
    out = policy.on_node_timer(Timer(6.0, 0, "heartbeat"), view)
    assert _of(SendHeartbeat, out)[0].payload.n_tasks == 1 and _of(SetTimer, out)[0].at == 11.0


def test_simulated_kairos_with_periodic_heartbeats_stays_within_the_cap() -> None:
    jobs = [Job(i, i * 0.5, (3.0,) * (1 + i % 4)) for i in range(40)]
    spec = ClusterSpec(3, 1)
    result = simulate(jobs, _CapChecked(KairosConfig(q=1, w=1.0, heartbeat_interval=2.0), PolicyEnv(spec, 1)), spec)
    assert result.unfinished == [] and sum(result.log.seg_done) == sum(j.n_tasks for j in jobs)


def test_a_quantum_that_keeps_its_task_skips_to_the_first_end_that_could_swap() -> None:
    """No-op quantum ends are skipped, and an arrival pulls a skipped timer back to the next
    quantum end: the swaps are those of a timer firing every W."""
    policy, view = _kairos(1, slots=2, w=10.0)
    view.run[0] = [RunningTask(1, 3, 0, 0.0, 0.0)]
    view.susp[0] = [RunningTask(-1, 1, 0, 0.0, 0.0), RunningTask(-1, 2, 0, 0.0, 35.0)]
    out = policy.on_slot_freed(SlotFreed(0.0, 0, 0, 9, 0), view)       # job 1 resumes on slot 0
    assert _of(Resume, out) == [Resume(0, 0, 1, 0)]
    timers = {t.key[1]: t for t in _of(SetTimer, out)}
    assert sorted((s, t.at) for s, t in timers.items()) == [(0, 10.0), (1, 10.0)]
    view.run[0] = [RunningTask(0, 1, 0, 0.0, 0.0), RunningTask(1, 3, 0, 0.0, 0.0)]
    view.susp[0] = [RunningTask(-1, 2, 0, 0.0, 35.0)]
    view.now = 10.0   # ages 10 < 35 (job 2): no swap before both have run 40 s
    for slot in (0, 1):
        out = policy.on_node_timer(Timer(10.0, 0, timers[slot].key), view)
        (timers[slot],) = out
        assert timers[slot].at == 40.0
    view.now = 23.0   # a new task preempts job 1 (age 23), which becomes the youngest idle task
    probe = ProbeInfo(5, 0)
    out = policy.on_probe_arrival(ProbeArrival(23.0, 0, probe), view)
    assert out[:2] == [Suspend(0, 0), Run(0, 0, probe)]
    skipped = timers[1]
    timers = {t.key[1]: t for t in _of(SetTimer, out)}
    assert sorted((s, t.at) for s, t in timers.items()) == [(0, 33.0), (1, 30.0)]
    assert policy.on_node_timer(Timer(40.0, 0, skipped.key), view) == []    # superseded
    view.run[0] = [RunningTask(0, 5, 0, 23.0, 0.0), RunningTask(1, 3, 0, 0.0, 0.0)]
    view.susp[0] = [RunningTask(-1, 2, 0, 0.0, 35.0), RunningTask(-1, 1, 0, 0.0, 23.0)]
    view.now = 30.0   # job 3 (age 30) is older than job 1 (23): swap at the pulled-back quantum end
    out = policy.on_node_timer(Timer(30.0, 0, timers[1].key), view)
    assert out[:2] == [Suspend(0, 1), Resume(0, 1, 1, 0)]


@pytest.mark.parametrize(("order", "placed"), [(CentralOrder.FIFO, (1, 0)), (CentralOrder.JOB, (0, 1))])
def test_a_later_stage_queues_at_the_tail_or_at_its_jobs_place(order: CentralOrder, placed: tuple[int, int]) -> None:
    policy, view = _kairos(1, q=0, order=order)
    two_stages = Job(0, 0.0, (1.0, 1.0), stage_of=(0, 1), stage_parents=((), (0,)))
    later = Job(1, 0.5, (1.0,) * 3)
    view.jobs.update({0: two_stages, 1: later})
    first = policy.on_job_arrival(JobArrival(0.0, two_stages), view)
    assert [(d.probe.job_id, d.probe.task) for d in first] == [(0, 0)]
    assert policy.on_job_arrival(JobArrival(0.5, later), view) == []           # the node is full
    assert policy.on_task_finished(TaskFinished(1.0, 0, 0, 0, 0, 1.0), view) == []   # until it says so
    (assign,) = policy.on_heartbeat(Heartbeat(1.0, 0, _heartbeat(0, 1)), view)
    assert (assign.probe.job_id, assign.probe.task) == placed


def _stage_mix() -> list[Job]:
    """One long two-stage job, then two-stage short jobs arriving while it runs."""
    jobs = [Job(0, 0.0, (20.0,) * 4 + (1.0,), stage_of=(0,) * 4 + (1,), stage_parents=((), (0,)))]
    jobs += [Job(i, 0.5 * i, (0.5, 0.5, 0.5), stage_of=(0, 0, 1), stage_parents=((), (0,))) for i in range(1, 12)]
    return jobs


def _query_chain(job_id: int, submit: float, stages: int = 8) -> Job:
    """A query: ``stages`` one-task stages of 0.2 s, each waiting for the one before."""
    return Job(job_id, submit, (0.2,) * stages, stage_of=tuple(range(stages)),
               stage_parents=tuple(((s - 1,) if s else ()) for s in range(stages)))


def test_waited_starvation_spares_queries_the_yarn_counts_protected_run() -> None:
    """Each stage of a query preempts the batch task on the node; the YARN count then protects
    that task for 2 W, holding the query's next stage; the thesis' reading does not."""
    spec = ClusterSpec(2, 1)
    jobs = [Job(0, 0.0, (30.0, 30.0))] + [_query_chain(i, 5.0 * i) for i in range(1, 6)]
    query_time = {}
    for starvation in Starvation:
        policy = _CapChecked(KairosConfig(q=1, w=2.0, starvation=starvation), PolicyEnv(spec, 1))
        result = simulate(jobs, policy, spec)
        assert result.unfinished == [] and sum(result.log.seg_done) == sum(j.n_tasks for j in jobs)
        query_time[starvation] = sum(result.log.job_finish[j.job_id] - j.submit for j in jobs[1:])
    assert query_time[Starvation.WAITED] < 0.8 * query_time[Starvation.PREEMPTED]


def test_job_order_is_fifo_for_one_stage_jobs_and_keeps_the_cap_for_stages() -> None:
    spec = ClusterSpec(2, 2)
    bags = [Job(i, i * 0.4, tuple(0.5 + (i + k) % 4 for k in range(1 + i % 3))) for i in range(30)]
    fifo, job = (simulate(bags, Kairos(KairosConfig(q=1, w=1.0, order=o), PolicyEnv(spec, 2)), spec)
                 for o in (CentralOrder.FIFO, CentralOrder.JOB))
    assert fifo.log.job_finish == job.log.job_finish and len(fifo.log.job_finish) == len(bags)
    stages = _stage_mix()
    result = simulate(stages, _CapChecked(KairosConfig(q=1, w=1.0, order=CentralOrder.JOB), PolicyEnv(spec, 2)), spec)
    assert result.unfinished == [] and sum(result.log.seg_done) == sum(j.n_tasks for j in stages)


def test_job_order_finishes_short_multi_stage_jobs_sooner() -> None:
    """The reason for the order: a short job's second stage no longer queues behind later jobs."""
    spec = ClusterSpec(2, 2)
    short_total = {}
    for order in CentralOrder:
        stages = _stage_mix()
        log = simulate(stages, Kairos(KairosConfig(q=1, w=1.0, order=order), PolicyEnv(spec, 2)), spec).log
        short_total[order] = sum(log.job_finish[j.job_id] - j.submit for j in stages[1:])
    assert short_total[CentralOrder.JOB] < 0.9 * short_total[CentralOrder.FIFO]


@pytest.mark.parametrize("age", list(Age))
def test_by_job_a_batch_jobs_next_task_does_not_preempt_a_younger_query(age: Age) -> None:
    """Two maps of batch user job 7 have run 6 s on the node; a query (user job 9) 2 s. A third
    map (age 0 as a task; 6 s as its job) preempts the oldest task by task, and waits by job;
    a new query task preempts a batch map either way."""
    policy, view = _kairos(1, slots=3, age=age)
    view.jobs.update({1: Job(1, 0.0, (9.0,) * 3, unit=7), 2: Job(2, 0.0, (1.0,), unit=9),
                      3: Job(3, 0.0, (1.0,), unit=9)})
    view.now = 10.0
    view.run[0] = [RunningTask(0, 1, 0, 7.0, 0.0), RunningTask(1, 1, 1, 7.0, 0.0), RunningTask(2, 2, 0, 8.0, 0.0)]
    out = policy.on_probe_arrival(ProbeArrival(10.0, 0, ProbeInfo(1, 2)), view)
    assert bool(_of(Suspend, out)) is (age is Age.TASK)
    out = policy.on_probe_arrival(ProbeArrival(10.0, 0, ProbeInfo(3, 0)), view)
    (suspend,) = _of(Suspend, out)
    assert suspend.slot in (0, 1)       # a map of job 7: by job too, 6 s against the query's 2 s


def test_by_job_kairos_finishes_every_task_within_the_cap_and_helps_short_jobs() -> None:
    spec = ClusterSpec(2, 2)
    short_total = {}
    for age in Age:
        stages = _stage_mix()
        result = simulate(stages, _CapChecked(KairosConfig(q=2, w=1.0, age=age), PolicyEnv(spec, 2)), spec)
        assert result.unfinished == [] and sum(result.log.seg_done) == sum(j.n_tasks for j in stages)
        short_total[age] = sum(result.log.job_finish[j.job_id] - j.submit for j in stages[1:])
    assert short_total[Age.JOB] < short_total[Age.TASK]
