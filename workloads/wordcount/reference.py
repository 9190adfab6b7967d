"""A WordCount's reference answer: the `Digest` of its input's words counted here, in Python,
from the local copy of the file the job read (words split as the job splits its lines)."""
from __future__ import annotations

from collections import Counter
from functools import reduce
from pathlib import Path

from workloads.wordcount.job import Digest, merge_digests, word_digest


def reference_digest(path: Path) -> Digest:
    """The digest of the word counts of the text at `path`."""
    counts = Counter(path.read_text().split())
    return Digest(*reduce(merge_digests, (word_digest(w, n) for w, n in counts.items()), (0, 0, 0)))
