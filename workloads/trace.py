"""Trace files -> immutable :class:`~workloads.model.Job` specs.

Two formats, chosen by file extension:

* **Thesis format** (any extension but ``.jsonl``): one job per line,
  ``submit_time n_tasks mean_task_duration d1 ... dn`` (whitespace separated, seconds).
  Blank lines and lines starting with ``#`` are skipped. Job ids are 0, 1, 2, ... in file
  order. ``mean_task_duration`` becomes the job's scheduler-visible ``estimate``. Unlike the
  authors' simulator, durations are not truncated to integers and jobs with equal submit times
  are not nudged apart (ties are broken by file order).
* **Rich format** (``.jsonl``): one JSON object per line with ``submit``, ``durations`` and
  optionally ``estimate``, ``demands``, ``parents``, ``stage_of``, ``stage_parents``, ``name``,
  ``id``.

A leading comment ``# reporting_cutoff=SECONDS ...`` (``trace generate`` writes its kind's) states
the trace's short/long reporting cutoff (:func:`stated_cutoff`, used by
``bridge.common.metrics.reporting_cutoff``); one ``# cluster=NODESxSLOTS ...`` (``trace import``
writes the cluster its jobs ran on) the cluster ``simulate`` and ``rank`` play it on when given no
``--nodes`` (:func:`stated_cluster`). The authors' simulator reads no comments: strip the lines
(``grep -v '^#'``) for it.

Every error is a :class:`TraceError` naming the file, the line and the field. A time (a submission,
a duration, an estimate) is at most `bridge.common.magnitudes.MAX_TIME_S`: a job submitted at
1e300 s would simulate to a completion of 0.0, its time lost in float sums.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from bridge.common import atomic
from bridge.common.magnitudes import MAX_TIME_S
from workloads.model import Job, Vector, WorkloadError


class TraceError(ValueError):
    """A malformed trace line: names the file, the 1-based line number and the field."""

    def __init__(self, path: str | os.PathLike[str], line: int, field: str, message: str) -> None:
        super().__init__(f"{path}:{line}: field '{field}': {message}")
        self.path = str(path)
        self.line = line
        self.field = field


def _num(path: Path, lineno: int, field: str, text: str, *, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise TraceError(path, lineno, field, f"expected {kind}, got {text!r}") from None
    if not math.isfinite(value):
        raise TraceError(path, lineno, field, f"expected a finite number, got {text!r}")
    if value < 0:
        raise TraceError(path, lineno, field, f"must be >= 0, got {text!r}")
    if not integer and value > MAX_TIME_S:
        raise TraceError(path, lineno, field, f"a time of at most {MAX_TIME_S:g} s, got {text[:40]!r}")
    return value


SHARED_DURATIONS = 1 << 16
"""At most this many distinct duration texts of a thesis-format trace are remembered to share
one float object each (:func:`iter_trace`)."""


def parse_thesis_line(path: Path, lineno: int, line: str, job_id: int,
                      shared: dict[str, float] | None = None, demand: Vector | None = None) -> Job:
    """One line of a thesis-format trace as a job (every task demanding ``demand``, if given). With
    ``shared`` (duration text -> float), a duration written as before (the same text) is the same
    float object: a trace whose durations repeat, as whole seconds do, then holds 8 bytes per task
    instead of 32."""
    parts = line.split()
    if len(parts) < 3:
        names = ("submit_time", "n_tasks", "mean_task_duration")
        raise TraceError(path, lineno, names[len(parts)], "missing (expected "
                         "'submit_time n_tasks mean_task_duration d1 ... dn')")
    submit = _num(path, lineno, "submit_time", parts[0])
    n = int(_num(path, lineno, "n_tasks", parts[1], integer=True))
    mean = _num(path, lineno, "mean_task_duration", parts[2])
    if n < 1:
        raise TraceError(path, lineno, "n_tasks", f"must be >= 1, got {parts[1]!r}")
    if len(parts) - 3 != n:
        raise TraceError(path, lineno, f"d{min(n, len(parts) - 3) + 1}",
                         f"n_tasks is {n} but the line has {len(parts) - 3} task durations")
    texts = parts[3:]
    durations = _seen(texts, shared)
    if durations is None:
        try:
            durations = tuple(map(float, texts))
        except ValueError:
            durations = ()
        if not durations or min(durations) < 0 or max(durations) > MAX_TIME_S or not math.isfinite(sum(durations)):
            for i, text in enumerate(texts, start=1):  # slow path: find the culprit
                _num(path, lineno, f"d{i}", text)
        if shared is not None:  # keyed by text, so "-0" stays -0.0; once full, only looked up
            durations = tuple(map(shared.setdefault if len(shared) < SHARED_DURATIONS else shared.get,
                                  texts, durations))
    try:
        return Job(job_id, submit, durations, mean, None if demand is None else (demand,) * n)
    except WorkloadError as e:  # pragma: no cover - fields already checked above
        raise TraceError(path, lineno, "job", str(e)) from None


def _seen(texts: list[str], shared: dict[str, float] | None) -> tuple[float, ...] | None:
    """The durations of ``texts`` if every one was read before (``shared`` holds only checked
    values): a trace in whole seconds repeats its texts, and a lookup is cheaper than a parse."""
    if not shared:
        return None
    try:
        return tuple(map(shared.__getitem__, texts))
    except KeyError:
        return None


def _json_job(path: Path, lineno: int, line: str, job_id: int, shared: dict[str, float] | None = None,
              demand: Vector | None = None) -> Job:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise TraceError(path, lineno, "json", f"invalid JSON: {e.msg} at column {e.colno}") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise TraceError(path, lineno, "json", f"invalid JSON: {e}") from None
    except RecursionError:
        raise TraceError(path, lineno, "json", "invalid JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise TraceError(path, lineno, "json", "expected a JSON object per line")
    known = {"id", "submit", "durations", "estimate", "demands", "parents", "stage_of",
             "stage_parents", "name"}
    extra = sorted(set(obj) - known)
    if extra:
        raise TraceError(path, lineno, extra[0], f"unknown field; known fields: {sorted(known)}")
    for req in ("submit", "durations"):
        if req not in obj:
            raise TraceError(path, lineno, req, "missing")
    submit = _num(path, lineno, "submit", str(obj["submit"]))
    durs = obj["durations"]
    if not isinstance(durs, list) or not durs:
        raise TraceError(path, lineno, "durations", "expected a non-empty list of numbers")
    durations = tuple(_num(path, lineno, f"durations[{i}]", str(d)) for i, d in enumerate(durs))

    def tuples(field: str, inner: type) -> tuple | None:
        v = obj.get(field)
        if v is None:
            return None
        if not isinstance(v, list):
            raise TraceError(path, lineno, field, "expected a list")
        try:
            if inner is tuple:
                return tuple(tuple(inner_v) for inner_v in v)
            return tuple(inner(x) for x in v)
        except (TypeError, ValueError, OverflowError):
            raise TraceError(path, lineno, field, "malformed entries") from None

    demands = tuples("demands", tuple)
    if demands is not None:
        try:
            demands = tuple(tuple(float(x) for x in d) for d in demands)
        except (TypeError, ValueError, OverflowError):
            raise TraceError(path, lineno, "demands", "expected lists of numbers") from None
    elif demand is not None:
        demands = (demand,) * len(durations)
    parents = tuples("parents", tuple)
    stage_of = tuples("stage_of", int)
    stage_parents = tuples("stage_parents", tuple)
    estimate = obj.get("estimate", -1.0)
    if estimate != -1.0:
        estimate = _num(path, lineno, "estimate", str(estimate))
    try:
        return Job(int(obj.get("id", job_id)), submit, durations, float(estimate), demands, parents,
                   stage_of, stage_parents, str(obj.get("name", "")))
    except (WorkloadError, TypeError, ValueError, OverflowError) as e:  # int(1e400)
        raise TraceError(path, lineno, "job", str(e)) from None


def _decode(path: Path, lineno: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceError(path, lineno, "file", f"not UTF-8 text (byte {raw[e.start]:#04x} at column "
                                               f"{e.start + 1}; a binary file?)") from None


def iter_trace(path: str | os.PathLike[str], demand: Vector | None = None) -> Iterator[Job]:
    """Yield the jobs of a trace file in file order (see the module docstring for formats); with
    ``demand``, every task whose line gives no demand vector demands it."""
    p = Path(path)
    parse = _json_job if p.suffix == ".jsonl" else parse_thesis_line
    job_id = 0
    last_submit = -math.inf
    shared: dict[str, float] = {}  # see parse_thesis_line; dropped with the generator
    for lineno, s in _lines(p):
        if not s or s.startswith("#"):
            continue
        job = parse(p, lineno, s, job_id, shared, demand)
        if job.submit < last_submit:
            raise TraceError(p, lineno, "submit_time" if parse is parse_thesis_line else "submit",
                             f"jobs must be in submission order ({job.submit} < {last_submit})")
        last_submit = job.submit
        job_id += 1
        yield job


def _lines(p: Path) -> Iterator[tuple[int, str]]:
    """(line number, stripped text) of each line of ``p``, decoded one by one so that an
    undecodable byte is located; TraceError if the file cannot be opened."""
    try:
        fh = open(p, "rb")
    except OSError as e:
        raise TraceError(p, 0, "file", f"cannot open: {e.strerror}") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            yield lineno, _decode(p, lineno, raw).strip()


CUTOFF_KEY = "reporting_cutoff"


def cutoff_comment(cutoff: float, why: str) -> str:
    """The header line stating a trace's reporting cutoff (no newline)."""
    return f"# {CUTOFF_KEY}={cutoff!r} {why}".rstrip()


def stated_cutoff(path: str | os.PathLike[str]) -> float | None:
    """The reporting cutoff a trace's leading comments state (:func:`cutoff_comment`), or None."""
    found = _stated(Path(path), CUTOFF_KEY)
    return None if found is None else _num(Path(path), found[0], CUTOFF_KEY, found[1])


CLUSTER_KEY = "cluster"


def cluster_comment(nodes: int, slots: int, why: str) -> str:
    """The header line stating the cluster a trace's jobs ran on, ``nodes`` of ``slots`` (no newline)."""
    return f"# {CLUSTER_KEY}={nodes}x{slots} {why}".rstrip()


def stated_cluster(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(nodes, slots per node) a trace's leading comments state (:func:`cluster_comment`), or None."""
    p = Path(path)
    found = _stated(p, CLUSTER_KEY)
    if found is None:
        return None
    lineno, value = found
    shape = re.fullmatch(r"([1-9]\d{0,8})x([1-9]\d{0,8})", value, re.ASCII)
    if shape is None:
        raise TraceError(p, lineno, CLUSTER_KEY, f"expected NODESxSLOTS (two positive integers), got {value[:40]!r}")
    return int(shape[1]), int(shape[2])


def _stated(p: Path, key: str) -> tuple[int, str] | None:
    """(line number, value) of the leading comment ``# key=value ...``, or None. Only the comments
    and blank lines before the first job are read."""
    for lineno, s in _lines(p):
        if s and not s.startswith("#"):
            return None
        words = s.lstrip("#").split()
        if words and words[0].startswith(f"{key}="):
            return lineno, words[0].partition("=")[2]
    return None


def read_trace(path: str | os.PathLike[str], demand: Vector | None = None) -> list[Job]:
    """All jobs of a trace file (see :func:`iter_trace` for ``demand``). Raises TraceError on the
    first malformed line."""
    jobs = list(iter_trace(path, demand))
    if not jobs:
        raise TraceError(path, 0, "file", "trace contains no jobs")
    return jobs


def write_trace(path: str | os.PathLike[str], jobs: list[Job], header: Sequence[str] = ()) -> None:
    """Write jobs in the thesis format (``repr`` of floats, so a round trip is exact), after the
    ``header`` comment lines (:func:`cutoff_comment`, :func:`cluster_comment`)."""
    p = Path(path)
    with atomic.replacing(p) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in header)
        for j in jobs:
            fh.write(f"{j.submit!r} {j.n_tasks} {j.estimate!r} {' '.join(map(repr, j.durations))}\n")
