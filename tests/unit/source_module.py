"""A compiled module's source, loaded as a module of its own: the compiled classes take no
interpreted subclass, so tests that subclass a policy's class to compare it with itself use this."""
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_source(relative: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The module at ``relative`` (to the project root), registered in ``sys.modules`` for the
    test (its dataclasses look themselves up there)."""
    name = relative.removesuffix(".py").replace("/", "_") + "_source"
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module
