"""Driver for `spark-submit`: WordCount from one HDFS path to another (workloads.wordcount.job)."""
import sys

from pyspark import SparkContext

from workloads.wordcount.job import run

if __name__ == "__main__":
    input_path, output_path = sys.argv[1:3]
    sc = SparkContext(appName="schedbridge-test-wordcount")
    try:
        run(sc, input_path, reduces=2, output_path=output_path)
    finally:
        sc.stop()
