"""WordCount inputs: files of random 100-character lines, as in the Kairos experiments.

Lines are drawn from lowercase letters and spaces (about one space in six), so each line holds
a handful of words and short words repeat across lines, which gives the reduce side real work.
The same (size, seed) always gives the same bytes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bridge.common import atomic

LINE_CHARS = 100
_ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz     ", dtype=np.uint8)
_LINES_PER_CHUNK = 10_000


def _chunk(rng: np.random.Generator, n_lines: int) -> bytes:
    """`n_lines` random lines, newline-terminated."""
    body = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(n_lines, LINE_CHARS))]
    newline = np.full((n_lines, 1), ord("\n"), dtype=np.uint8)
    return np.hstack([body, newline]).tobytes()


def write_input(path: Path, size_bytes: int, seed: int) -> Path:
    """Write whole lines up to `size_bytes` (at least one line) to `path`, atomically."""
    if size_bytes <= 0:
        raise ValueError(f"input size must be positive, got {size_bytes}")
    rng = np.random.default_rng(seed)
    remaining = max(1, size_bytes // (LINE_CHARS + 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(path) as temp, temp.open("wb") as out:
        while remaining:
            n = min(remaining, _LINES_PER_CHUNK)
            out.write(_chunk(rng, n))
            remaining -= n
    return path
