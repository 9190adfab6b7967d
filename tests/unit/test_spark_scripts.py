"""pyspark's `find-spark-home`, pinned to the virtualenv's Python, finds SPARK_HOME without the
virtualenv on PATH; unpinned, it does not (the failure `make setup` now prevents)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.target.spark import SPARK_HOME
from bridge.testbed.spark_scripts import UPSTREAM, pin_python, pinned

PATH_WITHOUT_VENV = "/usr/bin:/bin"


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """pyspark's pristine `find-spark-home` and `find_spark_home.py`, as pip lays them out in bin/,
    beside a script that sources the first as spark-submit does and prints SPARK_HOME."""
    shutil.copy(SPARK_HOME / "bin" / "find-spark-home", tmp_path)
    shutil.copy(SPARK_HOME / "find_spark_home.py", tmp_path)
    probe = tmp_path / "probe"
    probe.write_text('#!/usr/bin/env bash\nsource "$(dirname "$0")"/find-spark-home\necho "$SPARK_HOME"\n')
    probe.chmod(0o755)
    return tmp_path


def _spark_home_found(bin_dir: Path) -> str:
    done = subprocess.run([str(bin_dir / "probe")], env={"PATH": PATH_WITHOUT_VENV},
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def test_unpinned_script_finds_no_spark_home_without_the_venv_on_path(bin_dir: Path) -> None:
    assert _spark_home_found(bin_dir) != str(SPARK_HOME)


def test_pinned_script_finds_pysparks_home_without_the_venv_on_path(bin_dir: Path) -> None:
    assert pin_python(bin_dir / "find-spark-home", Path(sys.executable))
    assert _spark_home_found(bin_dir) == str(SPARK_HOME)


def test_pinning_is_idempotent(bin_dir: Path) -> None:
    script = bin_dir / "find-spark-home"
    pin_python(script, Path(sys.executable))
    before = script.read_text()
    assert not pin_python(script, Path(sys.executable))
    assert script.read_text() == before and before.count(pinned(Path(sys.executable))) == 1
    assert UPSTREAM not in before


def test_a_changed_upstream_script_is_refused_by_name(tmp_path: Path) -> None:
    script = tmp_path / "find-spark-home"
    script.write_text("#!/usr/bin/env bash\nexport SPARK_HOME=/elsewhere\n")
    with pytest.raises(ValueError, match=r"find-spark-home: expected the line"):
        pin_python(script, Path(sys.executable))
