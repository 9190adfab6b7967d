"""The compiled simulator core (policies/framework/compiled.py): loaded only while its build matches the
sources, otherwise pure Python with the reason said."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import policies.framework.compiled as compiled

HERE = Path(__file__).resolve().parents[2]
PROBE = ("import bridge.sim.engine as e, policies.eagle.eagle as p, policies.framework.compiled as c; "
         "print(c.CORE.compiled, e.__file__, p.__file__, c.CORE.describe(), sep='|')")


def _fake_build(root: Path, build: Path) -> None:
    """A build directory whose stamp covers one source of ``root`` (no compiler needed)."""
    (root / "policies" / "eagle").mkdir(parents=True)
    (root / "policies" / "eagle" / "eagle.py").write_text("X = 1\n")
    (build / "lib").mkdir(parents=True)
    (build / "lib" / "eagle.so").write_bytes(b"")
    stamp = {"modules": list(compiled.MODULES),
             "sources": {"policies/eagle/eagle.py": compiled._digest(b"X = 1\n")},
             "files": {"policies.eagle.eagle": "lib/eagle.so"}}
    (build / compiled.STAMP).write_text(json.dumps(stamp))


def test_check_accepts_a_matching_build_and_names_what_is_stale(tmp_path, monkeypatch):
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    monkeypatch.setattr(compiled, "_package_dir", lambda pkg: tmp_path / "root" / pkg)
    root, build = tmp_path / "root", tmp_path / "build"
    _fake_build(root, build)
    files, reason = compiled.check(build, root)
    assert files == {"policies.eagle.eagle": build / "lib" / "eagle.so"} and reason == ""
    (root / "policies" / "eagle" / "eagle.py").write_text("X = 2\n")          # a developer's edit
    files, reason = compiled.check(build, root)
    assert files == {} and "stale: policies/eagle/eagle.py changed" in reason and "make setup" in reason
    monkeypatch.setenv(compiled.PURE_ENV, "1")
    assert compiled.check(build, root) == ({}, f"{compiled.PURE_ENV}=1")


def test_check_refuses_a_missing_or_incomplete_build(tmp_path, monkeypatch):
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    monkeypatch.setattr(compiled, "_package_dir", lambda pkg: tmp_path / "root" / pkg)
    root, build = tmp_path / "root", tmp_path / "build"
    assert "no compiled build in" in compiled.check(build, root)[1]
    _fake_build(root, build)
    (build / "lib" / "eagle.so").unlink()
    assert "incomplete" in compiled.check(build, root)[1]


def test_the_stamp_covers_the_project_modules_the_compiled_ones_import():
    deps = compiled.dependencies(["policies.eagle.eagle"], HERE)
    assert {"policies/eagle/eagle.py", "policies/framework/api.py", "policies/common/lwl.py"} <= set(deps)
    assert all(not d.startswith(("numpy", "heapq")) for d in deps)


def _probe(root: Path, pure: bool) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    if pure:
        env[compiled.PURE_ENV] = "1"
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env={**env, "PYTHONPATH": str(root)},
                         capture_output=True, text=True, check=True).stdout
    return out.strip().split("|")


def _check_build() -> tuple[dict[str, Path], str]:
    """``compiled.check()`` of this tree's build, whatever ``SCHEDBRIDGE_PURE`` says."""
    env_pure = os.environ.pop(compiled.PURE_ENV, None)
    try:
        return compiled.check()
    finally:
        if env_pure is not None:
            os.environ[compiled.PURE_ENV] = env_pure


def _current_build() -> None:
    files, reason = _check_build()
    if not files:
        pytest.skip(f"no current compiled build to test against: {reason}")


def test_a_current_build_runs_compiled_and_the_env_var_forces_pure():
    _current_build()
    flag, engine, eagle, line = _probe(HERE, pure=False)
    assert flag == "True" and engine.endswith(compiled.SUFFIX) and eagle.endswith(compiled.SUFFIX)
    assert str(compiled.BUILD_DIR) in engine and line.startswith("simulator core: compiled")
    flag, engine, eagle, line = _probe(HERE, pure=True)
    assert flag == "False" and engine.endswith(".py") and eagle.endswith(".py")
    assert line == f"simulator core: pure Python ({compiled.PURE_ENV}=1)"


# The trace readers, then a simulation: reading a trace decides nothing, simulating decides.
READ_THEN_SIMULATE = (
    "import sys; import workloads.trace, workloads.workload_file, workloads.multires.jsonl, workloads.synthetic; "
    "import policies.framework.compiled as c; "
    "print(c.CORE.reason, sorted(m for m in c.MODULES if m in sys.modules), sep='|'); "
    "import bridge.sim.engine as e; print(c.CORE.compiled, e.__file__, c.CORE.describe(), sep='|')")


def test_reading_a_trace_leaves_the_core_undecided_and_a_simulation_decides_it():
    """Importing the trace readers imports no compiled module and hashes no source (the core is
    not decided yet); the simulator's first import decides it: compiled when this tree's build is
    current, otherwise pure Python with the same reason :func:`check` gives."""
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    out = subprocess.run([sys.executable, "-c", READ_THEN_SIMULATE], cwd=HERE, env={**env, "PYTHONPATH": str(HERE)},
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == f"{compiled.CORE_UNDECIDED}|[]"
    flag, engine, line = out[1].split("|")
    files, reason = _check_build()
    if files:
        assert flag == "True" and engine.endswith(compiled.SUFFIX) and line.startswith("simulator core: compiled")
    else:
        assert flag == "False" and engine.endswith(".py") and line == f"simulator core: pure Python ({reason})"


def test_an_edited_policy_runs_its_source_not_the_stale_build(tmp_path):
    """A copy of the tree with its build: compiled as is; after an edit of policies/eagle/eagle.py the
    process runs the edited source and says which file made the build stale."""
    _current_build()
    for d in ("bridge", "policies", "workloads"):
        shutil.copytree(HERE / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    rel = compiled.BUILD_DIR.relative_to(HERE)
    shutil.copytree(compiled.BUILD_DIR, tmp_path / rel, ignore=shutil.ignore_patterns("c", "tmp"))
    assert _probe(tmp_path, pure=False)[0] == "True"
    eagle = tmp_path / "policies" / "eagle" / "eagle.py"
    eagle.write_text(eagle.read_text() + "\nEDITED = True\n")
    flag, engine, eagle_file, line = _probe(tmp_path, pure=False)
    assert flag == "False" and eagle_file == str(eagle) and engine.endswith(".py")
    assert "stale: policies/eagle/eagle.py changed since it was built" in line


@pytest.mark.parametrize("package", ["bridge.cluster", "policies.ursa"])
def test_every_module_of_a_hot_package_is_compiled(package):
    """The cluster state's modules, and the Ursa family's, call each other on the simulator's hot
    path: one left out would run interpreted between compiled ones (a module split off must join
    the list)."""
    modules = {f"{package}.{p.stem}" for p in HERE.joinpath(*package.split(".")).glob("*.py")
               if p.stem != "__init__"}
    assert modules - set(compiled.MODULES) == set()


SIMULATE_THEN_LIST_OPENSSL = (
    "import sys; from bridge.cli import main\n"
    "try:\n    main(['simulate', sys.argv[1], '--policy', 'eagle', '--nodes', '2', '--out', sys.argv[2]])\n"
    "except SystemExit as e:\n    assert not e.code, e.code\n"
    "print(sorted(m for m in ('_hashlib', '_ssl') if m in sys.modules))")


def test_a_simulation_maps_no_openssl(tmp_path):
    """`simulate` loads no OpenSSL (hashlib's or ssl's): mapped, it is 3.7 MB of every run's peak RSS,
    which docs/benchmarks.md holds against the authors' simulator's (the build stamp is a CRC-32,
    temporary names come from os.urandom)."""
    trace, out = tmp_path / "t.trace", tmp_path / "jobs.csv"
    trace.write_text("0 2 1 1 1\n1 1 3 3\n")
    done = subprocess.run([sys.executable, "-c", SIMULATE_THEN_LIST_OPENSSL, str(trace), str(out)], cwd=HERE,
                          env={**os.environ, "PYTHONPATH": str(HERE)}, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]" and out.is_file()
