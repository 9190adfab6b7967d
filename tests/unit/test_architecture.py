"""The layout docs/architecture.md describes is the layout of the code.

* Every package of ``bridge/`` imports exactly the packages its line in the "Packages and
  layers" block names (lazy and type-only imports count: they are dependencies too), and that
  block has no cycle, so no two packages import each other, however indirectly.
* Outside ``bridge``, only ``workloads`` imports ``bridge`` and only its ``common`` utilities.
* No package holds more than 15 modules of its own; ``bridge/`` itself at most 10.
* The packages that run against any cluster never import the local testbed, however indirectly:
  the testbed is one cluster among others, registered as the default by the command line.
* One module reads Spark's history: only ``bridge/history/events.py`` names Spark's listener events
  (and the plugin's own) or their fields; every other reader takes its typed events.
* No module of ``bridge/``, ``policies/``, ``workloads/`` or ``yarnclient/`` is over 600 lines:
  a longer one holds several concerns.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = ROOT / "bridge"
DOC = ROOT / "docs" / "architecture.md"
TOP = "(root)"  # bridge/'s own modules (cli.py)
MAX_MODULES, MAX_TOP_MODULES = 15, 10
MAX_LINES = 600
LINE_CAPPED = ("bridge", "policies", "workloads", "yarnclient")
OTHER_PACKAGES = ("policies", "workloads", "yarnclient", "sparkplugin")
ANY_CLUSTER = ("plugin", "launch", "replay", "nodes", "drivers", "agent", "cluster", "sim")
"""The packages that work on whichever cluster a command talks to: none of them reaches ``testbed``."""
HISTORY_EVENTS = BRIDGE / "history" / "events.py"
# a listener event's name, the plugin's placement event, or a field only Spark's events hold
SPARK_EVENT_WORDS = re.compile(r"SparkListener[A-Z]\w*|org\.schedbridge\.spark\.PlacementEvent"
                               r"|\"(?:Task Info|Stage Info|Executor Info|Task End Reason|Job Result|Stage Infos)\"")


def documented_layers(text: str) -> dict[str, set[str]]:
    """Package -> the packages it imports, from the first ``text`` block under "Packages and layers"."""
    section = text.split("## Packages and layers", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, f"{DOC}: no ```text block under 'Packages and layers'"
    layers = {}
    for line in block.group(1).splitlines():
        name, _, deps = line.partition(":")
        layers[name.strip()] = set(deps.split())
    return layers


def imported_modules(tree: ast.AST) -> Iterable[str]:
    """Every module an import statement anywhere in ``tree`` names (``from a import b`` gives
    ``a`` and ``a.b``: ``b`` may be a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def bridge_package(module: str) -> str | None:
    """The package of ``bridge/`` a dotted module name belongs to; None outside ``bridge``."""
    parts = module.split(".")
    if parts[0] != "bridge":
        return None
    if len(parts) > 1 and (BRIDGE / parts[1] / "__init__.py").is_file():
        return parts[1]
    # a module of bridge/ itself; a name no file has is another tree's (sidebyside_child's fallback)
    return TOP if len(parts) > 1 and (BRIDGE / f"{parts[1]}.py").is_file() else None


def package_of(path: Path) -> str:
    rel = path.relative_to(BRIDGE).parts
    return rel[0] if len(rel) > 1 else TOP


def actual_layers(root: Path = BRIDGE) -> dict[str, set[str]]:
    """Package -> the other packages of ``bridge/`` its modules import."""
    layers: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        own = package_of(path)
        deps = layers.setdefault(own, set())
        for module in imported_modules(ast.parse(path.read_text(), str(path))):
            other = bridge_package(module)
            if other is not None and other != own and module != "bridge":  # bridge/__init__: no layer
                deps.add(other)
    return layers


def cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a path of names, or None."""
    state: dict[str, int] = {}   # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_each_package_imports_what_the_architecture_doc_says() -> None:
    documented, actual = documented_layers(DOC.read_text()), actual_layers()
    assert set(documented) == set(actual), f"{DOC} lists {sorted(documented)}, bridge/ has {sorted(actual)}"
    differences = [f"{name}: the doc says {sorted(documented[name])}, the code imports {sorted(actual[name])}"
                   for name in sorted(actual) if documented[name] != actual[name]]
    assert not differences, "\n".join(differences)


def test_the_layers_have_no_cycle() -> None:
    found = cycle(documented_layers(DOC.read_text()))
    assert found is None, "packages import each other: " + " -> ".join(found or ())


def test_outside_bridge_only_workloads_imports_it_and_only_common() -> None:
    offenders = []
    for package in OTHER_PACKAGES:
        allowed = {"common"} if package == "workloads" else set()
        for path in sorted((ROOT / package).rglob("*.py")):
            for module in imported_modules(ast.parse(path.read_text(), str(path))):
                used = bridge_package(module)
                if used is not None and used not in allowed and module != "bridge":
                    offenders.append(f"{path.relative_to(ROOT)}: imports {module}")
    assert not offenders, "\n".join(offenders)


def reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    """Every package ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_only_the_commands_that_start_or_show_the_testbed_import_it() -> None:
    layers = actual_layers()
    reaching = [name for name in ANY_CLUSTER if "testbed" in reachable(layers, name)]
    assert not reaching, f"these packages reach bridge.testbed: {reaching}"


def test_no_package_is_a_flat_heap_of_modules() -> None:
    sizes = {d: len(list(d.glob("*.py"))) for d in [BRIDGE, *BRIDGE.rglob("*")] if (d / "__init__.py").is_file()}
    over = [f"{d.relative_to(ROOT)}: {n} modules" for d, n in sizes.items()
            if n > (MAX_TOP_MODULES if d == BRIDGE else MAX_MODULES)]
    assert not over, "\n".join(over)


def spark_event_namers(root: Path = BRIDGE) -> list[str]:
    """The modules under ``root`` (paths relative to it) that spell a Spark listener event or one of
    its fields."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*.py")
                  if SPARK_EVENT_WORDS.search(path.read_text()))


def test_one_module_names_sparks_listener_events() -> None:
    assert spark_event_namers() == [str(HISTORY_EVENTS.relative_to(BRIDGE))], (
        "read Spark's events through bridge.history.events' typed events, not by their names")


def test_the_event_name_check_catches_a_reader_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text('if event.get("Event") == "SparkListenerTaskEnd":\n    pass\n')
    (tmp_path / "fields.py").write_text('info = event["Task Info"]\n')
    (tmp_path / "clean.py").write_text('from bridge.history.events import TaskEnd\n')
    assert spark_event_namers(tmp_path) == ["fields.py", "mine.py"]


def modules_over(limit: int, tops: Iterable[Path], root: Path = ROOT) -> list[str]:
    """``path: N lines`` of every Python module under ``tops`` longer than ``limit`` lines."""
    return [f"{path.relative_to(root)}: {n} lines" for top in tops for path in sorted(top.rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > limit]


def test_no_module_is_over_600_lines() -> None:
    over = modules_over(MAX_LINES, [ROOT / top for top in LINE_CAPPED])
    assert not over, "\n".join(over)


def test_the_line_cap_counts_lines(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * 5)
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * 4)
    assert modules_over(4, [tmp_path / "pkg"], tmp_path) == ["pkg/long.py: 5 lines"]
    assert modules_over(5, [tmp_path / "pkg"], tmp_path) == []


def test_the_checks_catch_a_cycle_and_an_undocumented_import(tmp_path: Path) -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
    assert reachable({"a": {"b"}, "b": {"c"}, "c": set()}, "a") == {"b", "c"}
    code = "def f():\n    from bridge.replay import runner\nimport bridge.common.metrics as m\n"
    modules = set(imported_modules(ast.parse(code)))
    assert {bridge_package(m) for m in modules} == {"replay", "common"}
    assert bridge_package("bridge.cli") == TOP and bridge_package("bridge.no_such_module") is None
    doc = "## Packages and layers\n\n```text\ncommon:\nsim:   common cluster\n```\n"
    assert documented_layers(doc) == {"common": set(), "sim": {"common", "cluster"}}


def test_a_source_checkout_keeps_its_caches_beside_the_code(monkeypatch) -> None:
    """Modules that find the checkout from their own file moved with the packages: they still find it."""
    from bridge.common import paths

    monkeypatch.delenv("SCHEDBRIDGE_HOME", raising=False)
    assert paths.project_home() == ROOT
