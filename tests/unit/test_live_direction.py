"""The live driver's data flows one way: planner -> cluster state -> runner.

* A runner (``SparkSlots``, ``NodeContainers``) imports no planner module, and of
  ``bridge/cluster`` only what a runner is handed or calls: the events it schedules, the running
  task's record, its own interface and the state's methods (never the tables, the measurement, the
  off-slot work, the view or the kernel).
* A planner (``EnginePlanner``, ``NodePlanner``) uses a runner only through the ``SparkRunner``
  interface: it reads none of a runner's records.
* No runner or planner reads another object's private attributes; the node planner wraps the engine
  planner instead of inheriting it (its ``_worlds`` were read from outside).
"""
from __future__ import annotations

import ast
from pathlib import Path

from bridge.drivers.node_engine import NodePlanner
from bridge.drivers.spark.engine import EnginePlanner

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = ROOT / "bridge" / "drivers"
RUNNERS = (DRIVERS / "spark" / "slots.py", DRIVERS / "node_containers.py")
PLANNERS = (DRIVERS / "spark" / "engine.py", DRIVERS / "node_engine.py")
PLANNER_MODULES = ("bridge.drivers.spark.engine", "bridge.drivers.node_engine", "bridge.drivers.planners",
                   "bridge.drivers.topology")
RUNNER_SEES = ("bridge.cluster.events", "bridge.cluster.slots", "bridge.cluster.runner", "bridge.cluster.state")
INTERFACES = ((ROOT / "bridge" / "cluster" / "runner.py", "TaskRunner"),
              (DRIVERS / "spark" / "slots.py", "SparkRunner"))


def bridge_imports(tree: ast.AST) -> list[str]:
    """The ``bridge`` modules a module's import statements name, anywhere in it."""
    names = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    names += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    return [n for n in names if n.split(".")[0] == "bridge"]


def wrong_way_imports(tree: ast.AST) -> list[str]:
    """The imports a runner must not have: a planner, or the cluster state's internals."""
    return [m for m in bridge_imports(tree)
            if m in PLANNER_MODULES or (m.startswith("bridge.cluster.") and m not in RUNNER_SEES)]


def foreign_privates(tree: ast.AST) -> list[str]:
    """``line .name`` of every read or write of another object's private attribute (``x._y``
    where ``x`` is not ``self``)."""
    return [f"{node.lineno} .{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def interface_members() -> set[str]:
    """What the ``SparkRunner`` protocol (with the ``TaskRunner`` it extends) declares."""
    members: set[str] = set()
    for path, name in INTERFACES:
        [cls] = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef) and n.name == name]
        members |= {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
        members |= {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    return members


def runner_reads(tree: ast.AST) -> list[str]:
    """``line .name`` of every attribute read off a runner (``runner.x``, ``world.runner.x``)."""
    def is_runner(v: ast.expr) -> bool:
        return (isinstance(v, ast.Name) and v.id == "runner") or (isinstance(v, ast.Attribute) and v.attr == "runner")
    return [f"{node.lineno} .{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and is_runner(node.value)]


def parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), str(path))


def test_a_runner_imports_neither_a_planner_nor_the_states_internals() -> None:
    assert {p.name: wrong_way_imports(parsed(p)) for p in RUNNERS} == {p.name: [] for p in RUNNERS}


def test_a_planner_reads_a_runner_only_through_its_interface() -> None:
    allowed = interface_members()
    found = {p.name: [r for r in runner_reads(parsed(p)) if r.split(".")[-1] not in allowed] for p in PLANNERS}
    assert found == {p.name: [] for p in PLANNERS}


def test_no_runner_or_planner_reads_another_objects_private_attributes() -> None:
    found = {p.name: foreign_privates(parsed(p)) for p in RUNNERS + PLANNERS}
    assert found == {p.name: [] for p in RUNNERS + PLANNERS}


def test_the_node_planner_wraps_the_engine_planner() -> None:
    assert not issubclass(NodePlanner, EnginePlanner)


def test_the_checks_catch_each_wrong_way() -> None:
    tree = ast.parse("from bridge.drivers.spark.engine import EnginePlanner\n"
                     "from bridge.cluster.tables import ClusterTables\n"
                     "from bridge.cluster.state import ClusterState\n"
                     "from bridge.protocol.messages import Grant\n"
                     "def f(self, world, engine):\n"
                     "    self._ok = world.runner.granted\n"
                     "    world.runner.bind(0, [], 1, 'a', 'e')\n"
                     "    return engine._worlds\n")
    assert wrong_way_imports(tree) == ["bridge.drivers.spark.engine", "bridge.cluster.tables"]
    assert foreign_privates(tree) == ["8 ._worlds"]
    assert runner_reads(tree) == ["6 .granted", "7 .bind"]
    assert {"bind", "grants", "run", "pause", "kind", "names"} <= interface_members()
    assert "granted" not in interface_members()
