"""The live driver's data flows one way: planner -> ledger -> cluster state -> runner.

* A runner (``SparkSlots``, ``NodeContainers``) imports no planner module, and of
  ``bridge/cluster`` only what a runner is handed: the events it schedules, the running task's
  record and its own interface (never the state, its tables, the measurement, the off-slot work,
  the view or the kernel).
* A runner never calls the state or the planner: it calls none of the state's methods and takes
  neither a state nor a callback; when Spark reports a task's end, the planner updates the ledger
  and calls the state.
* The world's ledger (``bridge/drivers/ledger.py``) is the one per-task record outside the state:
  the collections a runner or planner keeps are about nodes, executors and containers, each named
  here with why; a new one is a second record of tasks unless it is added here for a reason.
* A planner (``EnginePlanner``, ``NodePlanner``) uses a runner only through the ``SparkRunner``
  interface: it reads none of a runner's records.
* No runner or planner reads another object's private attributes; the node planner wraps the engine
  planner instead of inheriting it (its ``_worlds`` were read from outside).
"""
from __future__ import annotations

import ast
from pathlib import Path

from bridge.cluster.state import ClusterState
from bridge.drivers.node_engine import NodePlanner
from bridge.drivers.spark.engine import EnginePlanner

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = ROOT / "bridge" / "drivers"
RUNNERS = (DRIVERS / "spark" / "slots.py", DRIVERS / "node_containers.py")
PLANNERS = (DRIVERS / "spark" / "engine.py", DRIVERS / "node_engine.py")
PLANNER_MODULES = ("bridge.drivers.spark.engine", "bridge.drivers.node_engine", "bridge.drivers.planners",
                   "bridge.drivers.topology")
RUNNER_SEES = ("bridge.cluster.events", "bridge.cluster.slots", "bridge.cluster.runner")
STATE_METHODS = frozenset(n for n in dir(ClusterState) if not n.startswith("_"))
KEPT_COLLECTIONS = {  # module -> the collections its objects keep, none of them a record of tasks
    "slots.py": {"node_of"},                                   # executor name -> node
    "node_containers.py": {"node_of", "names", "executors",    # NodeManager -> node; executors' containers
                           "shrunk"},                          # containers asked to shrink
    "engine.py": {"_worlds"},                                  # scope -> world (each with its ledger)
    "node_engine.py": {"names"},                               # the NodeManagers
}
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


def calls_back(tree: ast.AST) -> list[str]:
    """``line name`` of every call of one of the state's methods on another object, and of every
    parameter that hands a runner a state or a callback (how it would call the state or planner)."""
    calls = [f"{node.lineno} .{node.func.attr}" for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in STATE_METHODS
             and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "self")]
    params = [f"{node.lineno} {node.arg}" for node in ast.walk(tree)
              if isinstance(node, ast.arg) and arg_hands_back(node)]
    return calls + params


def arg_hands_back(arg: ast.arg) -> bool:
    """A parameter named ``state``, or typed as the state or as a callable."""
    text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
    return arg.arg == "state" or "ClusterState" in text or "Callable" in text


def kept_collections(tree: ast.AST) -> set[str]:
    """The attributes a module's objects set to a dict, set, list or counter (``self.x = {}``,
    ``self.x: dict[...] = ...``, ``self.a, self.b = list(...), ...``)."""
    def is_collection(value: ast.expr | None, annotation: ast.expr | None = None) -> bool:
        if annotation is not None and ast.unparse(annotation).split("[")[0] in COLLECTIONS:
            return True
        if isinstance(value, (ast.Dict, ast.Set, ast.List, ast.DictComp, ast.SetComp, ast.ListComp)):
            return True
        return isinstance(value, ast.Call) and ast.unparse(value.func) in COLLECTIONS

    found: set[str] = set()
    for node in ast.walk(tree):
        pairs: list[tuple[ast.expr, ast.expr | None, ast.expr | None]] = []
        if isinstance(node, ast.AnnAssign):
            pairs = [(node.target, node.value, node.annotation)]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs += [(t, v, None) for t, v in zip(target.elts, node.value.elts)]
                else:
                    pairs.append((target, node.value, None))
        found |= {t.attr for t, v, a in pairs if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                  and t.value.id == "self" and is_collection(v, a)}
    return found


COLLECTIONS = ("dict", "set", "list", "Counter", "defaultdict", "deque", "OrderedDict")


def parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), str(path))


def test_a_runner_imports_neither_a_planner_nor_the_states_internals() -> None:
    assert {p.name: wrong_way_imports(parsed(p)) for p in RUNNERS} == {p.name: [] for p in RUNNERS}


def test_a_runner_calls_neither_the_state_nor_the_planner() -> None:
    assert {p.name: calls_back(parsed(p)) for p in RUNNERS} == {p.name: [] for p in RUNNERS}


def test_the_ledger_is_the_one_record_of_tasks_outside_the_state() -> None:
    found = {p.name: kept_collections(parsed(p)) for p in RUNNERS + PLANNERS}
    assert found == KEPT_COLLECTIONS


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
    assert wrong_way_imports(tree) == ["bridge.drivers.spark.engine", "bridge.cluster.tables", "bridge.cluster.state"]
    assert foreign_privates(tree) == ["8 ._worlds"]
    assert runner_reads(tree) == ["6 .granted", "7 .bind"]
    assert {"bind", "grants", "run", "pause", "kind", "names"} <= interface_members()
    assert "granted" not in interface_members()
    runner = ast.parse("def end(self, spark_task, state: ClusterState, now):\n"
                       "    return [SegmentEnd(now, 0, 0, state.token(0, 0))]\n"
                       "def grants(self, rnd, key_of: Callable[[int], str]):\n"
                       "    self.ledger.grant((0, 0), 0, 0)\n"
                       "    self.granted: dict[int, int] = {}\n"
                       "    self.bound, self.kind = {}, 'executors'\n"
                       "    return self.finish(0)\n")
    assert calls_back(runner) == ["2 .token", "1 state", "3 key_of"]
    assert kept_collections(runner) == {"granted", "bound"}
