"""`spark-submit` driver: WordCount from an input path to an output path.

    spark-submit --master yarn workloads/wordcount/submit.py IN OUT [--reduces N] [--extra-flops K]
"""
from __future__ import annotations

import argparse

from pyspark import SparkContext

from workloads.wordcount.job import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input_path")
    parser.add_argument("output_path")
    parser.add_argument("--reduces", type=int, default=2)
    parser.add_argument("--extra-flops", type=int, default=0)
    args = parser.parse_args()
    sc = SparkContext(appName="schedbridge-wordcount")
    try:
        run(sc, args.input_path, reduces=args.reduces, extra_flops=args.extra_flops,
            output_path=args.output_path)
    finally:
        sc.stop()


if __name__ == "__main__":
    main()
