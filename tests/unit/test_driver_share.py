"""The testbed's live driver runs in a session of its own with a raised CPU weight (autogroup)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bridge.testbed.spark import DRIVER_NICE, favour_driver


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="this kernel has no autogroups")
def test_a_driver_started_in_its_own_session_gets_the_raised_weight_and_only_it() -> None:
    mine = Path("/proc/self/autogroup").read_text()
    child = subprocess.Popen(["sleep", "5"], start_new_session=True)
    try:
        said = favour_driver(child.pid)
        shown = Path(f"/proc/{child.pid}/autogroup").read_text()
        if os.geteuid() == 0:
            assert said.startswith(f"driver's session at autogroup nice {DRIVER_NICE}")
            assert shown.split()[-1] == str(DRIVER_NICE)
        else:
            assert "needs root" in said and shown.split()[-1] == "0"
        assert Path("/proc/self/autogroup").read_text() == mine   # the caller's session is untouched
    finally:
        child.kill()
        child.wait()


def test_a_driver_that_has_ended_is_said() -> None:
    assert "has ended" in favour_driver(2**22 + 1)
