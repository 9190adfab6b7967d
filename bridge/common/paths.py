"""Where schedbridge keeps its caches and state.

A source checkout keeps everything beside the code (`.cache/`, `.testbed/`), so a clone is
self-contained and `make clean` can remove it; an installed package falls back to
`~/.schedbridge`. `SCHEDBRIDGE_HOME` overrides both.
"""
from __future__ import annotations

import os
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parents[2]  # bridge/common/paths.py -> the checkout


def project_home() -> Path:
    """The directory that holds `.cache/` and `.testbed/`."""
    override = os.environ.get("SCHEDBRIDGE_HOME")
    if override:
        return Path(override).resolve()
    if (_SOURCE_ROOT / "pyproject.toml").is_file():
        return _SOURCE_ROOT
    return Path.home() / ".schedbridge"


def cache_dir() -> Path:
    """Downloaded and built artifacts (Hadoop jars, the Spark plugin jar)."""
    return project_home() / ".cache"


def hadoop_lib_dir() -> Path:
    """The Hadoop 3.5.0 server jars resolved by `testbed/pom.xml`."""
    return Path(os.environ.get("SCHEDBRIDGE_HADOOP_LIB", cache_dir() / "hadoop" / "lib"))


def hadoop_apps_dir() -> Path:
    """Example YARN applications (distributed shell) resolved by `testbed/pom.xml`."""
    return hadoop_lib_dir().parent / "apps"


def testbed_home() -> Path:
    """State of the local testbed: rendered configuration, data, logs and pid files."""
    return Path(os.environ.get("SCHEDBRIDGE_TESTBED", project_home() / ".testbed"))


def testbed_base_port() -> int:
    """Shift of every testbed port from the defaults (`SCHEDBRIDGE_TESTBED_BASE_PORT`), so two
    testbeds (say, a developer's and a fresh clone's tests) can run side by side."""
    value = os.environ.get("SCHEDBRIDGE_TESTBED_BASE_PORT", "0")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"SCHEDBRIDGE_TESTBED_BASE_PORT must be an integer, got {value!r}") from None
