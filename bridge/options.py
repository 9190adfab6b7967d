"""Click parameter types and helpers shared by every command, so each refuses bad input alike.

* :class:`FiniteFloat`: click's ``FloatRange`` lets NaN through (every comparison with NaN is
  false) and, without bounds, infinities too; a simulated delay or a load of NaN runs to the end
  and writes meaningless results.
* :class:`OutputPath`: a file or directory the command will create is checked when the command
  line is parsed, so an unwritable place is reported at once, not after the whole run.
* :func:`require_directory_place`: the same check, for places computed by the command.
* :func:`output_dir`: creates a results directory and removes it again if the command fails,
  so a failed run leaves no empty or partial directory behind.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    """A float within optional bounds that is never NaN or infinite."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


def _first_missing(path: Path) -> Path | None:
    """The highest ancestor of ``path`` (or ``path`` itself) that does not exist yet."""
    missing = None
    for candidate in (path, *path.parents):
        if candidate.exists():
            return missing
        missing = candidate
    return missing


def creation_problem(path: Path, *, directory: bool = False) -> str | None:
    """Why ``path`` (a ``directory`` or a file) could not be created, replaced or written into
    here, or None.

    Tried with a real file, not ``os.access``, which says yes to root even where nothing can be
    written (a read-only file system, /proc)."""
    path = Path(os.path.abspath(path))
    if path.is_dir():
        where = path
    elif directory and path.exists():
        return f"{path} is not a directory"
    elif path.exists():
        where = path.parent  # files are replaced by renaming a temporary file beside them
    else:
        where = next(p for p in path.parents if p.exists())
        if not where.is_dir():
            return f"{where} is not a directory"
    try:
        with tempfile.TemporaryFile(dir=where):
            return None
    except OSError as exc:
        return f"cannot write in {where}: {exc.strerror}"


def require_directory_place(path: Path, what: str) -> None:
    """Stop the command at once if the directory ``path`` (for ``what``) cannot be written: for
    output places that are not options or whose default must not be checked when unused."""
    problem = creation_problem(path, directory=True)
    if problem:
        raise click.ClickException(f"cannot write {what} to {path}: {problem}")


class OutputPath(click.Path):
    """A path the command will write: refused before any work if it cannot be created there."""

    def __init__(self, *, file_okay: bool = True, dir_okay: bool = True) -> None:
        super().__init__(file_okay=file_okay, dir_okay=dir_okay, writable=True, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = super().convert(value, param, ctx)
        problem = creation_problem(path, directory=not self.file_okay)
        if problem:
            self.fail(problem, param, ctx)
        return path


@contextmanager
def output_dir(path: Path) -> Iterator[Path]:
    """Create ``path`` (and missing parents) for the block; if the block fails, remove what this
    call created, with everything written into it."""
    created = _first_missing(Path(os.path.abspath(path)))
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
