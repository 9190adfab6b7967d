"""`python -m bridge.testbed.spark_scripts`: the virtualenv's `spark-submit` (and pyspark's other
launch scripts) work without the virtualenv on PATH. `make setup` runs it after installing pyspark.

The cause: pip puts pyspark's shell scripts in the virtualenv's `bin/`. Unless SPARK_HOME is set,
each sources `find-spark-home`, which runs `find_spark_home.py` with
`${PYSPARK_DRIVER_PYTHON:-${PYSPARK_PYTHON:-python3}}`: the first `python3` on PATH. Outside an
activated virtualenv that interpreter has no pyspark, so no SPARK_HOME is found and
`spark-submit` runs `/bin/spark-class` ("No such file or directory").

The fix rewrites that one default, `python3`, to this virtualenv's Python: the interpreter whose
site-packages hold this pyspark (pip already gave `find_spark_home.py` that shebang). SPARK_HOME,
PYSPARK_DRIVER_PYTHON and PYSPARK_PYTHON, when set, still take precedence as upstream intends,
and every script that sources `find-spark-home` (spark-submit, pyspark, spark-shell, spark-sql,
spark-class) is fixed at once. A wrapper per script, or SPARK_HOME exported by an activate
script, would not be used by someone who runs `.venv/bin/spark-submit` directly.
"""
from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

UPSTREAM = 'PYSPARK_DRIVER_PYTHON="${PYSPARK_PYTHON:-"python3"}"'


def pinned(python: Path) -> str:
    """`UPSTREAM` with `python` as the default interpreter."""
    return UPSTREAM.replace('"python3"', f'"{python}"')


def pin_python(script: Path, python: Path) -> bool:
    """Make `script` (pyspark's `find-spark-home`) default to `python`; False if it already does.

    A script without the upstream line exactly once is refused, naming it, rather than guessed at:
    a newer pyspark may have fixed or moved it."""
    text = script.read_text()
    if pinned(python) in text:
        return False
    if text.count(UPSTREAM) != 1:
        raise ValueError(f"{script}: expected the line {UPSTREAM} once; pyspark's find-spark-home "
                         "changed, so bridge/testbed/spark_scripts.py needs a look")
    script.write_text(text.replace(UPSTREAM, pinned(python)))
    return True


def main() -> None:
    """Pin the running virtualenv's `find-spark-home` to the running Python."""
    script = Path(sysconfig.get_path("scripts")) / "find-spark-home"
    try:
        changed = pin_python(script, Path(sys.executable))
    except (OSError, ValueError) as exc:
        sys.exit(f"spark_scripts: {exc}")
    print(f"{script}: {'now finds' if changed else 'already finds'} SPARK_HOME with {sys.executable}")


if __name__ == "__main__":
    main()
