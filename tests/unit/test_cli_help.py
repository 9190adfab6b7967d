"""Every command's ``--help`` shows help: exit 0 and a ``Usage:`` line, for every command and
subcommand of the tree, walked from the click groups, so a command added later is covered too
(``schedbridge submit --help`` once printed "Error: no application given")."""
from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from bridge.cli import main


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every command below ``group`` (groups included), depth first."""
    ctx = click.Context(group)
    paths = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{' '.join(prefix + (name,))} is listed but cannot be loaded"
        paths.append(prefix + (name,))
        if isinstance(command, click.Group):
            paths += command_paths(command, prefix + (name,))
    return paths


PATHS = command_paths(main)


def test_the_walk_reaches_nested_commands() -> None:
    assert {("simulate",), ("bench", "sim"), ("bench", "spark-tpch"), ("submit",)} <= set(PATHS)
    assert any(len(path) == 2 and path[0] == "testbed" for path in PATHS)


@pytest.mark.parametrize("path", [(), *PATHS], ids=lambda path: " ".join(path) or "schedbridge")
def test_help_shows_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: "), result.output
    assert "%%" not in result.output  # click prints help texts as written, no %-escaping
