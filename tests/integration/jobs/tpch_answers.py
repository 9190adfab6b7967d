"""`spark-submit tpch_answers.py DATA_DIR OUT_JSON`: all 22 TPC-H answers from Spark, as JSON.

Decimals become floats and dates ISO strings, the forms `workloads.tpch.compare` compares.
"""
import datetime as dt
import json
import sys
from decimal import Decimal

from pyspark.sql import SparkSession

from workloads.tpch import QUERY_NUMBERS
from workloads.tpch.spark import register_tables, run_query


def plain(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


if __name__ == "__main__":
    data_dir, out_path = sys.argv[1:3]
    spark = SparkSession.builder.appName("schedbridge-test-tpch").getOrCreate()
    try:
        register_tables(spark, data_dir)
        answers = {n: [[plain(v) for v in row] for row in run_query(spark, n)] for n in QUERY_NUMBERS}
    finally:
        spark.stop()
    with open(out_path, "w") as out:
        json.dump(answers, out)
