"""Optional dependencies: which extra of the distribution brings which package.

``pip install schedbridge`` is the core: policies, simulator, traces, experiments, reports. The
live path needs ``[spark]`` (pyspark), TPC-H needs ``[tpch]`` (DuckDB, tpchgen-cli). Modules
import these packages where they use them; the command line (``bridge.cli``) turns the
``ModuleNotFoundError`` of a missing one into :class:`MissingExtra`, one line that names the
extra to install, instead of a traceback.
"""
from __future__ import annotations

import importlib.util

import click

# top-level module -> the extra that installs it (pyproject.toml [project.optional-dependencies])
EXTRA_OF: dict[str, str] = {
    "pyspark": "spark",
    "py4j": "spark",
    "duckdb": "tpch",
    "duckdb_extension_tpch": "tpch",
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, as a user would paste it."""
    return f"pip install 'schedbridge[{extra}]'"


class MissingExtra(click.ClickException):
    """A command needs a package of an extra that is not installed."""

    def __init__(self, module: str, extra: str, what: str = "this command") -> None:
        super().__init__(f"{what} needs {module}, which is not installed: {install_hint(extra)}")
        self.module = module
        self.extra = extra


def missing_extra(error: ModuleNotFoundError, what: str = "this command") -> MissingExtra | None:
    """``error`` as a :class:`MissingExtra` when it is an absent optional package, else None.

    Only a package that is really absent counts: a missing submodule of an installed pyspark is a
    broken installation, not a missing extra, and keeps its traceback."""
    module = (error.name or "").partition(".")[0]
    extra = EXTRA_OF.get(module)
    if extra is None or importlib.util.find_spec(module) is not None:
        return None
    return MissingExtra(module, extra, what)
