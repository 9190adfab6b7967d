"""What an import read: jobs at absolute times, what was left out and why, and the trace written
from them in the project's formats (`workloads.trace`: the thesis text format, or the rich
``.jsonl`` format that keeps each job's stages and their parents)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workloads.model import Job
from workloads.multires.jsonl import write_jsonl
from workloads.trace import write_trace

FORMATS = ("thesis", "jsonl")
EXAMPLES = 3  # examples kept per reason for the summary


@dataclass(frozen=True)
class ImportedJob:
    """One job as the history tells it: submitted at ``submit_ms`` (ms since the epoch), its
    tasks' durations (s), and optionally each task's stage and each stage's parent stages."""

    submit_ms: float
    durations: tuple[float, ...]
    name: str
    stage_of: tuple[int, ...] | None = None
    stage_parents: tuple[tuple[int, ...], ...] | None = None


@dataclass
class Skipped:
    """What was read and left out, counted by reason, with the first few examples of each."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, example: str = "") -> None:
        self.counts[reason] += 1
        kept = self.examples.setdefault(reason, [])
        if example and len(kept) < EXAMPLES:
            kept.append(example)

    def lines(self) -> list[str]:
        """One line per reason: the count, the reason, the examples (and how many more)."""
        out = []
        for reason, n in self.counts.items():
            shown = self.examples.get(reason, [])
            more = f"; {n - len(shown)} more" if shown and n > len(shown) else ""
            out.append(f"  {n} {reason}" + (f" ({'; '.join(shown)}{more})" if shown else ""))
        return out


def trace_jobs(imported: list[ImportedJob], *, stages: bool) -> list[Job]:
    """The jobs in submission order, numbered from 0, submitted in seconds after the first; with
    ``stages`` each keeps its stage DAG (the rich format), else it is a bag of tasks."""
    ordered = sorted(imported, key=lambda j: j.submit_ms)
    first = ordered[0].submit_ms if ordered else 0.0
    return [Job(i, (j.submit_ms - first) / 1000.0, j.durations,
                stage_of=j.stage_of if stages else None, stage_parents=j.stage_parents if stages else None,
                name=j.name if stages else "")
            for i, j in enumerate(ordered)]


def format_of(out: Path, given: str | None) -> str:
    """The format to write: ``given``, else by the file's extension as every reader picks it
    (``.jsonl``: the rich format; anything else: the thesis format). A format the extension
    contradicts is refused, since the simulator would read the file the other way."""
    by_name = "jsonl" if out.suffix == ".jsonl" else "thesis"
    if given is not None and given != by_name:
        want = "a .jsonl name" if given == "jsonl" else "a name not ending in .jsonl"
        raise ValueError(f"--format {given} needs {want} (traces are read by their extension), got {out.name}")
    return by_name


def write(jobs: list[Job], out: Path, fmt: str, header: Sequence[str] = ()) -> None:
    """Write atomically in ``fmt`` after the ``header`` comments (a failure leaves no partial file)."""
    if fmt == "jsonl":
        write_jsonl(out, jobs, header)
    else:
        write_trace(out, jobs, header)
