"""The cluster state's tables are private to ``bridge/cluster``: drivers use its methods.

Drivers that popped and scanned ``ClusterState``'s tables broke whenever the state changed how it
keeps them; this pins the narrow API down (no public table, no access to the private ones from
outside ``bridge/cluster``) and checks what the methods the drivers use return.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bridge.sim.engine import Simulation
from policies.framework.api import ClusterSpec, JobArrival, PolicyEnv
from policies.framework.registry import default_registry
from workloads.model import Job

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("bridge", "workloads", "sparkplugin")
OWNER = ROOT / "bridge" / "cluster"
PRIVATE = ("_slots", "_jobs_by_id", "_runs", "_suspended", "_queues", "_nfree", "_qlen",
           "_capacity_used", "_blocked", "_long_at", "_offslot_work",
           "_counters", "_hooks")


def private_accesses(source: str, filename: str = "<string>") -> list[str]:
    """``file:line .name`` of every attribute access to one of the state's private tables."""
    return [f"{filename}:{node.lineno} .{node.attr}" for node in ast.walk(ast.parse(source, filename))
            if isinstance(node, ast.Attribute) and node.attr in PRIVATE]


def simulation(jobs: list[Job]) -> Simulation:
    spec = ClusterSpec(2, slots_per_node=2)
    return Simulation(jobs, default_registry().create("sparrow", PolicyEnv(spec, 0)), spec)


def test_the_scanner_finds_access_to_a_private_table_and_nothing_else() -> None:
    code = "n = state._slots[0]\nstate._runs.pop(1)\nself._jobs = {}\nstate.slots\nstate.token(0, 1)\n"
    assert private_accesses(code) == ["<string>:1 ._slots", "<string>:2 ._runs"]


def test_every_private_name_scanned_is_a_table_of_the_state() -> None:
    state = simulation([]).state
    assert [name for name in PRIVATE if not hasattr(state, name)] == []


@pytest.mark.parametrize("name", ["slots", "job_by_id", "remaining", "susp", "queue", "launched"])
def test_the_state_has_no_public_table(name: str) -> None:
    assert not hasattr(simulation([]).state, name)


def test_nothing_outside_bridge_cluster_touches_the_states_tables() -> None:
    found = [hit for top in SCANNED for path in sorted((ROOT / top).rglob("*.py"))
             if OWNER not in path.parents
             for hit in private_accesses(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []


def test_a_finished_job_is_known_until_forgotten() -> None:
    jobs = [Job(0, 0.0, (1.0, 2.0), 1.5), Job(1, 0.5, (1.0,), 1.0)]
    sim = simulation(jobs)
    sim.run()
    state = sim.state
    assert sorted(state.known_jobs()) == [0, 1]
    with pytest.raises(TypeError):
        state.known_jobs()[2] = jobs[0]  # read-only: drivers forget jobs through the state
    assert [state.free_or_reserved(node) for node in range(2)] == [2, 2]
    assert state.forget_finished([0, 1]) == [0, 1]
    assert dict(state.known_jobs()) == {} and state.log.job_finish == {}


def test_a_running_tasks_token_names_its_segment() -> None:
    job = Job(0, 0.0, (5.0,), 5.0)
    sim = simulation([job])
    sim.kernel.schedule_all(sim.state.job_arrived(JobArrival(0.0, job), []))
    sim.kernel.run(until=1.0)
    node, slot = next((n, t.slot) for n in range(2) for t in sim.state.view.running(n))
    assert sim.state.token(node, slot) == 1
    assert sim.state.free_or_reserved(node) == 1
    assert sim.state.forget_finished([0]) == []  # still running: not forgotten
    with pytest.raises(ValueError, match="runs no task"):
        sim.state.token(node, 1 - slot)


def test_a_foreign_demand_is_held_within_the_resources_and_on_its_own_node() -> None:
    """Capacity in use is kept flat, node after node: an entry beyond the cluster's resources is
    ignored (as it always was), never added to the next node's."""
    spec = ClusterSpec(2, slots_per_node=2, resources=("cpu", "mem"), capacity=(2.0, 8.0))
    state = Simulation([], default_registry().create("sparrow", PolicyEnv(spec, 0)), spec).state
    assert state.occupy(0, "foreign", (1.0, 3.0, 5.0)) == 0
    assert (state.view.free_capacity(0), state.view.free_capacity(1)) == ((1.0, 5.0), (2.0, 8.0))
    state.vacate(0, 0)
    assert (state.view.free_capacity(0), state.view.free_capacity(1)) == ((2.0, 8.0), (2.0, 8.0))
