"""A command that needs a missing extra stops with one line naming it (``bridge.common.extras``).

The shared venv has every extra, so these tests declare an absent module as belonging to the
``[spark]`` extra; ``tests/integration/test_core_install.py`` checks the real thing in a venv
without extras."""
from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bridge.cli import LazyGroup
from bridge.common import extras

ABSENT = "schedbridge_absent_module"


@pytest.fixture
def group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> click.Group:
    """A lazy group: `eager` imports the absent module at import time, `late` when it runs;
    `broken_cmd` imports a module that no extra brings."""
    (tmp_path / "eager_cmd.py").write_text(
        f"import click\nimport {ABSENT}\n\n@click.command()\ndef cmd():\n    'Eager.'\n")
    (tmp_path / "late_cmd.py").write_text(
        f"import click\n\n@click.command()\ndef cmd():\n    'Late.'\n    import {ABSENT}.sub\n")
    (tmp_path / "broken_cmd.py").write_text("import schedbridge_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(extras.EXTRA_OF, ABSENT, "spark")
    return LazyGroup("sb", targets={"eager": "eager_cmd:cmd", "late": "late_cmd:cmd"})


MESSAGE = f"needs {ABSENT}, which is not installed: pip install 'schedbridge[spark]'"


def test_the_group_help_lists_a_command_whose_extra_is_missing(group: click.Group) -> None:
    result = CliRunner().invoke(group, ["--help"], prog_name="sb")
    assert result.exit_code == 0, result.output
    assert "eager  (needs the [spark] extra)" in result.output
    assert "late   Late." in result.output


@pytest.mark.parametrize("args", [["eager"], ["eager", "--help"], ["eager", "--any", "x"], ["late"]])
def test_running_it_names_the_extra_in_one_line(group: click.Group, args: list[str]) -> None:
    result = CliRunner().invoke(group, args, prog_name="sb")
    assert result.exit_code == 1
    assert result.output == f"Error: `sb {args[0]}` {MESSAGE}\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_module_no_extra_brings_keeps_its_error(group: click.Group) -> None:
    broken = LazyGroup("sb", targets={"broken": "broken_cmd:cmd"})
    result = CliRunner().invoke(broken, ["broken"], prog_name="sb")
    assert isinstance(result.exception, ModuleNotFoundError)


def test_an_installed_package_missing_a_submodule_is_not_a_missing_extra() -> None:
    assert extras.missing_extra(ModuleNotFoundError("no", name="click.no_such_module")) is None
    assert extras.missing_extra(ModuleNotFoundError("no", name="pyspark.no_such_module")) is None
