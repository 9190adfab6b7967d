"""The WordCount Spark job, with Kairos' "extraFlops" knob.

Kairos stretched task runtimes by adding a parameterized number of floating-point operations to
every map and reduce record. Here `extra_flops` is the number of multiply-add iterations done per
input line (map side) and per distinct word (reduce side); the result is folded into nothing the
output depends on, so the counts stay exact whatever the knob.
"""
from __future__ import annotations

from operator import add

from pyspark import RDD, SparkContext


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
        output_path: str | None = None) -> None:
    """Run the job to completion, writing the counts to `output_path` if one is given."""
    counts = word_counts(sc, input_path, reduces, extra_flops)
    if output_path is None:
        counts.count()
    else:
        counts.saveAsTextFile(output_path)
