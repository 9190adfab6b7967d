"""No policy is special-cased by name in the engine or the shared mechanisms.

* The cluster state, the simulator, metrics, workload model, contract and ``policies/common`` never contain a
  registered policy name as a string literal at all.
* Nowhere outside ``policies/`` (nor in ``policies/common``) is a string compared with a policy
  name (``x == "hawk"``, ``name in ("eagle", ...)``, ``match``/``case "kairos"``): behaviour comes
  from a policy's hooks, typed config and registry entry, not from its name. The stand-in
  schedulers (``stock``, ``stock-fair``) count as names: callers ask ``registry.stand_in``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from policies.framework.registry import BUILTINS, default_registry
from policies.framework.standins import STAND_INS

ROOT = Path(__file__).resolve().parents[2]
NAMES = set(default_registry().names()) | set(BUILTINS) | set(STAND_INS)

NO_NAMES_AT_ALL = [
    *sorted((ROOT / "bridge" / "cluster").glob("*.py")),
    ROOT / "bridge" / "sim" / "engine.py",
    ROOT / "bridge" / "common" / "metrics.py",
    ROOT / "bridge" / "sim" / "measures.py",
    *sorted((ROOT / "policies" / "common").glob("*.py")),
    ROOT / "policies" / "framework" / "api.py",
    ROOT / "workloads" / "model.py",
    ROOT / "workloads" / "trace.py",
]
# Everything outside ``policies/`` (where a policy's own module may name itself), and the shared
# mechanisms inside it.
NO_NAME_TESTS = [p for package in ("bridge", "workloads", "sparkplugin", "yarnclient")
                 for p in sorted((ROOT / package).rglob("*.py"))]
NO_NAME_TESTS += sorted((ROOT / "policies" / "common").rglob("*.py"))


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _name_tests(tree: ast.AST) -> list[tuple[int, str]]:
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                hits += [(node.lineno, s) for s in _strings(operand) if s.lower() in NAMES]
        elif isinstance(node, ast.match_case):
            for sub in ast.walk(node.pattern):
                if isinstance(sub, ast.MatchValue):
                    hits += [(node.pattern.lineno, s) for s in _strings(sub.value) if s.lower() in NAMES]
    return hits


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def test_engine_and_common_never_name_a_policy():
    offenders = []
    for path in NO_NAMES_AT_ALL:
        tree = ast.parse(path.read_text(), str(path))
        docs = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if node.value.lower() in NAMES:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not offenders, "policy names in engine code:\n" + "\n".join(offenders)


def test_no_policy_name_comparisons_in_bridge_or_common():
    offenders = []
    for path in NO_NAME_TESTS:
        tree = ast.parse(path.read_text(), str(path))
        offenders += [f"{path.relative_to(ROOT)}:{line}: compares with {s!r}" for line, s in _name_tests(tree)]
    assert not offenders, "branching on policy names:\n" + "\n".join(offenders)


def test_the_checker_catches_name_tests():
    code = 'if policy == "hawk": pass\nif p in ("eagle", "x"): pass\nmatch p:\n    case "kairos": pass\n'
    assert [s for _, s in _name_tests(ast.parse(code))] == ["hawk", "eagle", "kairos"]


# Modules of ``policies`` that bridge/ may import: the contract, the registry, the parameters'
# declared ranges (shown by --list-policies), the switch that says which core runs (compiled or
# pure), and the heap and the id table the cluster engine shares with the policies' tables (data
# structures, no policy).
# Everything else (a concrete policy, its config, its internals) is reached through the registry
# by name.
# (``policies.api`` and ``policies.registry`` are their names in trees older than policies/framework,
# which ``bench sim --baseline`` may import.)
CONTRACT = {"policies", "policies.framework", "policies.framework.api", "policies.framework.registry",
            "policies.framework.bounds", "policies.framework.compiled", "policies.common.heap",
            "policies.common.idtable", "policies.api", "policies.registry"}


def _policy_imports(tree: ast.AST) -> list[tuple[int, str]]:
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "policies":
            names = [node.module] if node.module != "policies" else [f"policies.{a.name}" for a in node.names]
            hits += [(node.lineno, m) for m in names if m not in CONTRACT]
        elif isinstance(node, ast.Import):
            hits += [(node.lineno, a.name) for a in node.names
                     if a.name.split(".")[0] == "policies" and a.name not in CONTRACT]
    return hits


def test_bridge_reaches_policies_only_through_the_contract_and_the_registry():
    offenders = []
    for path in sorted((ROOT / "bridge").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        offenders += [f"{path.relative_to(ROOT)}:{line}: imports {m}" for line, m in _policy_imports(tree)]
    assert not offenders, "bridge/ imports a concrete policy:\n" + "\n".join(offenders)


def test_the_import_checker_catches_concrete_policies():
    code = ("from policies.kairos.kairos import Kairos\nimport policies.eagle.eagle\nfrom policies import hawk\n"
            "from policies.framework.api import Run\nfrom policies.framework import registry\n")
    assert [m for _, m in _policy_imports(ast.parse(code))] == \
        ["policies.kairos.kairos", "policies.eagle.eagle", "policies.hawk"]
