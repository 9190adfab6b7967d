"""The contract's value types (policies/framework/messages.py, bridge/cluster/events.py): written
``__init__``s that match their fields, value semantics, and the tiers that order an instant.

Runs on the compiled core and again as pure Python (the Makefile's PURE_TESTS)."""
from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path

import pytest

from bridge.cluster.events import Deliver, FreeSlot, SegmentEnd
from policies.framework.api import (
    OK, Code, Heartbeat, JobArrival, Launch, ProbeArrival, ProbeInfo, ProbeRejected, Reject, Run, SlotFreed,
    Status, StealAttempt, TaskFinished, TaskRequest, TaskStarted, Timer,
)
from policies.framework.compiled import CORE
from workloads.model import Job

ROOT = Path(__file__).resolve().parents[2]
VALUE_MODULES = (ROOT / "policies" / "framework" / "messages.py", ROOT / "bridge" / "cluster" / "events.py")


def _value_classes(path: Path) -> list[ast.ClassDef]:
    tree = ast.parse(path.read_text(), str(path))
    return [c for c in tree.body if isinstance(c, ast.ClassDef)
            and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "dataclass" for d in c.decorator_list)]


@pytest.mark.parametrize("path", VALUE_MODULES, ids=lambda p: p.name)
def test_each_written_init_takes_and_stores_its_fields_in_order(path):
    classes = _value_classes(path)
    assert len(classes) >= 4
    for cls in classes:
        fields = [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        init = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
        params = [a.arg for a in init.args.args[1:]]
        stores = [(s.targets[0].attr, s.value.id) for s in init.body
                  if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Attribute)
                  and isinstance(s.value, ast.Name)]
        assert params == fields, f"{path.name}:{cls.lineno} {cls.name}: __init__ takes {params}, fields {fields}"
        assert stores == [(f, f) for f in fields], f"{path.name}:{cls.lineno} {cls.name}: __init__ stores {stores}"
        assert len(init.body) == len(fields), f"{path.name}:{cls.lineno} {cls.name}: __init__ does more than store"


def test_values_compare_hash_print_and_pickle_by_their_fields():
    p = ProbeInfo(7, None, 2.5, True, pid=3, info=("x", 1), notify=False)
    same = ProbeInfo(7, None, 2.5, True, 3, 0, ("x", 1), False)
    assert p == same and hash(p) == hash(same) and p is not same
    assert p != p.bind(4) and p.bind(4).task == 4 and p.bind(4).pid == 3 and not p.bind(4).notify
    names = ["job_id", "task", "est", "long", "pid", "round", "info", "notify"]
    assert [f.name for f in dataclasses.fields(p)] == names
    assert repr(Launch(1, 0, 7, 3)) == "Launch(node=1, slot=0, job_id=7, task=3)"
    job = Job(7, 0.0, (1.0, 2.0))
    values = (p, Run(1, 0, p, keep=True), Reject(Status(Code.UNSCHEDULABLE, "busy", "eagle"), node=2, probe=p),
              ProbeRejected(1.5, 2, p, OK, payload=(1, 2)), JobArrival(0.0, job), Timer(3.0, None, ("q", 1)),
              SegmentEnd(4.0, 1, 0, 9), Deliver(1.0, (1, 2, 2), p), StealAttempt(2.0, 3, (1, 4)))
    for v in values:
        back = pickle.loads(pickle.dumps(v))
        assert back == v and type(back) is type(v) and back is not v
    assert {Launch(1, 0, 7, 3), Launch(1, 0, 7, 3), Launch(1, 0, 7, 4)} == {Launch(1, 0, 7, 3), Launch(1, 0, 7, 4)}
    assert Status().ok and not Status(Code.ERROR).ok


def test_tiers_order_an_instant_as_the_contract_says():
    p = ProbeInfo(1)
    events = [SegmentEnd(0.0, 0, 0, 0), TaskFinished(0.0, 0, 0, 1, 0, 0.0), SlotFreed(0.0, 0, 0), FreeSlot(0.0, 0, 0),
              TaskRequest(0.0, 0, 0, p), TaskStarted(0.0, 0, 0, 1, 0),
              StealAttempt(0.0, 0, ()), ProbeArrival(0.0, 0, p), Deliver(0.0, (0,), p), Heartbeat(0.0, 0, None),
              ProbeRejected(0.0, 0, p, OK), JobArrival(0.0, Job(1, 0.0, (1.0,))), Timer(0.0, 0, "k")]
    assert [e.tier for e in events] == [0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6]


def test_a_wrongly_typed_field_is_refused_at_construction_only_when_compiled():
    if CORE.compiled:
        with pytest.raises(TypeError, match="ProbeInfo"):
            Run(0, 0, None)  # type: ignore[arg-type]
    else:
        assert Run(0, 0, None).probe is None  # type: ignore[arg-type]  # the cluster state refuses it
