"""The controller's lease renewal: one batch call per node for the containers it holds throttled, and
a lapsed lease forgotten unless the container was suspended again meanwhile."""
from __future__ import annotations

import time

from bridge.nodes.leases import LeaseRenewal
from bridge.nodes.preemption import ContainerPreemptor, ContainerRef
from tests.unit.live_fakes import FakeAgent

A, B = "nm1:8042", "nm2:8042"


def test_suspends_carry_the_preemptors_lease_and_one_call_per_node_renews_them() -> None:
    a, b = FakeAgent(), FakeAgent()
    preemptor = ContainerPreemptor({A: a, B: b}, lease_s=6)
    for ref in (ContainerRef(A, "c1"), ContainerRef(A, "c2"), ContainerRef(B, "c3"), ContainerRef(B, "c4")):
        assert preemptor.suspend(ref).ok
    preemptor.resume(ContainerRef(B, "c4"))
    assert a.leases == {"c1": 6, "c2": 6}
    LeaseRenewal(preemptor).renew_once()
    assert [c for c in a.calls if c[0] == "renew"] == [("renew", "c1,c2")]
    assert [c for c in b.calls if c[0] == "renew"] == [("renew", "c3")]


def test_a_lapsed_lease_is_forgotten_but_not_a_newer_suspend() -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({A: agent})
    old, new = ContainerRef(A, "old"), ContainerRef(A, "new")
    preemptor.suspend(old)
    preemptor.suspend(new)
    since = preemptor.held()[new]
    agent.leases.clear()  # the agent let both lapse
    preemptor.suspend(new)  # ... and the driver suspended one again before the reply was read
    preemptor.lapsed(new, since)
    LeaseRenewal(preemptor).renew_once()  # lapses "old" (and "new", renewed now that it is held again)
    assert preemptor.throttled == {new}


def test_an_unreachable_agent_costs_only_its_own_renewal() -> None:
    down, up = FakeAgent(), FakeAgent()
    preemptor = ContainerPreemptor({A: down, B: up}, lease_s=3)
    preemptor.suspend(ContainerRef(A, "c1"))
    preemptor.suspend(ContainerRef(B, "c2"))
    down.down = True
    LeaseRenewal(preemptor).renew_once()
    assert ("renew", "c2") in up.calls
    assert preemptor.throttled == {ContainerRef(A, "c1"), ContainerRef(B, "c2")}  # kept: maybe still held


def test_the_thread_renews_every_third_of_the_lease_until_closed() -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({A: agent}, lease_s=0.3)
    preemptor.suspend(ContainerRef(A, "c1"))
    with LeaseRenewal(preemptor):
        time.sleep(0.55)
    renewals = len([c for c in agent.calls if c[0] == "renew"])
    time.sleep(0.25)
    assert 3 <= renewals <= 6 and len([c for c in agent.calls if c[0] == "renew"]) == renewals
