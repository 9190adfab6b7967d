"""Click parameter types and helpers shared by every command, so each refuses bad input alike.

* :class:`FiniteFloat`: click's ``FloatRange`` lets NaN through (every comparison with NaN is
  false) and, without bounds, infinities too; a simulated delay or a load of NaN runs to the end
  and writes meaningless results.
* :class:`OutputPath`: a file or directory the command will create is checked when the command
  line is parsed, so an unwritable place (or a special file ``bridge.common.atomic`` refuses) is
  reported at once, not after the whole run.
* :func:`require_directory_place`: the same check, for places computed by the command.
* :func:`output_dir`: creates a results directory and removes it again if the command fails,
  so a failed run leaves no empty or partial directory behind.
* :func:`param_option`: ``--param KEY=VALUE``, the one spelling of policy parameters in every
  command, and :class:`KeyValue` for any other ``KEY=VALUE`` option (``replay --conf``).
* :func:`renamed_option`: a hidden old spelling that fails naming the new one.
* :class:`ChoiceList`: a comma-separated list of choices (``report --format png,svg``).
* :data:`NODES`, :data:`SLOTS`, :data:`JOBS`, ...: the sizes every command accepts, what a real
  cluster or study could need, so a slip of the keyboard is one error saying the bound, never an
  allocation that runs until memory does (the policies' own ranges: ``policies/framework/bounds.py``).
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from bridge.common import atomic


MAX_NODES = 1_000_000
MAX_SLOTS = 1024             # slots (cores) per node
MAX_TOTAL_SLOTS = 10_000_000  # nodes x slots, what the simulator holds in memory comfortably
MAX_JOBS = 1_000_000
MAX_SECONDS = 7 * 86_400.0   # a wait or timeout
NODES = click.IntRange(1, MAX_NODES)
SLOTS = click.IntRange(1, MAX_SLOTS)
JOBS = click.IntRange(1, MAX_JOBS)
REPEATS = click.IntRange(1, 1000)
EXECUTORS = click.IntRange(1, 100_000)   # executors of one application
MAX_SCALE_FACTOR = 1000.0                 # TPC-H: about 1 TB of data


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
        problem = atomic.refusal(path)
        if problem or atomic.streamed(path):  # not written at all, or written in place
            return problem
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
        path = cast(Path, super().convert(value, param, ctx))  # path_type=Path makes it one
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


class ChoiceList(click.ParamType):
    """A comma-separated list of ``choices`` (``png,svg``) as a tuple, each once, in the order given."""

    name = "LIST"

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.choices) + "],..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        items = tuple(item.strip() for item in str(value).split(","))
        unknown = [item for item in items if item not in self.choices]
        if unknown:
            self.fail(f"{unknown[0]!r} is not one of {', '.join(self.choices)}", param, ctx)
        if len(set(items)) < len(items):
            self.fail(f"{value!r} names one twice", param, ctx)
        return items


class KeyValue(click.ParamType):
    """``KEY=VALUE`` as a ``(key, value)`` pair (both stripped); refused at parse time, naming the
    option, so a malformed item never reaches the policy or Spark."""

    name = "KEY=VALUE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        key, sep, rest = str(value).partition("=")
        if not sep or not key.strip():
            self.fail(f"expected KEY=VALUE, got {value!r}", param, ctx)
        return key.strip(), rest.strip()


def pairs_to_dict(ctx: click.Context, param: click.Parameter, pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """A repeatable :class:`KeyValue` option as a dict; a key given twice is refused, since which
    of the two values would win is a guess."""
    out: dict[str, str] = {}
    for key, value in pairs:
        if key in out:
            raise click.BadParameter(f"{key!r} given twice", ctx, param)
        out[key] = value
    return out


F = TypeVar("F", bound=Callable[..., Any])


def param_option(help_text: str = "Policy parameter (repeatable); see `schedbridge simulate "
                                  "--list-policies` for each policy's.") -> Callable[[F], F]:
    """``--param KEY=VALUE`` (repeatable), passed to the command as ``params: dict[str, str]``."""
    return click.option("--param", "params", multiple=True, type=KeyValue(), callback=pairs_to_dict,
                        metavar="KEY=VALUE", help=help_text)


def estimates_option() -> Callable[[F], F]:
    """``--estimates FILE`` (a runtime-estimates file, `schedbridge estimates build`), passed to the
    command as ``estimates: Path | None``."""
    return click.option("--estimates", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                        help="Runtime estimates of recurring jobs for the live policy (from `schedbridge estimates "
                             "build`; the plugin's spark.schedbridge.estimates). A job it does not list gets the "
                             "default estimate; --param learn=true learns them from the run's own finished jobs.")


def interarrival_option(f: F) -> F:
    """``--interarrival SECONDS``: a job mix's mean seconds between arrivals instead of its file's
    ``mean_interarrival_s``, passed as ``interarrival: float | None``."""
    return click.option("--interarrival", type=FiniteFloat(min=0.001, max=1e6), default=None, metavar="SECONDS",
                        help="Mean seconds between the mix's arrivals instead of the file's mean_interarrival_s "
                             "(the same jobs in the same order, faster or slower).")(f)


def renamed_option(old: str, new: str) -> Callable[[F], F]:
    """A hidden ``old`` option that stops the command saying to use ``new`` (click alone would
    answer "no such option", or suggest an unrelated look-alike)."""
    def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value:
            raise click.UsageError(f"{old} is now {new}", ctx)

    return click.option(old, multiple=True, hidden=True, expose_value=False, callback=refuse)
