"""Entry point of a per-job Spark application: `spark-submit child.py JOB_JSON INPUTS_JSON`.

Exits 0 when the job succeeded; a failure propagates as a non-zero exit with its message on
stderr, which the replay records.
"""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

from bridge.replay.jobs import run_job
from workloads.spec import submission_from_json


def main(argv: list[str]) -> None:
    submission, inputs = submission_from_json(argv[1]), json.loads(argv[2])
    spark = SparkSession.builder.getOrCreate()
    try:
        run_job(spark, submission, inputs)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv)
