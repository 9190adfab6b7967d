"""The WordCount Spark job, with Kairos' "extraFlops" knob.

Kairos stretched task runtimes by adding a parameterized number of floating-point operations to
every map and reduce record. Here `extra_flops` is the number of multiply-add iterations done per
input line (map side) and per distinct word (reduce side); the result is folded into nothing the
output depends on, so the counts stay exact whatever the knob.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from operator import add

from pyspark import RDD, SparkContext

MODULUS = 2**61 - 1


@dataclass(frozen=True)
class Digest:
    """What a WordCount's output is checked by: its distinct words, its total of counts and the
    sum of crc32(word) x count modulo a prime, which a wrong count of any one word changes."""

    distinct: int
    total: int
    checksum: int


def word_digest(word: str, count: int) -> tuple[int, int, int]:
    """One (word, count) pair's share of its output's `Digest`."""
    return 1, count, zlib.crc32(word.encode()) * count % MODULUS


def merge_digests(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return a[0] + b[0], a[1] + b[1], (a[2] + b[2]) % MODULUS


def burn(extra_flops: int) -> float:
    """`extra_flops` dependent multiply-adds; returns the value so the work cannot be skipped."""
    x = 1.0
    for _ in range(extra_flops):
        x = x * 1.000001 + 1e-9
    return x


def _map_line(line: str, extra_flops: int) -> list[tuple[str, int]]:
    burn(extra_flops)
    return [(word, 1) for word in line.split()]


def _reduce_output(pair: tuple[str, int], extra_flops: int) -> tuple[str, int]:
    burn(extra_flops)
    return pair


def input_lines(sc: SparkContext, input_path: str) -> RDD:
    """The text's lines in one partition (one map task) per input block.

    `textFile` asks for at least min(default parallelism, 2) partitions, which splits a
    one-block input into two map tasks; asking for one leaves the split at the block size."""
    return sc.textFile(input_path, minPartitions=1)


def word_counts(sc: SparkContext, input_path: str, reduces: int, extra_flops: int = 0) -> RDD:
    """(word, count) pairs of the text at `input_path`; one map task per input block."""
    return (input_lines(sc, input_path)
            .flatMap(lambda line: _map_line(line, extra_flops))
            .reduceByKey(add, numPartitions=reduces)
            .map(lambda pair: _reduce_output(pair, extra_flops)))


def run(sc: SparkContext, input_path: str, reduces: int, extra_flops: int = 0,
        output_path: str | None = None) -> Digest | None:
    """Run the job to completion: the counts' `Digest` (one Spark job, as a count's), or the
    counts written to `output_path` if one is given."""
    counts = word_counts(sc, input_path, reduces, extra_flops)
    if output_path is not None:
        counts.saveAsTextFile(output_path)
        return None
    return Digest(*counts.map(lambda pair: word_digest(*pair)).fold((0, 0, 0), merge_digests))
