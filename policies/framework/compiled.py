"""The simulator's hot path compiled with mypyc, loaded only while it matches the sources.

The modules in :data:`MODULES` (the cluster engine, the simulator's runner, the policies the
benchmark runs and their ``policies/common`` mechanisms, the Ursa family) are compiled by mypyc into C
extensions under ``.cache/mypyc/<interpreter>/`` (``make setup`` runs
``python -c 'import policies.framework.compiled as c; c.build()'``). They never sit beside their
``.py`` files, so Python's own import finds only the sources; a finder first on ``sys.meta_path``
loads the compiled ones only when the build's stamp still matches: the CRC-32 and size of every
compiled source and of every project module they import, and the interpreter. If anything differs (a
developer edited ``policies/eagle/eagle.py``), or the build is missing, or ``SCHEDBRIDGE_PURE=1`` is
set, everything runs as pure Python and :data:`CORE` says why; ``simulate`` and ``bench sim``
print it, so a fallback is never silent. The modules are compiled as one group (they call each
other natively), so it is all of them or none.

The decision is taken where a simulation starts, not where ``policies`` is imported: importing
``policies`` (``policies/__init__.py``, and first thing ``bridge/cluster`` and ``bridge/sim``, the
packages that hold the other compiled modules) calls :func:`install`, which only puts a finder
on ``sys.meta_path``; that finder reads the stamp and hashes the sources at the first import of a
compiled module. A trace reader or a command that never simulates hashes nothing. This module
reads files to decide; it is the one part of ``policies`` that does I/O.
"""
from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

MODULES = (
    "policies.framework.messages",
    "bridge.cluster.kernel", "bridge.cluster.events", "bridge.cluster.slots", "bridge.cluster.measure",
    "bridge.cluster.offslot", "bridge.cluster.runner", "bridge.cluster.tables", "bridge.cluster.state",
    "bridge.cluster.view", "bridge.sim.engine",
    "policies.common.heap", "policies.common.idtable", "policies.common.lwl", "policies.common.nodefifo",
    "policies.common.partitions", "policies.common.preemptive", "policies.common.probing", "policies.common.queues",
    "policies.common.srpt", "policies.common.stealing", "policies.common.vectors",
    "policies.eagle.sparrow", "policies.eagle.hawk", "policies.eagle.eagle", "policies.kairos.config",
    "policies.kairos.central", "policies.kairos.node", "policies.kairos.kairos",
    "policies.ursa.dominance", "policies.ursa.ordering", "policies.ursa.placement", "policies.ursa.policy",
    "policies.ursa.retry", "policies.ursa.room",
)
ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = ROOT / ".cache" / "mypyc" / sys.implementation.cache_tag
STAMP = "stamp.json"
PURE_ENV = "SCHEDBRIDGE_PURE"
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


@dataclass(frozen=True)
class Core:
    """Which simulator core this process runs: ``compiled`` or not, and why not."""

    compiled: bool
    reason: str

    def describe(self) -> str:
        """One line for the commands to print."""
        if self.compiled:
            return f"simulator core: compiled (mypyc, {len(MODULES)} modules from {BUILD_DIR})"
        return f"simulator core: pure Python ({self.reason})"


CORE_UNDECIDED = "not decided yet: no compiled module imported"
CORE = Core(False, CORE_UNDECIDED)


def source(module: str, root: Path = ROOT) -> Path:
    """The ``.py`` file of a project module."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def dependencies(modules: Sequence[str], root: Path = ROOT) -> list[str]:
    """The compiled modules plus every project module they import (mypyc compiles against
    their types, so an edit there makes the build stale too), as paths relative to ``root``."""
    files = {source(m, root) for m in modules}
    for m in modules:
        for node in ast.walk(ast.parse(source(m, root).read_text(), str(source(m, root)))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            files.update(p for p in (source(n, root) for n in names) if p.is_file())
    return sorted(str(p.relative_to(root)) for p in files)


def digests(paths: Sequence[str], root: Path = ROOT) -> dict[str, str]:
    """CRC-32 and size of each file (``missing`` for one that is gone)."""
    return {p: _digest((root / p).read_bytes()) if (root / p).is_file() else "missing" for p in paths}


def _digest(data: bytes) -> str:
    """A file's content stamp: CRC-32 and length. Not SHA-256: hashlib maps OpenSSL into every
    process that simulates (3.7 MB of peak RSS), and an edit, not an attacker, is what it detects."""
    return f"crc32:{zlib.crc32(data):08x}:{len(data)}"


def check(build_dir: Path = BUILD_DIR, root: Path = ROOT) -> tuple[dict[str, Path], str]:
    """The compiled files by module name if the build in ``build_dir`` matches the sources in
    ``root``; otherwise no files and the reason, naming what differs and how to rebuild."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return {}, f"{PURE_ENV}={os.environ[PURE_ENV]}"
    try:
        stamp = json.loads((build_dir / STAMP).read_text())
    except (OSError, ValueError):
        return {}, f"no compiled build in {build_dir}; `make setup` (or `make compiled`) builds one"
    elsewhere = [pkg for pkg in ("bridge", "policies") if _package_dir(pkg) not in (None, root / pkg)]
    if elsewhere:
        return {}, f"`{elsewhere[0]}` is imported from another tree than {root} (the compiled build's)"
    if stamp.get("modules") != list(MODULES):
        return {}, "the compiled build is of another module list; rebuild: `make setup`"
    changed = [p for p, d in digests(list(stamp["sources"]), root).items() if stamp["sources"][p] != d]
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        return {}, f"compiled build is stale: {changed[0]}{more} changed since it was built; rebuild: `make setup`"
    files = {m: build_dir / f for m, f in stamp["files"].items()}
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
        return {}, f"compiled build is incomplete ({missing[0]} is missing); rebuild: `make setup`"
    return files, ""


def _package_dir(name: str) -> Path | None:
    """Where ``import name`` takes a top-level package from (a benchmark child may take
    ``policies`` from one tree and ``bridge`` from another), or None if it is not importable."""
    spec = sys.modules[name].__spec__ if name in sys.modules else importlib.util.find_spec(name)
    where = spec.submodule_search_locations if spec else None
    return Path(next(iter(where))).resolve() if where else None


class _Finder(importlib.abc.MetaPathFinder):
    """Decides which core runs at the first import of a compiled module, then finds the compiled
    modules (and mypyc's shared group library) in the build directory, or nothing if pure."""

    def __init__(self) -> None:
        self.files: dict[str, Path] | None = None   # None: not decided yet

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if self.files is None:
            if fullname not in MODULES:
                return None
            self.files = _decide()
        f = self.files.get(fullname)
        if f is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, f, loader=importlib.machinery.ExtensionFileLoader(fullname, str(f)))


def install() -> None:
    """Put the deciding finder first on ``sys.meta_path``, once per process; no I/O (the
    decision waits for the first import of a compiled module)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _decide() -> dict[str, Path]:
    """Set :data:`CORE`; the compiled files to load, or none for pure Python."""
    global CORE
    files, reason = check()
    early = [m for m in MODULES if m in sys.modules]
    if files and early:
        files, reason = {}, f"{early[0]} was imported before the compiled core could be activated"
    CORE = Core(bool(files), reason)
    return files


def build(build_dir: Path = BUILD_DIR, root: Path = ROOT) -> None:
    """Compile :data:`MODULES` with mypyc into ``build_dir`` and write the stamp last (so a
    failed build leaves none). The sources are hashed before compiling: an edit made during
    the build makes it stale at once."""
    from mypyc.build import mypycify          # build-time only: mypy is a development dependency
    from setuptools import Distribution

    sources = dependencies(MODULES, root)
    hashes = digests(sources, root)
    (build_dir / STAMP).unlink(missing_ok=True)
    shutil.rmtree(build_dir / "lib", ignore_errors=True)   # no group library of an older build
    os.chdir(root)                            # mypyc names modules by their path from here
    exts = mypycify(["--no-warn-unused-configs", *(str(source(m, root).relative_to(root)) for m in MODULES)],
                    opt_level="3", target_dir=str(build_dir / "c"))
    dist = Distribution({"name": "schedbridge-compiled", "ext_modules": exts})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib, cmd.build_temp = str(build_dir / "lib"), str(build_dir / "tmp")
    dist.run_command("build_ext")
    built = {p.name.removesuffix(SUFFIX): p for p in (build_dir / "lib").glob(f"*{SUFFIX}")}
    files = {m: (build_dir / "lib").joinpath(*m.split(".")).with_suffix(SUFFIX) for m in MODULES}
    files.update(built)                       # mypyc's shared library of the group, a top-level module
    stamp = {"modules": list(MODULES), "sources": hashes,
             "files": {m: str(f.relative_to(build_dir)) for m, f in files.items()}}
    tmp = build_dir / f"{STAMP}.tmp"
    tmp.write_text(json.dumps(stamp, indent=1))
    tmp.replace(build_dir / STAMP)
    print(f"compiled {len(MODULES)} modules into {build_dir}")
