"""Entry point of a per-job Spark application:
`spark-submit child.py POLICY APP_NAME JOB_JSON INPUTS_JSON GROUP`.

Exits 0 when the job succeeded; a failure propagates as a non-zero exit with its message on
stderr, which the replay records.
"""
from __future__ import annotations

import json
import sys

from bridge.replay.jobs import run_job
from bridge.replay.policy import open_session
from workloads.spec import submission_from_json


def main(argv: list[str]) -> None:
    policy, app_name = argv[1], argv[2]
    submission, inputs, group = submission_from_json(argv[3]), json.loads(argv[4]), argv[5]
    spark = open_session(policy, {}, app_name)
    try:
        run_job(spark, submission, inputs, group)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv)
