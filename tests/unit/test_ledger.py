"""A world's ledger: one record per policy task Spark runs or will run, and per policy job."""
from __future__ import annotations

from bridge.drivers.ledger import Ledger


def ledger_with_job(n: int = 3) -> Ledger:
    ledger = Ledger()
    ledger.add_job(7, ("app", 3, 0), n)
    return ledger


def test_a_grant_is_bound_by_its_launch_drains_off_its_slot_and_ends() -> None:
    ledger = ledger_with_job()
    ledger.grant((7, 1), 2, 1)
    ledger.grant((7, 0), 2, 0)
    assert ledger.waiting_at(2, [7]) == [(7, 0), (7, 1)]   # lowest slot first, whatever the order granted
    assert ledger.waiting_at(2, [8]) == [] and ledger.waiting_at(1, [7]) == []
    ledger.bind((7, 0), 41)
    assert ledger.knows(41) and ledger.job(7).started == 1 and ledger.job(7).owed == 2
    assert [k for k, _ in ledger.waiting()] == [(7, 1)]
    ledger.unplace((7, 0), 2)                                # suspended: it drains
    assert [(k, e.at, e.spark) for k, e in ledger.bound()] == [((7, 0), None, 41)]
    ledger.place((7, 0), 3, 0)                               # resumed elsewhere, same Spark task
    found = ledger.end(41)
    assert found is not None and found[0] == (7, 0) and found[1].at == (3, 0)
    assert not ledger.knows(41) and ledger.entry((7, 0)) is None and ledger.end(41) is None


def test_a_killed_task_is_listed_once_and_forgotten() -> None:
    ledger = ledger_with_job()
    ledger.grant((7, 0), 0, 0)
    ledger.bind((7, 0), 5)
    ledger.kill((7, 0))
    assert ledger.take_kills() == (5,) and ledger.take_kills() == ()
    assert not ledger.knows(5) and ledger.entry((7, 0)) is None


def test_queued_tasks_wait_in_arrival_order_and_a_retired_one_ends_later() -> None:
    ledger = ledger_with_job()
    for task in (2, 0, 1):
        ledger.queue((7, task), 1)
    assert ledger.waiting_at(1, [7]) == [(7, 2), (7, 0), (7, 1)]
    entry = ledger.retire((7, 0))
    ledger.end_later((7, 0), entry.node)
    assert ledger.job(7).retired == 1 and ledger.waiting_at(1, [7]) == [(7, 2), (7, 1)]
    again = ledger.place((7, 0), 1, 0)
    assert again.ended and again.at == (1, 0)


def test_a_job_is_forgotten_with_its_stage_once_its_last_job_goes() -> None:
    ledger = ledger_with_job()
    ledger.add_job(8, ("app", 3, 0), 1)
    assert ledger.jobs_of(("app", 3, 0)) == [7, 8] and ledger.job_ids() == [7, 8]
    ledger.forget_job(7)
    assert ledger.has_stage(("app", 3, 0)) and ledger.jobs_of(("app", 3, 0)) == [8]
    ledger.forget_job(8)
    assert not ledger.has_stage(("app", 3, 0)) and ledger.stages() == []


def test_spark_placed_tasks_hold_their_slots_until_they_end() -> None:
    ledger = Ledger()
    ledger.hold_foreign(9, (0, 2))
    assert ledger.is_foreign(9) and not ledger.knows(9)
    assert ledger.end_foreign(9) == (0, 2) and ledger.end_foreign(9) is None
