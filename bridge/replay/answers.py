"""Checking every replayed job's answer: a TPC-H query's rows against DuckDB's over the same
Parquet files, a WordCount's `Digest` against a count of the local copy of its input.

A scheduler that places tasks must not change what a job computes. Answers are kept while the
replay runs and checked after its last job, so the reference engines do not compete for the
cores being measured. `answers.csv`: job_id, category, kind, answer (correct; wrong; missing: the
job did not succeed; none: a trace job, which computes nothing), detail (the first difference).
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from bridge.common import atomic
from bridge.replay.inputs import local_copy
from workloads.spec import Input, Submission, TpchJob, WordCountJob
from workloads.tpch.reference import check_answer, duckdb_answers
from workloads.wordcount.reference import reference_digest

VERDICTS = ("correct", "wrong", "missing", "none")


@dataclass(frozen=True)
class Verdict:
    job_id: int
    category: str
    kind: str
    answer: str  # one of VERDICTS
    detail: str = ""


@cache
def _tpch_reference(data: Path, query: int) -> list[tuple]:
    return duckdb_answers(data, (query,))[query]


@cache
def _wordcount_reference(path: Path) -> Any:
    return reference_digest(path)


class AnswerBook:
    """The answers of one replay's jobs (kept from the replay's threads), checked at its end."""

    def __init__(self, inputs: Iterable[Input], local_root: Path | None = None) -> None:
        self._inputs = {spec.name: spec for spec in inputs}
        self._local_root = local_root
        self._answers: dict[int, Any] = {}
        self._lock = threading.Lock()

    def keep(self, job_id: int, answer: Any) -> None:
        with self._lock:
            self._answers[job_id] = answer

    def check(self, submissions: Iterable[Submission], succeeded: Mapping[int, bool]) -> list[Verdict]:
        """Each submission's verdict, in order."""
        return [self._verdict(s, succeeded.get(s.job_id, False)) for s in submissions]

    def _verdict(self, submission: Submission, succeeded: bool) -> Verdict:
        params = submission.params
        base = (submission.job_id, submission.category, submission.kind)
        if not isinstance(params, (TpchJob, WordCountJob)):
            return Verdict(*base, "none")
        if not succeeded or submission.job_id not in self._answers:
            return Verdict(*base, "missing", "the job did not succeed" if not succeeded else "no answer kept")
        local = local_copy(self._inputs[params.input], self._local_root)
        answer = self._answers[submission.job_id]
        if isinstance(params, TpchJob):
            comparison = check_answer(params.query, answer, _tpch_reference(local, params.query))
            return Verdict(*base, "correct" if comparison.equal else "wrong",
                           "" if comparison.equal else f"query {params.query}: {comparison.detail}")
        expected = _wordcount_reference(local)
        return Verdict(*base, "correct" if answer == expected else "wrong",
                       "" if answer == expected else f"{answer} != the reference's {expected}")


def write(path: Path, verdicts: list[Verdict]) -> dict[str, int]:
    """`answers.csv`, atomically; the count of each verdict (for meta.json)."""
    frame = pd.DataFrame([asdict(v) for v in verdicts], columns=list(Verdict.__dataclass_fields__))
    atomic.write_text(path, frame.to_csv(index=False))
    return {verdict: sum(v.answer == verdict for v in verdicts) for verdict in VERDICTS}


def summary(counts: Mapping[str, int], verdicts: list[Verdict]) -> str:
    """One line for the replay's output; the wrong ones named."""
    checked = counts["correct"] + counts["wrong"]
    line = f"replay: answers checked: {counts['correct']} of {checked} correct"
    if counts["missing"]:
        line += f", {counts['missing']} job(s) without an answer (not succeeded)"
    wrong = [v for v in verdicts if v.answer == "wrong"]
    if wrong:
        line += "; WRONG: " + "; ".join(f"job {v.job_id} ({v.detail})" for v in wrong[:5])
    return line + " (answers.csv)"
