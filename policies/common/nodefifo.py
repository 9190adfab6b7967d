"""Node-side FIFO behaviour shared by probing policies: queue entries, run the head on a free slot."""
from __future__ import annotations

from collections import deque

from mypy_extensions import mypyc_attr

from policies.framework.api import ClusterView, Decisions, ProbeArrival, ProbeInfo, Run, SlotFreed


@mypyc_attr(allow_interpreted_subclasses=True)  # policies.eagle.lwl.CentralLwl and others' policies extend it
class FifoNodes:
    """Mixin: ``on_probe_arrival`` runs the entry if a slot is free and nothing waits, else queues
    it; ``on_slot_freed`` runs the head. ``after_idle(node, slot, view)`` is called when a slot
    frees and the queue is empty (Hawk steals there); it returns decisions."""

    # a NodeQueues (policies.common.queues); typed as the list it is, so that compiled,
    # ``queues[node]`` is a list read (as a NodeQueues it was a generic one, boxing the index)
    queues: list[deque[ProbeInfo]]

    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> tuple[Run, ...]:
        q = self.queues[ev.node]
        if not q:
            slot = view.free_slot(ev.node)
            if slot >= 0:
                return (Run(ev.node, slot, ev.probe),)
        q.append(ev.probe)
        return ()

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        q = self.queues[ev.node]
        if q:
            return (Run(ev.node, ev.slot, q.popleft()),)
        return self.after_idle(ev.node, ev.slot, view)

    def after_idle(self, node: int, slot: int, view: ClusterView) -> Decisions:
        return ()
