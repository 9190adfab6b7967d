"""Reading and validating workload files (TOML).

Everything is checked here, before a replay submits anything: an unknown key, a wrong type, a
negative rate, probabilities that do not add up, or an input or trace file that is not there
raises `WorkloadFileError` naming the file and the dotted key. See `docs/workloads.md` for the
format and `workloads/examples/` for complete files.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from pathlib import Path
from typing import Any

from bridge.common import tomltext
from workloads.demands import STAGE_KINDS, Demand, TaskDemands, demand
from workloads.spec import (
    ARRIVALS,
    TASK_MODES,
    Category,
    Input,
    Mix,
    TpchInput,
    TraceSource,
    Workload,
    WordCountInput,
)
from workloads.tpch import QUERY_NUMBERS

_REQUIRED = object()
KINDS = ("wordcount", "tpch")


class WorkloadFileError(ValueError):
    """A mistake in a workload file, located by file and dotted key."""

    def __init__(self, path: Path, key: str, message: str) -> None:
        super().__init__(f"{path}: {key}: {message}" if key else f"{path}: {message}")
        self.path = path
        self.key = key


class TomlTable:
    """One TOML table being read: typed lookups, and an error for every key nobody asked for."""

    def __init__(self, path: Path, prefix: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise WorkloadFileError(path, prefix, "expected a table")
        self.path, self.prefix, self.data = path, prefix, data
        self._read: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, message: str) -> WorkloadFileError:
        return WorkloadFileError(self.path, self.key(name), message)

    def raw(self, name: str, default: Any = _REQUIRED) -> Any:
        self._read.add(name)
        if name in self.data:
            return self.data[name]
        if default is _REQUIRED:
            near = difflib.get_close_matches(name, list(self.data), n=1)
            raise self.error(name, f"missing (is {self.key(near[0])!r} a misspelling?)" if near else "missing")
        return default

    def text(self, name: str, default: Any = _REQUIRED, choices: tuple[str, ...] = ()) -> str:
        value = self.raw(name, default)
        if not isinstance(value, str):
            raise self.error(name, f"expected a string, got {value!r}")
        if choices and value not in choices:
            raise self.error(name, f"must be one of {', '.join(choices)}; got {value!r}")
        return value

    def integer(self, name: str, default: Any = _REQUIRED, minimum: int | None = None) -> int:
        value = self.raw(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(name, f"must be >= {minimum}, got {value}")
        return value

    def number(self, name: str, default: Any = _REQUIRED, positive: bool = True) -> float:
        value = self.raw(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(name, f"expected a finite number, got {value!r}")
        if value < 0 or (positive and value == 0):
            raise self.error(name, f"must be {'> 0' if positive else '>= 0'}, got {value}")
        return float(value)

    def optional_number(self, name: str) -> float | None:
        return self.number(name) if name in self.data else None

    def subtables(self, name: str) -> list[TomlTable]:
        """The tables under `name` (e.g. `[inputs.x]`, `[inputs.y]`), in file order."""
        group = TomlTable(self.path, self.key(name), self.raw(name, {}))
        group._read.update(group.data)
        return [TomlTable(self.path, group.key(sub), data) for sub, data in group.data.items()]

    @property
    def name(self) -> str:
        return self.prefix.rsplit(".", 1)[-1]

    def finish(self) -> None:
        """Reject the first key that was never read (typos must not pass silently)."""
        unknown = sorted(set(self.data) - self._read)
        if unknown:
            known = ", ".join(sorted(self._read))
            raise self.error(unknown[0], f"unknown key (known here: {known})")


def _input(table: TomlTable) -> Input:
    kind = table.text("kind", choices=KINDS)
    if kind == "wordcount":
        spec: Input = WordCountInput(table.name, table.number("size_mb"),
                                     table.integer("block_mb", minimum=1),
                                     table.integer("seed", 0, minimum=0))
    else:
        spec = TpchInput(table.name, table.number("scale_factor"))
    table.finish()
    return spec


def _queries(table: TomlTable) -> tuple[int, ...]:
    value = table.raw("queries", list(QUERY_NUMBERS))
    if not isinstance(value, list) or not value or not all(
            isinstance(q, int) and not isinstance(q, bool) and q in QUERY_NUMBERS for q in value):
        raise table.error("queries", f"expected a non-empty list of query numbers 1-22, got {value!r}")
    return tuple(value)


def _demands(table: TomlTable) -> TaskDemands | None:
    """The optional ``demand``: ``[cores, GB]`` for every task, or a table of one per stage kind."""
    value = table.raw("demand", None)
    if value is None:
        return None
    if isinstance(value, dict):
        if set(value) != set(STAGE_KINDS):
            raise table.error("demand", f"a table of demands needs exactly the keys {' and '.join(STAGE_KINDS)}, "
                                        f"got {', '.join(sorted(value)) or 'none'}")
        return TaskDemands(*(_demand(table, f"demand.{kind}", value[kind]) for kind in STAGE_KINDS))
    return TaskDemands.uniform(_demand(table, "demand", value))


def _demand(table: TomlTable, key: str, value: object) -> Demand:
    try:
        return demand(value)
    except ValueError as exc:
        raise table.error(key, str(exc)) from None


def _category(table: TomlTable, inputs: dict[str, Input]) -> Category:
    kind = table.text("kind", choices=KINDS)
    probability = table.number("probability", positive=False)
    if probability > 1:
        raise table.error("probability", f"must be <= 1, got {probability}")
    source = table.text("input")
    expected = WordCountInput if kind == "wordcount" else TpchInput
    if not isinstance(inputs.get(source), expected):
        declared = ", ".join(n for n, i in inputs.items() if isinstance(i, expected)) or "none"
        raise table.error("input", f"no {kind} input {source!r} in [inputs] (declared: {declared})")
    alone, demands = table.optional_number("duration_alone_s"), _demands(table)
    if kind == "wordcount":
        category = Category(table.name, kind, probability, source, duration_alone_s=alone, demands=demands,
                            reduces=table.integer("reduces", minimum=1),
                            extra_flops=table.integer("extra_flops", 0, minimum=0))
    else:
        category = Category(table.name, kind, probability, source, duration_alone_s=alone, demands=demands,
                            queries=_queries(table))
    table.finish()
    return category


def _mix(top: TomlTable, inputs: dict[str, Input]) -> Mix:
    categories = tuple(_category(t, inputs) for t in top.subtables("categories"))
    if not categories:
        raise top.error("categories", "a workload needs [categories.NAME] tables or a [trace]")
    total = sum(c.probability for c in categories)
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise top.error("categories", f"probabilities add up to {total:g}, not 1")
    return Mix(jobs=top.integer("jobs", minimum=1),
               arrival=top.text("arrival", "poisson", choices=ARRIVALS),
               mean_interarrival_s=top.number("mean_interarrival_s"),
               categories=categories)


def _trace(table: TomlTable) -> TraceSource:
    path = table.path.parent / table.text("path")
    if not path.is_file():
        raise table.error("path", f"trace file {path} does not exist")
    max_jobs = table.raw("max_jobs", None)
    source = TraceSource(path=path, time_scale=table.number("time_scale", 1.0),
                         task_mode=table.text("task_mode", "sleep", choices=TASK_MODES),
                         max_jobs=None if max_jobs is None else table.integer("max_jobs", minimum=1))
    table.finish()
    return source


def _text(path: Path) -> str:
    """The file's text; an undecodable byte is located by line (TOML is UTF-8)."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise WorkloadFileError(path, "", f"line {line}: not UTF-8 text (byte {raw[exc.start]:#04x}; "
                                          "a binary file?)") from None


def load_workload(path: Path) -> Workload:
    """Parse and validate a workload file; raises `WorkloadFileError` on any mistake."""
    try:
        data = tomltext.loads(_text(path))
    except OSError as exc:
        raise WorkloadFileError(path, "", f"cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadFileError(path, "", f"not valid TOML: {exc}") from None
    top = TomlTable(path, "", data)
    top.raw("description", "")
    inputs = {i.name: i for i in map(_input, top.subtables("inputs"))}
    trace_table = top.raw("trace", None)
    trace = None if trace_table is None else _trace(TomlTable(path, "trace", trace_table))
    workload = Workload(name=top.text("name", path.stem), path=path,
                        seed=top.integer("seed", minimum=0), inputs=tuple(inputs.values()),
                        mix=_mix(top, inputs) if trace is None else None, trace=trace)
    top.finish()
    return workload


def check_demands_fit(workload: Workload, capacity: Demand) -> None:
    """Every category's declared demands fit an executor of ``capacity`` (cores, GB), else
    WorkloadFileError naming the category's ``demand`` key (no task of it could ever run)."""
    for category in workload.mix.categories if workload.mix is not None else ():
        if category.demands is not None and not category.demands.fits(capacity):
            raise WorkloadFileError(workload.path, f"categories.{category.name}.demand",
                                    f"{category.demands.map} / {category.demands.reduce} (map / reduce; cores, GB) "
                                    f"fits no executor of {capacity[0]:g} cores and {capacity[1]:g} GB")


def at_interarrival(workload: Workload, seconds: float) -> Workload:
    """``workload`` with its mix's ``mean_interarrival_s`` set to ``seconds``: the same jobs in the same
    order (the seed's draws do not depend on the rate), arriving faster or slower. A trace's arrival
    times are its own: WorkloadFileError."""
    if workload.mix is None:
        raise WorkloadFileError(workload.path, "mean_interarrival_s",
                                "a trace workload's arrivals are the trace's; only a job mix has a rate to set")
    if not (math.isfinite(seconds) and seconds > 0):
        raise WorkloadFileError(workload.path, "mean_interarrival_s", f"{seconds}: must be a positive number")
    return dataclasses.replace(workload, mix=dataclasses.replace(workload.mix, mean_interarrival_s=seconds))
