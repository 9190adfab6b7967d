"""Entry point of a per-job Spark application:
`spark-submit child.py POLICY APP_NAME JOB_JSON INPUTS_JSON GROUP ANSWER_FILE`.

Exits 0 when the job succeeded, its answer pickled to ANSWER_FILE for the replay to check; a
failure propagates as a non-zero exit with its message on stderr, which the replay records.
"""
from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

from bridge.common import atomic
from bridge.replay.jobs import run_job
from bridge.replay.policy import open_session
from workloads.spec import submission_from_json


def main(argv: list[str]) -> None:
    policy, app_name = argv[1], argv[2]
    submission, inputs, group = submission_from_json(argv[3]), json.loads(argv[4]), argv[5]
    spark = open_session(policy, {}, app_name)
    try:
        answer = run_job(spark, submission, inputs, group)
        atomic.write_bytes(Path(argv[6]), pickle.dumps(answer))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv)
