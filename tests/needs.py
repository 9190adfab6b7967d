"""One rule for tests that need what not every machine has (root, a writable cgroup v1 cpu
controller): they skip, naming what they need and why, and in CI's strict mode a skip fails the
run (tests/conftest.py). Never `pytest.fail` for a missing privilege, never a silent skip."""
from __future__ import annotations

import os

import pytest

from bridge.agent.trial import CGROUP_ROOT


def root(why: str) -> None:
    """Skip unless root; ``why`` says what needs it (e.g. "node agents write cgroups")."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root: {why}")


def cgroup_v1_cpu(why: str) -> None:
    """Skip unless root with a writable cgroup v1 cpu controller (what the node agent resizes)."""
    root(why)
    if not (CGROUP_ROOT / "cpu" / "cpu.cfs_quota_us").is_file():
        pytest.skip(f"needs a writable cgroup v1 cpu controller at {CGROUP_ROOT / 'cpu'}: {why}")
