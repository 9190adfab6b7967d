"""The container commands a live node driver wants, sent to the node agents off the decision path.

Decisions only record which command each container needs (the latest wish replaces an unsent
one); :meth:`ContainerCommands.flush` sends the due ones through a
:class:`~bridge.nodes.preemption.ContainerPreemptor`, never while the caller's lock is held, so a
hung agent delays no offer round. A resume that failed (agent unreachable) is retried after
``retry_s``, then at doubling intervals up to a minute: a container left shrunk would starve its
task. A command for a node whose agent is not open yet (a replay opens them once its application
exists, while executors already register) waits in the outbox until it is.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping

from bridge.nodes.preemption import ContainerPreemptor, ContainerRef
from policies.framework.api import Code

MAX_RETRY_S = 60.0
SENT_KEPT = 10_000  # commands sent and not yet taken by their application's next reply
Sent = tuple[ContainerRef, str, bool]  # container, action, applied by its agent


class ContainerCommands:
    """An outbox of suspend/resume wishes per container, flushed by whoever holds no lock."""

    def __init__(self, preemptor: ContainerPreemptor, clock: Callable[[], float], lock: threading.RLock,
                 retry_s: float = 1.0) -> None:
        self.preemptor, self.clock, self.lock, self.retry_s = preemptor, clock, lock, retry_s
        self._io = threading.Lock()    # one sender at a time: the preemptor is not thread-safe
        self.outbox: dict[ContainerRef, tuple[str, float, float]] = {}  # container -> (action, not before, delay)
        self.sent: deque[Sent] = deque(maxlen=SENT_KEPT)  # oldest dropped: its application stopped asking

    def want(self, ref: ContainerRef, action: str) -> None:
        """Record that ``ref`` should be suspended or resumed (call under ``lock``). A resume that
        undoes an unsent suspend of a container at full share cancels it: nothing is sent."""
        unsent = self.outbox.get(ref)
        if action == "resume" and unsent is not None and unsent[0] == "suspend" \
                and ref not in self.preemptor.throttled:
            del self.outbox[ref]
            return
        self.outbox[ref] = (action, 0.0, 0.0)

    def flush(self) -> None:
        """Send every due command; call without holding ``lock``."""
        with self._io:
            for ref, action, delay in self._take_due():
                if action == "suspend":
                    ok = self.preemptor.suspend(ref).ok  # a failed suspend leaves the task at full share
                else:
                    ok = self.preemptor.resume(ref).code is not Code.ERROR
                with self.lock:
                    self.sent.append((ref, action, ok))
                    if not ok and action == "resume":  # retried, unless a newer command for it came in meanwhile
                        delay = min(max(2 * delay, self.retry_s), MAX_RETRY_S)
                        self.outbox.setdefault(ref, ("resume", self.clock() + delay, delay))

    def take_sent(self, executors: Mapping[ContainerRef, str]) -> list[tuple[str, ContainerRef, str, bool]]:
        """The commands sent for the containers of ``executors`` (container -> executor id) since the
        last call, in order, as (executor, container, action, applied); call under ``lock``."""
        mine = [(executors[ref], ref, action, ok) for ref, action, ok in self.sent if ref in executors]
        if mine:
            self.sent = deque((s for s in self.sent if s[0] not in executors), maxlen=SENT_KEPT)
        return mine

    def restore(self) -> list[ContainerRef]:
        """Drop the unsent commands and give every throttled container its full share back (on
        shutdown); returns those still throttled (their agents did not answer)."""
        with self._io:
            with self.lock:
                self.outbox.clear()
            return self.preemptor.restore_all()

    def _take_due(self) -> list[tuple[ContainerRef, str, float]]:
        with self.lock:
            now = self.clock()
            due = [(ref, action, delay) for ref, (action, at, delay) in self.outbox.items()
                   if at <= now and self.preemptor.ready_for(ref.node)]
            for ref, _, _ in due:
                del self.outbox[ref]
            return due
