"""The one cluster state every driver shares: the physical truth, and the one place decisions apply.

:class:`ClusterState` owns nodes, slots, per-node capacity, node queues, running and suspended
tasks with their attained service, and DAG readiness (the tables: its base,
:class:`~bridge.cluster.tables.ClusterTables`), and writes what is measured
(:class:`~bridge.cluster.measure.SegmentLog`). It receives the events of
``policies.framework.api`` from a :class:`~bridge.cluster.kernel.Kernel`, hands them to the policy's hooks
and applies the decisions they return (:meth:`ClusterState.apply`, a chain of type tests), checking
each against the truth: a slot runs one task at a time, a task is launched once, only a suspended
task can be resumed, a DAG task starts only when its parents are done, a task's demand must fit
its node's free capacity. A decision that contradicts the truth raises
:class:`~policies.framework.api.DecisionError` with a :class:`~policies.framework.api.Status`.

What a decision causes comes out as **effects**, appended to the list the kernel schedules:
messages to a hook (``ProbeArrival``, ``TaskRequest``, ``Heartbeat``, ``Timer``, ...) stamped
``now + spec.network_delay`` (zero live), and the task-lifecycle calls on the driver's
:class:`~bridge.cluster.runner.TaskRunner`, the one thing that differs between worlds: the simulator plays a task's
duration as a ``SegmentEnd`` event; the Spark adapter turns a started task into a grant; the
node driver resizes the task's container. Drivers report a task's end with :meth:`finish`.

Queued entries have one identity rule everywhere: an entry is the ``ProbeInfo`` object that was
sent (sending one object to a node twice queues two occurrences of it). Timing, with
d = ``spec.network_delay`` one way:

* Assign/Probe entries reach their nodes after d; a bound Run starts at once.
* An unbound Run reserves the slot and the TaskRequest reaches the scheduler after d; the
  Launch/Cancel reply reaches the node after another d (a task starts 2d after its probe ran).
  A launched task is started when the Launch is applied, its run segment beginning when the
  reply arrives (one event less per task; the slot shows the task from the Launch on).
* TaskFinished, TaskStarted, Heartbeat and ProbeRejected reach the scheduler side after d.
* A Steal asks its victims in order, all at ``now + steal_delay`` and in one hook call (the policy
  answers with the Give of the first victim that has work), and given entries travel in
  ``steal_delay`` (0 by default: the thesis models stealing as free). Suspend/Resume and
  SetTimer act at the requested instant.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from bridge.cluster.events import Deliver, FreeSlot, OffSlotEnd, SegmentEnd
from bridge.cluster.kernel import Kernel
from bridge.cluster.measure import SegmentLog
from bridge.cluster.runner import Pausing, TaskRunner, TimedRunner
from bridge.cluster.slots import Reserved, Running
from bridge.cluster.tables import ClusterTables, JobRun, Queued
from policies.framework.api import (
    Assign, BaseEvent, Cancel, ClusterSpec, DecisionError, Drop, Give, Heartbeat, JobArrival, Launch,
    Probe, ProbeArrival, ProbeInfo, ProbeRejected, QueuedTaskEnded, Reject, Resume, Run, SendHeartbeat, SetTimer,
    SlotFreed, Steal, StealAttempt, Suspend, TaskFinished, TaskRequest, TaskStarted, Timer,
    check_policy, hooks_of,
)
from workloads.model import Job


class ClusterState(ClusterTables):
    """The physical truth of one cluster under one policy, fed by ``kernel``.

    ``report_long(job)`` (optional) is the *reporting* classification used only for the
    head-of-line counters; it never influences scheduling. ``record=True`` keeps every event
    and the decisions it caused. ``switch_cost`` (seconds) is the context switch a resumed task
    pays before it progresses. A policy whose attribute ``early_start`` is true may start a DAG
    task before its parents finish (dependency-oblivious baselines): the start counts as a
    *disorder* and the task holds its slot and resources without progress until its parents
    are done. ``keep_log=False`` records no segments (a long-lived live service).

    ``offslot_share`` (simulated worlds; 0: the thesis' model) is how fast a task progresses off
    its slot, as a share of full speed: a bound entry queued at a node, or a suspended task (the
    live node driver runs both in containers shrunk to the node agent's minimum share). Such a
    task may end off its slot: :meth:`end_off_slot` finishes it and tells a policy that has the
    ``on_queued_task_ended`` hook; any other policy gives it a slot first, where it ends at once.
    Off-slot progress shortens what is left of the task but is not ``attained`` service."""

    def __init__(self, policy: Any, spec: ClusterSpec, kernel: Kernel, runner: TaskRunner, *,
                 steal_delay: float = 0.0, report_long: Callable[[Job], bool] | None = None,
                 record: bool = False, switch_cost: float = 0.0, keep_log: bool = True,
                 offslot_share: float = 0.0) -> None:
        status = check_policy(policy)
        if not status.ok:
            raise DecisionError(status)
        if steal_delay < 0:
            raise ValueError(f"steal_delay must be >= 0, got {steal_delay}")
        if switch_cost < 0:
            raise ValueError(f"switch_cost must be >= 0, got {switch_cost}")
        if not 0 <= offslot_share <= 1:
            raise ValueError(f"offslot_share must be within [0, 1], got {offslot_share}")
        super().__init__(spec, kernel, report_long, SegmentLog(records=[] if record else None),
                         keep_log, offslot_share)
        self.policy, self.runner = policy, runner
        self._run_task, self._pause_task = runner.run, runner.pause
        # the simulator's runner, typed: compiled, its ``run`` per task is a native call, where a
        # runner's bound method is a Python call boxing its arguments
        self._timed = runner if isinstance(runner, TimedRunner) else None
        self._queued = runner.queued if runner.notices_queues else None
        self.switch_cost = switch_cost
        self.early_start = bool(getattr(policy, "early_start", False))
        self.delay = spec.network_delay
        self.steal_delay = steal_delay
        self._hooks = {h: getattr(policy, h) for h in hooks_of(policy)}
        self._records = self.log.records
        self._on_probe = self._hooks.get("on_probe_arrival")
        self._on_freed = self._hooks.get("on_slot_freed")
        self._on_request = self._hooks.get("on_task_request")
        self._on_steal = self._hooks.get("on_steal_attempt")
        self._on_sched_timer = self._hooks.get("on_timer")
        self._on_node_timer = self._hooks.get("on_node_timer")
        self._on_queued_end = self._hooks.get("on_queued_task_ended")
        self._notify_start = "on_task_started" in self._hooks
        self._notify_finish = "on_task_finished" in self._hooks
        # the driver's, called when a job's last task ends, with the effects list (the simulator's
        # arrivals of jobs that wait for others, ``Job.after``); None live
        self.job_done: Callable[[int, float, list[Any]], None] | None = None
        k = kernel
        k.on(ProbeArrival, self._on_probe_arrival)
        k.on(Deliver, self._on_deliver)
        k.on(TaskRequest, self._on_task_request)
        k.on(FreeSlot, self._on_free_slot)
        k.on(TaskFinished, self._make_dispatch("on_task_finished"))
        k.on(TaskStarted, self._make_dispatch("on_task_started"))
        k.on(Heartbeat, self._make_dispatch("on_heartbeat"))
        k.on(ProbeRejected, self._make_dispatch("on_probe_rejected"))
        k.on(Timer, self._on_timer)
        k.on(StealAttempt, self._on_steal_attempt)
        k.on(SegmentEnd, self._on_segment_end)
        k.on(OffSlotEnd, self._on_offslot_end)

    # ------------------------------------------------------------------------------- applying
    def apply(self, ev: BaseEvent, decisions: Iterable[Any] | None, out: list[Any]) -> list[Any]:
        """Apply the ``decisions`` a hook returned for ``ev``, at ``ev.time``; effects go to ``out``."""
        records = self._records
        if decisions:
            # hooks return tuples (compiled, a tuple-typed loop is indexed: no iterator object)
            ds: tuple[Any, ...] = decisions if isinstance(decisions, tuple) else tuple(decisions)
            if records is not None:
                records.append((ev, ds))
            now = ev.time
            for d in ds:
                self._apply_one(d, now, out)
        elif records is not None:
            records.append((ev, ()))
        return out

    def _apply_one(self, d: Any, now: float, out: list[Any]) -> None:
        """One decision, by its type (a chain of type tests, most frequent first: compiled, each
        branch is a direct call, where a table of bound methods costs a lookup and a Python call)."""
        if isinstance(d, Run):
            self._run(d, now, out)
        elif isinstance(d, Launch):
            self._launch(d, now, out)
        elif isinstance(d, Probe):
            self._probe(d, now, out)
        elif isinstance(d, Cancel):
            self._cancel(d, now, out)
        elif isinstance(d, Assign):
            self._assign(d, now, out)
        elif isinstance(d, SetTimer):
            self._set_timer(d, now, out)
        elif isinstance(d, SendHeartbeat):
            self._send_heartbeat(d, now, out)
        elif isinstance(d, Suspend):
            self._suspend(d, now, out)
        elif isinstance(d, Resume):
            self._resume(d, now, out)
        elif isinstance(d, Reject):
            self._reject(d, now, out)
        elif isinstance(d, Drop):
            self._drop(d, now, out)
        elif isinstance(d, Steal):
            self._steal(d, now, out)
        elif isinstance(d, Give):
            self._give(d, now, out)
        else:
            raise self._fail(f"not a decision: {type(d).__name__}", d)

    def _make_dispatch(self, hook: str) -> Callable[[Any], list[Any] | None]:
        fn = self._hooks.get(hook)
        if fn is None:
            return lambda ev: None
        # compiled, ``self.apply`` in the closure is a native call (a bound method was a Python one)
        return lambda ev: self.apply(ev, fn(ev, self.view), [])

    # ------------------------------------------------------------------------------- events in
    def job_arrived(self, ev: JobArrival, out: list[Any]) -> list[Any]:
        """A job arrived: its tasks become launchable, and the policy hears of it."""
        job = ev.job
        jid = job.job_id
        if jid in self._jobs_by_id:
            raise ValueError(f"duplicate job id {jid}")
        self._jobs_by_id[jid] = job
        self._runs.set(jid, JobRun(job, self.report_long is not None and bool(self.report_long(job))))
        return self.apply(ev, self._hooks["on_job_arrival"](ev, self.view), out)

    def _on_probe_arrival(self, ev: ProbeArrival) -> list[Any]:
        return self._probe_arrived(ev, [])

    def _probe_arrived(self, ev: ProbeArrival, out: list[Any]) -> list[Any]:
        """An entry reached its node: it is queued there and the policy hears of it; effects
        go to ``out``."""
        node, probe = ev.node, ev.probe
        self._counters.entries_arrived += 1
        flag = long = False
        if self.report_long is not None:
            if self._runs[probe.job_id].long:
                long = True
                self._long_at[node] += 1
            elif self._long_at[node] > 0:
                flag = True
                self._counters.probes_behind_long += 1
        q = self._queues[node]
        key: object = id(probe)
        rec = q.get(key)
        if rec is None:
            q[key] = Queued(probe, 1, int(flag), long)
        else:
            rec.copies += 1
            rec.flagged += flag
        self._qlen[node] += 1
        if self._queued is not None:
            self._queued(node, probe)
        fn = self._on_probe
        if fn is None:
            raise self._fail("policy sends entries to nodes but has no on_probe_arrival hook", ev)
        if self.offslot_share and probe.task is not None:
            self._offslot_start(node, probe.job_id, probe.task, 0.0, ev.time, out)
        return self.apply(ev, fn(ev, self.view), out)

    def _on_task_request(self, ev: TaskRequest) -> list[Any]:
        self._counters.task_requests += 1
        fn = self._on_request
        if fn is None:
            raise self._fail("policy runs unbound probes but has no on_task_request hook", ev)
        return self.apply(ev, fn(ev, self.view), [])

    def _on_timer(self, ev: Timer) -> list[Any]:
        self._counters.timers += 1
        fn = self._on_sched_timer if ev.node is None else self._on_node_timer
        if fn is None:
            raise self._fail("timer fired but the policy has no hook for it", ev)
        return self.apply(ev, fn(ev, self.view), [])

    def _on_free_slot(self, ev: FreeSlot) -> list[Any] | None:
        self._slots[ev.node][ev.slot] = None
        self._nfree[ev.node] += 1
        return self._slot_freed(ev.node, ev.slot, -1, -1, [])

    def _slot_freed(self, node: int, slot: int, job_id: int, task: int, out: list[Any]) -> list[Any]:
        fn = self._on_freed
        if fn is not None:
            ev = SlotFreed(self.kernel.now, node, slot, job_id, task)
            self.apply(ev, fn(ev, self.view), out)
        return out

    def _on_segment_end(self, ev: SegmentEnd) -> list[Any] | None:
        """A runner's run segment reached its end, unless a suspension made it stale."""
        r = self._slots[ev.node][ev.slot]
        if not isinstance(r, Running) or r.token != ev.token:   # (compiled: typed, native field reads)
            return None
        return self.finish(ev.node, ev.slot, ev.time)

    def finish(self, node: int, slot: int, now: float) -> list[Any]:
        """The task running on ``node``/``slot`` completed at ``now``: its slot is free, its job
        may be done, its DAG children may become ready, and the policy hears it."""
        r: Running = self._slots[node][slot]
        self._end_segment(r, node, slot, now, 1)
        jid, task = r.job_id, r.task
        if r.long:
            self._long_at[node] -= 1
        if self.offslot_share:
            self._offslot_work.finished(jid, task)
        out: list[Any] = []
        self._count_done(jid, task, now, out)
        if self._notify_finish and (r.probe is None or r.probe.notify):
            out.append(TaskFinished(now + self.delay, node, slot, jid, task, now))
        return self._slot_freed(node, slot, jid, task, out)

    def finish_suspended(self, node: int, job_id: int, task: int, now: float) -> list[Any]:
        """A suspended task ended anyway (live: it was killed, or it ran on where tasks cannot
        pause): it leaves the node, and the scheduler side hears it finished."""
        r = self._suspended[node].pop((job_id, task))
        self.view.suspended_changed(node)
        out: list[Any] = []
        self._count_done(job_id, task, now, out)
        if self._notify_finish and (r.probe is None or r.probe.notify):
            out.append(TaskFinished(now + self.delay, node, -1, job_id, task, now))
        return out

    def _on_offslot_end(self, ev: OffSlotEnd) -> list[Any] | None:
        """A task off its slot completed its work: simulated (unless its token went stale), or
        reported by a live driver (token -1), which sends it only if :attr:`hears_queued_ends`."""
        if ev.token >= 0:
            if not self._offslot_work.is_current(ev.job_id, ev.task, ev.token):
                return None
            self._offslot_work.exhaust(ev.job_id, ev.task, ev.time)
        else:
            for slot, r in enumerate(self._slots[ev.node]):
                if r.__class__ is Running and r.job_id == ev.job_id and r.task == ev.task:
                    return self.finish(ev.node, slot, ev.time)   # given a slot since, the same instant
        return self.end_off_slot(ev.node, ev.job_id, ev.task, ev.time)

    @property
    def hears_queued_ends(self) -> bool:
        """Whether the policy has the ``on_queued_task_ended`` hook (:meth:`end_off_slot`)."""
        return self._on_queued_end is not None

    def end_off_slot(self, node: int, job_id: int, task: int, now: float) -> list[Any] | None:
        """Task ``job_id``/``task``, queued at ``node`` as a bound entry or suspended there, ended
        off its slot. If the policy has the ``on_queued_task_ended`` hook, the task leaves the queue
        (or the suspended set) finished, the scheduler side hears TaskFinished (slot -1) and the
        node side QueuedTaskEnded: the effects are returned. Otherwise None: nothing changes, and
        the driver ends the task when the policy next gives it a slot."""
        fn = self._on_queued_end
        if fn is None:
            return None
        key = (job_id, task)
        self._offslot_work.forget(job_id, task)
        r = self._suspended[node].pop(key, None)
        probe: ProbeInfo | None = None
        if r is not None:
            self.view.suspended_changed(node)
            if r.long:
                self._long_at[node] -= 1
            notify = r.probe is None or r.probe.notify
        else:
            probe = next((q.entry for q in self._queues[node].values()
                          if q.entry.task == task and q.entry.job_id == job_id), None)
            run = self._runs.get(job_id)
            launched = run.launched if run is not None else None
            if probe is None or launched is None or launched[task]:
                raise ValueError(f"task {job_id}.{task} is neither queued nor suspended at node {node}")
            self._dequeue(node, probe, key)
            launched[task] = True
            notify = probe.notify
        self._counters.queued_ends += 1
        out: list[Any] = []
        self._count_done(job_id, task, now, out)
        if self._notify_finish and notify:
            out.append(TaskFinished(now + self.delay, node, -1, job_id, task, now))
        ev = QueuedTaskEnded(now, node, job_id, task, probe)
        return self.apply(ev, fn(ev, self.view), out)

    def _count_done(self, jid: int, task: int, now: float, out: list[Any]) -> None:
        run = self._runs[jid]
        run.left -= 1
        if run.left == 0:
            self.log.job_finish[jid] = now
            run.launched = None
            run.readiness = None
            if self.job_done is not None:
                self.job_done(jid, now, out)
        elif run.readiness is not None:
            for t in run.readiness.finish(task):
                self._unblock(jid, t, now, out)

    def vacate(self, node: int, slot: int) -> list[Any]:
        """A foreign task left ``slot``: the node side hears the slot is free."""
        f = self._slots[node][slot]
        if f.demand is not None and self._capacities:
            self._release(node, f.demand)
        self._slots[node][slot] = None
        self._nfree[node] += 1
        return self._slot_freed(node, slot, -1, -1, [])

    def _on_steal_attempt(self, ev: StealAttempt) -> list[Any]:
        """The thief asks its victims in order, all at this instant, in one call of the policy,
        which answers with the Give of the first victim that has work. The victims asked are
        counted up to that one (the first of its occurrences in ``ev.victims``), else all."""
        fn = self._on_steal
        if fn is None:
            raise self._fail("policy steals but has no on_steal_attempt hook", ev)
        decisions = fn(ev, self.view)
        victims = ev.victims
        asked = len(victims)
        for d in decisions:
            if d.__class__ is Give and d.probes:
                # where the victim stands among those asked (compiled: a native loop, where `in` and
                # `index` on the tuple were a generic test and a Python method call)
                victim: int = d.victim
                at = -1
                for i, v in enumerate(victims):
                    if v == victim:
                        at = i
                        break
                if d.thief != ev.thief or at < 0:
                    raise self._fail(f"Give from node {d.victim} to node {d.thief} answers a steal of "
                                     f"node {ev.thief} from {victims}", d)
                asked = at + 1
                break
        self._counters.steal_requests += asked
        return self.apply(ev, decisions, [])

    # ------------------------------------------------------------------------------- decisions
    def _start(self, node: int, slot: int, jid: int, task: int, probe: ProbeInfo | None, flag: bool,
               now: float, out: list[Any]) -> None:
        run = self._runs.get(jid)
        launched = run.launched if run is not None else None
        if run is None or launched is None:
            raise self._fail(f"job {jid} is unknown or already finished", (node, slot, jid, task))
        if not 0 <= task < len(launched):
            raise self._fail(f"job {jid} has no task {task}", (node, slot, jid, task))
        if launched[task]:
            raise self._fail(f"task {jid}.{task} was already launched", (node, slot, jid, task))
        rd = run.readiness
        early = rd is not None and not rd.is_ready(task)
        if early and not self.early_start:
            raise self._fail(f"task {jid}.{task} is not ready (DAG parents unfinished)", (node, slot, jid, task))
        demand = None
        if self._capacities:
            demands = run.demands
            if demands is not None:
                demand = demands[task]
                self._take(node, demand, (node, slot, jid, task))
        launched[task] = True
        self._token += 1
        long = run.long
        if long:
            self._long_at[node] += 1
        if flag:
            self._counters.short_tasks_after_long += 1
        r = self._slots[node][slot] = Running(jid, task, now, 0.0, self._token, probe, demand, flag, long)
        self.view.running_changed(node)
        self._counters.launches += 1
        done = self._offslot_work.stop(jid, task, now) if self.offslot_share else 0.0
        if early:
            self._block(r, node, slot)
        else:
            self._play(node, slot, r, now + max(run.durations[task] - done, 0.0), out)
        if self._notify_start and (probe is None or probe.notify):
            out.append(TaskStarted(now + self.delay, node, slot, jid, task))

    def _play(self, node: int, slot: int, r: Running, until: float, out: list[Any]) -> None:
        """The runner runs ``r``'s segment until ``until``."""
        timed = self._timed
        if timed is not None:
            timed.run(node, slot, r, until, out)
        else:
            self._run_task(node, slot, r, until, out)

    def _unblock(self, jid: int, task: int, now: float, out: list[Any]) -> None:
        """A task started early became ready: it progresses from now on."""
        where = self._blocked.pop((jid, task), None)
        if where is None:
            return
        r = self._slots[where[0]][where[1]]
        r.hold = now - r.start
        self._token += 1
        r.token = self._token
        left = self._runs[jid].durations[task] - r.attained
        if self.offslot_share:
            left -= self._offslot_work.done(jid, task)
        self._play(where[0], where[1], r, now + max(left, 0.0), out)

    def _run(self, d: Run, now: float, out: list[Any]) -> None:
        node, slot, probe = d.node, d.slot, d.probe
        row = self._slots[node]
        if not 0 <= slot < len(row) or row[slot] is not None:
            raise self._fail(f"slot {slot} of node {node} is not free", d)
        flag = self._flag_of(node, probe, d) if d.keep else self._dequeue(node, probe, d)
        self._nfree[node] -= 1
        if probe.task is not None:
            self._start(node, slot, probe.job_id, probe.task, probe, flag, now, out)
        else:
            row[slot] = Reserved(probe, d.keep, flag)
            out.append(TaskRequest(now + self.delay, node, slot, probe))

    def _launch(self, d: Launch, now: float, out: list[Any]) -> None:
        """The task starts when the reply reaches the node, d from now: it is started here, as of
        then (no event for the reply's arrival; the slot shows the task from now on)."""
        res = self._reservation(d.node, d.slot, d)
        if res.probe.job_id != d.job_id:
            raise self._fail(f"launch of job {d.job_id} answers a probe of job {res.probe.job_id}", d)
        self._start(d.node, d.slot, d.job_id, d.task, res.probe, res.flag, now + self.delay, out)

    def _cancel(self, d: Cancel, now: float, out: list[Any]) -> None:
        res = self._reservation(d.node, d.slot, d)
        self._counters.cancels += 1
        if res.keep and id(res.probe) in self._queues[d.node]:
            self._dequeue(d.node, res.probe, d)
        res.keep = False
        out.append(FreeSlot(now + self.delay, d.node, d.slot))

    def _probe(self, d: Probe, now: float, out: list[Any]) -> None:
        nodes = d.nodes
        n = self._n_nodes
        for node in nodes:   # compiled: a native loop, where min() and max() were Python-level calls
            if not 0 <= node < n:
                raise self._fail(f"node out of range 0..{n - 1} in {nodes}", d)
        if len(nodes) == 1:
            out.append(ProbeArrival(now + self.delay, nodes[0], d.probe))
        elif nodes:
            out.append(Deliver(now + self.delay, tuple(nodes), d.probe))
        self._counters.probes_sent += len(nodes)

    def _on_deliver(self, ev: Deliver) -> list[Any]:
        """All copies of one Probe decision arrive at once: one ProbeArrival per node, in order."""
        out: list[Any] = []
        t, p = ev.time, ev.probe
        for node in ev.nodes:
            self._probe_arrived(ProbeArrival(t, node, p), out)
        return out

    def _assign(self, d: Assign, now: float, out: list[Any]) -> None:
        if d.probe.task is None:
            raise self._fail("Assign needs a bound task (probe.task)", d)
        if not 0 <= d.node < self._n_nodes:
            raise self._fail(f"node {d.node} out of range", d)
        out.append(ProbeArrival(now + self.delay, d.node, d.probe))

    def _drop(self, d: Drop, now: float, out: list[Any]) -> None:
        self._dequeue(d.node, d.probe, d)
        self._counters.dropped_entries += 1

    def _suspend(self, d: Suspend, now: float, out: list[Any]) -> None:
        r = self._slots[d.node][d.slot]
        if r.__class__ is not Running or r.start > now:   # (a launched task starts once the reply arrives)
            raise self._fail(f"slot {d.slot} of node {d.node} runs no task", d)
        idle = self._end_segment(r, d.node, d.slot, now, 0)
        r.attained += now - r.start - idle
        r.token = -1
        if self._blocked:
            self._blocked.pop((r.job_id, r.task), None)
        self._suspended[d.node][(r.job_id, r.task)] = r
        self.view.suspended_changed(d.node)
        self._counters.suspends += 1
        if self._pause_task(d.node, d.slot, r, now, out) is Pausing.KILL:  # re-run as new work: this one is done
            self._counters.kills += 1
            out += self.finish_suspended(d.node, r.job_id, r.task, now)
        elif self.offslot_share:
            self._offslot_start(d.node, r.job_id, r.task, r.attained, now, out)

    def _resume(self, d: Resume, now: float, out: list[Any]) -> None:
        r = self._suspended[d.node].get((d.job_id, d.task))
        if r is None:
            raise self._fail(f"task {d.job_id}.{d.task} is not suspended on node {d.node}", d)
        if self._slots[d.node][d.slot] is not None:
            raise self._fail(f"slot {d.slot} of node {d.node} is not free", d)
        if r.demand is not None:
            self._take(d.node, r.demand, d)
        del self._suspended[d.node][(d.job_id, d.task)]
        self._token += 1
        r.token = self._token
        r.start = now
        self._slots[d.node][d.slot] = r
        self.view.running_changed(d.node)
        self.view.suspended_changed(d.node)
        self._nfree[d.node] -= 1
        self._counters.resumes += 1
        done = self._offslot_work.stop(d.job_id, d.task, now) if self.offslot_share else 0.0
        run = self._runs[d.job_id]
        if run.readiness is not None and not run.readiness.is_ready(d.task):
            self._block(r, d.node, d.slot, first=False)
            return
        r.hold = self.switch_cost
        left = run.durations[d.task] - r.attained - done
        self._play(d.node, d.slot, r, now + self.switch_cost + max(left, 0.0), out)

    def _steal(self, d: Steal, now: float, out: list[Any]) -> None:
        if d.victims:
            out.append(StealAttempt(now + self.steal_delay, d.thief, tuple(d.victims)))

    def _give(self, d: Give, now: float, out: list[Any]) -> None:
        if not d.probes:
            return
        t = now + self.steal_delay
        for p in d.probes:
            self._dequeue(d.victim, p, d)
            out.append(ProbeArrival(t, d.thief, p))
        self._counters.steals += 1
        self._counters.stolen_entries += len(d.probes)

    def _reject(self, d: Reject, now: float, out: list[Any]) -> None:
        if d.probe is None:
            run = self._runs.get(d.job_id)
            if run is None or run.launched is None:
                raise self._fail(f"cannot reject job {d.job_id}: unknown or finished", d)
            if any(run.launched):
                raise self._fail(f"cannot reject job {d.job_id}: some of its tasks were launched", d)
            self.log.rejected_jobs[d.job_id] = d.status
            run.launched = None
            return
        if self._dequeue(d.node, d.probe, d):
            # refused on the spot, it never waited behind the long task (Table 3.2 counts queued ones)
            self._counters.probes_behind_long -= 1
        self._counters.rejected_probes += 1
        out.append(ProbeRejected(now + self.delay, d.node, d.probe, d.status, d.payload))

    def _set_timer(self, d: SetTimer, now: float, out: list[Any]) -> None:
        at = d.at
        if at < now:
            # a timer computed as "now" by float arithmetic may land an ulp early: round it up
            if now - at > 1e-9 * max(1.0, abs(now)):
                raise self._fail(f"timer set in the past ({at} < {now})", d)
            at = now
        out.append(Timer(at, d.node, d.key))

    def _send_heartbeat(self, d: SendHeartbeat, now: float, out: list[Any]) -> None:
        self._counters.heartbeats += 1
        if "on_heartbeat" in self._hooks:
            out.append(Heartbeat(now + self.delay, d.node, d.payload))
