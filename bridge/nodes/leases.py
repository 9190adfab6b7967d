"""The controller's half of the agents' leases: renew, while it lives, every suspend it holds.

Each suspend holds at its agent for the preemptor's ``lease_s`` (``bridge.agent.leases``). A thread
renews every container the preemptor holds throttled every lease/3, one batch call per node
(``POST /v1/leases/renew``), the nodes in parallel so that a hung agent delays only its own. When
the controller dies, renewals stop, and within the lease every agent lifts the throttles by itself.
A lease that lapsed anyway (the agent was unreachable for a whole lease) means the container runs
at full share: the preemptor forgets it, and the run goes on with it unthrottled.
"""
from __future__ import annotations

import logging
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from bridge.agent.errors import AgentError
from bridge.nodes.preemption import ContainerPreemptor, ContainerRef

log = logging.getLogger(__name__)
MAX_PARALLEL = 32


class LeaseRenewal:
    """Context manager: a daemon thread renews ``preemptor``'s leases every ``lease_s / 3``."""

    def __init__(self, preemptor: ContainerPreemptor) -> None:
        self.preemptor = preemptor
        self.period_s = preemptor.lease_s / 3
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-renewal", daemon=True)
        self._pool = ThreadPoolExecutor(MAX_PARALLEL, thread_name_prefix="lease-renew")

    def __enter__(self) -> LeaseRenewal:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=self.period_s + 1)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self.renew_once()
            except Exception:  # a dead renewal thread would let every lease lapse
                log.exception("lease renewal failed")

    def renew_once(self) -> None:
        """One round: every node's held containers in one call, the nodes in parallel."""
        by_node: dict[str, dict[str, tuple[ContainerRef, int]]] = defaultdict(dict)
        for ref, since in self.preemptor.held().items():
            by_node[ref.node][ref.container] = (ref, since)
        for future in [self._pool.submit(self._renew_node, node, held) for node, held in sorted(by_node.items())]:
            future.result()

    def _renew_node(self, node: str, held: dict[str, tuple[ContainerRef, int]]) -> None:
        agent = self.preemptor.agents.get(node)
        if agent is None:
            return
        try:
            reply = agent.renew(sorted(held), lease_s=self.preemptor.lease_s, timeout_s=self.period_s)
        except AgentError as exc:
            log.warning("renewing %d lease(s) on %s: %s", len(held), node, exc)
            return
        for container in reply.get("not_held", []):
            if container in held:
                log.warning("%s's agent holds no lease on %s any more (it lapsed, or the container finished): "
                            "it runs at full share", node, container)
                self.preemptor.lapsed(*held[container])
