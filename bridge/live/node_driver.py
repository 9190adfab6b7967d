"""The live node-side driver: Spark task events and wall-clock timers in, a policy's node decisions
applied to real containers out.

It is the live twin of the simulator for a policy's node hooks (`on_probe_arrival`, `on_slot_freed`,
`on_node_timer`) and relays the policy's `SendHeartbeat`s to its `on_heartbeat` at once. It knows no
policy: Kairos' LAS, Big-C's or Falcon's preemption all come in as `Run`/`Suspend`/`Resume`
decisions, applied through a `ContainerPreemptor`. A task Spark started that the policy did not `Run`
is queued and held at the minimum share until the policy gives it a slot.

Thread-safe: one lock serializes events, timers and a placement side's reads, and is never held
across an agent call: decisions only record which command each container needs, and the commands
are sent after the lock is released, so a hung agent delays no offer round. A resume that failed
(agent unreachable) is retried after ``retry_s``, then at doubling intervals up to a minute: a
container left shrunk would starve its task.
Callers with a deadline (the plugin's offer rounds) `post` events to the driver's own thread (`run`).
"""
from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Hashable, Sequence

from bridge.live.node_table import LiveTask, NodeTable
from bridge.live.preemption import ContainerPreemptor, ContainerRef
from policies.api import (Code, Decision, DecisionError, Heartbeat, ProbeArrival, ProbeInfo, Resume, Run,
                          SendHeartbeat, SetTimer, SlotFreed, Status, Suspend, Timer)

log = logging.getLogger(__name__)
MAX_RETRY_S = 60.0


class LiveNodeDriver:
    """Delivers node events to ``policy`` on the wall clock ``clock`` and applies its decisions."""

    def __init__(self, policy: object, table: NodeTable, preemptor: ContainerPreemptor,
                 clock: Callable[[], float], retry_s: float = 1.0) -> None:
        self.policy, self.table, self.preemptor, self.clock = policy, table, preemptor, clock
        self.retry_s = retry_s
        self.timers: list[tuple[float, int, int | None, Hashable]] = []
        self._seq = itertools.count()
        self.lock = threading.RLock()  # public: a placement side may group its own accounting with an event
        self._io = threading.Lock()    # one sender at a time: the preemptor is not thread-safe
        self.outbox: dict[ContainerRef, tuple[str, float, float]] = {}  # container -> (action, not before, delay)
        self.inbox: queue.Queue[Callable[[], None]] = queue.Queue()

    # -- events in ----------------------------------------------------------------------------
    def task_started(self, node: int, job_id: int, task: int, ref: ContainerRef) -> None:
        """Spark started ``task`` in container ``ref`` on ``node``: the policy sees it arrive."""
        with self.lock:
            now = self._now()
            live = LiveTask(node, ProbeInfo(job_id, task), ref)
            self.table.add_queued(live)
            self._deliver("on_probe_arrival", ProbeArrival(now, node, live.probe), now)
            if live.slot < 0:
                self._throttle(live)
        self._flush()

    def task_finished(self, job_id: int, task: int) -> None:
        """Spark reported the task's end (success, failure or kill): its slot, if any, is free.

        A task can also end off a slot (it still runs at the minimum share): the policy then gets
        ``SlotFreed(slot=-1)`` naming it, so it forgets the task and reports its new load."""
        with self.lock:
            now = self._now()
            live = self.table.tasks.get((job_id, task))
            if live is None:
                return
            slot = live.slot
            self.table.remove(live)
            if live.throttled:  # the executor outlives its task: its next task must not start shrunk
                self._unthrottle(live)
            self._deliver("on_slot_freed", SlotFreed(now, live.node, slot, job_id, task), now)
        self._flush()

    def tick(self) -> None:
        """Fire every timer that is due, and retry the failed resumes that are due."""
        with self.lock:
            now = self._now()
            while self.timers and self.timers[0][0] <= now:
                _, _, node, key = heapq.heappop(self.timers)
                hook = "on_node_timer" if node is not None else "on_timer"
                self._deliver(hook, Timer(now, node, key), now)
        self._flush()

    def restore(self) -> list[ContainerRef]:
        """Drop the unsent commands and give every container this driver throttled its full share
        back (on shutdown); returns those still throttled (their agents did not answer)."""
        with self._io:
            with self.lock:
                self.outbox.clear()
            return self.preemptor.restore_all()

    def post(self, work: Callable[[], None]) -> None:
        """Queue an event (e.g. ``partial(self.task_started, ...)``) for the driver's thread, so the
        caller, an offer round with a deadline, never waits for an agent's round trip."""
        self.inbox.put(work)

    def drain(self) -> None:
        """Apply every queued event now, then fire due timers (tests step with this; shutdown)."""
        while True:
            try:
                work = self.inbox.get_nowait()
            except queue.Empty:
                break
            work()
        self.tick()

    def run(self, stop: threading.Event, period_s: float = 0.1) -> None:
        """The driver's thread: apply queued events as they come, fire timers at least every
        ``period_s``, until ``stop`` is set (post a no-op to wake it)."""
        while not stop.is_set():
            try:
                work = self.inbox.get(timeout=period_s)
            except queue.Empty:
                work = None
            try:
                if work is not None:
                    work()
                self.tick()
            except Exception:  # noqa: BLE001 - a dead driver thread would freeze every quantum
                log.exception("live node driver: event or timer failed")

    # -- decisions out ------------------------------------------------------------------------
    def _now(self) -> float:
        self.table.clock = self.clock()
        return self.table.clock

    def _deliver(self, hook: str, ev: object, now: float) -> None:
        method = getattr(self.policy, hook, None)
        if method is not None:
            self._apply(method(ev, self.table), now)

    def _apply(self, decisions: Sequence[Decision], now: float) -> None:
        for d in decisions:
            if isinstance(d, Run):
                self._run(d, now)
            elif isinstance(d, Suspend):
                self._suspend(d, now)
            elif isinstance(d, Resume):
                self._resume(d, now)
            elif isinstance(d, SetTimer):
                heapq.heappush(self.timers, (d.at, next(self._seq), d.node, d.key))
            elif isinstance(d, SendHeartbeat):
                self._deliver("on_heartbeat", Heartbeat(now, d.node, d.payload), now)
            else:
                raise DecisionError(Status(Code.ERROR, "not a node-side decision the live driver applies",
                                           "live-node-driver"), d)

    def _run(self, d: Run, now: float) -> None:
        live = self.table.waiting(d.node, (d.probe.job_id, int(d.probe.task)))
        if live is None:  # it finished while queued: hand the slot straight back to the policy
            self._deliver("on_slot_freed", SlotFreed(now, d.node, d.slot), now)
            return
        self._take_slot(live, d.node, d.slot, now)

    def _resume(self, d: Resume, now: float) -> None:
        live = self.table.waiting(d.node, (d.job_id, d.task))
        if live is None or live.slot >= 0:
            raise DecisionError(Status(Code.ERROR, "no such suspended task on that node", "live-node-driver"), d)
        self._take_slot(live, d.node, d.slot, now)

    def _take_slot(self, live: LiveTask, node: int, slot: int, now: float) -> None:
        if self.table.on_slot(node, slot) is not None:
            raise DecisionError(Status(Code.ERROR, f"slot {slot} of node {node} is busy", "live-node-driver"))
        self.table.place(live, slot, now)
        if live.throttled:
            self._unthrottle(live)

    def _suspend(self, d: Suspend, now: float) -> None:
        live = self.table.on_slot(d.node, d.slot)
        if live is None:
            raise DecisionError(Status(Code.ERROR, "suspend of an empty slot", "live-node-driver"), d)
        self.table.suspend(live, now)
        self._throttle(live)

    def _throttle(self, live: LiveTask) -> None:
        live.throttled = True
        self.outbox[live.ref] = ("suspend", 0.0, 0.0)  # replaces an unsent wish for the same container

    def _unthrottle(self, live: LiveTask) -> None:
        live.throttled = False
        self.outbox[live.ref] = ("resume", 0.0, 0.0)

    # -- commands out, never under the lock -------------------------------------------------------
    def _flush(self) -> None:
        """Send every due command; call without holding ``lock``."""
        with self._io:
            for ref, action, delay in self._take_due():
                if action == "suspend":
                    self.preemptor.suspend(ref)  # a failed suspend leaves the task at full share
                elif self.preemptor.resume(ref).code is Code.ERROR:
                    delay = min(max(2 * delay, self.retry_s), MAX_RETRY_S)
                    with self.lock:  # unless a newer command for it came in meanwhile
                        self.outbox.setdefault(ref, ("resume", self.clock() + delay, delay))

    def _take_due(self) -> list[tuple[ContainerRef, str, float]]:
        with self.lock:
            now = self.clock()
            due = [(ref, action, delay) for ref, (action, at, delay) in self.outbox.items() if at <= now]
            for ref, _, _ in due:
                del self.outbox[ref]
            return due
