"""The Spark a command submits with: pyspark's own installation (``bin/spark-submit``, ``jars/``)."""
from __future__ import annotations

from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def spark_submit() -> Path:
    return SPARK_HOME / "bin" / "spark-submit"
