"""A replay's answer check: each job's answer against its reference (DuckDB for a TPC-H query,
a Python count of the local input for a WordCount), a wrong one named with its difference."""
from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pandas as pd

from bridge.replay import answers
from bridge.replay.answers import AnswerBook
from bridge.replay.inputs import local_tpch, local_wordcount
from workloads.spec import Submission, TasksJob, TpchInput, TpchJob, WordCountInput, WordCountJob
from workloads.tpch.reference import duckdb_answers
from workloads.wordcount.job import Digest
from workloads.wordcount.reference import reference_digest

INPUTS = (TpchInput("db", 0.01), WordCountInput("wc", 0.05, 1))
JOBS = (Submission(0, 0.0, "q", TpchJob("db", 6)), Submission(1, 1.0, "q", TpchJob("db", 6)),
        Submission(2, 2.0, "wc", WordCountJob("wc", 2)), Submission(3, 3.0, "wc", WordCountJob("wc", 2)),
        Submission(4, 4.0, "wc", WordCountJob("wc", 2)), Submission(5, 5.0, "sleep", TasksJob((1.0,))))


def test_each_answer_is_checked_and_a_wrong_one_is_named(tmp_path: Path) -> None:
    book = AnswerBook(INPUTS, tmp_path)
    digest = reference_digest(local_wordcount(INPUTS[1], tmp_path))
    (revenue,), = duckdb_answers(local_tpch(0.01, tmp_path), (6,))[6]
    book.keep(0, [(revenue,)])                                     # Spark's decimal, as DuckDB's
    book.keep(1, [(revenue + Decimal("100"),)])           # past the tolerance (1e-6 relative)
    book.keep(2, digest)
    book.keep(3, replace(digest, checksum=digest.checksum + 1))   # one word's count off
    verdicts = book.check(JOBS, {0: True, 1: True, 2: True, 3: True, 4: False, 5: True})
    assert [v.answer for v in verdicts] == ["correct", "wrong", "correct", "wrong", "missing", "none"]
    assert verdicts[1].detail.startswith("query 6: row 0 column 0")
    assert str(digest.checksum) in verdicts[3].detail
    counts = answers.write(tmp_path / "answers.csv", verdicts)
    assert counts == {"correct": 2, "wrong": 2, "missing": 1, "none": 1}
    assert pd.read_csv(tmp_path / "answers.csv")["answer"].tolist() == [v.answer for v in verdicts]
    line = answers.summary(counts, verdicts)
    assert line.startswith("replay: answers checked: 2 of 4 correct, 1 job(s) without an answer")
    assert "WRONG: job 1 (query 6:" in line and "job 3 (" in line


def test_the_reference_digest_counts_every_word(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text("a bb a\nccc a\n")
    digest = reference_digest(text)
    assert isinstance(digest, Digest)
    assert (digest.distinct, digest.total) == (3, 5)
    other = tmp_path / "u.txt"
    other.write_text("a bb a\nccc bb\n")   # same words and total, one count moved
    assert reference_digest(other).checksum != digest.checksum
