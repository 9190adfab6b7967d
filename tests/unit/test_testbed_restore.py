"""`schedbridge testbed restore`: the NodeManagers' vcores from the record a killed replay left."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.apps import testbed_cli as cli
from bridge.testbed.layout import default_layout
from tests.unit.live_fakes import FakeRM


class DownRM(FakeRM):
    def update_node_resource(self, node_id: str, *, vcores: int, memory_mb: int,
                             overcommit_timeout_s: int = -1) -> dict:
        raise ConnectionError("RM down")


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCHEDBRIDGE_TESTBED", str(tmp_path))
    return default_layout().vcores_record


def run(monkeypatch: pytest.MonkeyPatch, rm: FakeRM) -> tuple[int, str]:
    monkeypatch.setattr(cli, "ResourceManagerClient", lambda *args, **kwargs: rm)
    result = CliRunner().invoke(cli.testbed, ["restore"])
    return result.exit_code, result.output


def test_the_record_lives_beside_the_testbed_not_in_a_run(record: Path, tmp_path: Path) -> None:
    assert record.parent == tmp_path


def test_restore_puts_back_the_recorded_vcores_and_drops_the_record(record: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    record.write_text(json.dumps({"n1": [4, 4096], "n2": [4, 4096]}))
    rm = FakeRM({"n1": (5, 4096), "n2": (5, 4096)})
    code, output = run(monkeypatch, rm)
    assert code == 0 and output == "n1: 4 vcores, n2: 4 vcores (restored)\n"
    assert rm.capacity == {"n1": (4, 4096), "n2": (4, 4096)} and not record.exists()


def test_nothing_to_restore_is_said_and_is_not_an_error(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = run(monkeypatch, FakeRM({"n1": (4, 4096)}))
    assert code == 0 and output.startswith("nothing to restore: no vcores record at ")


def test_a_damaged_record_is_one_line_naming_it(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record.write_text("[1, 2")
    code, output = run(monkeypatch, FakeRM({"n1": (5, 4096)}))
    assert code == 1 and str(record) in output and "Traceback" not in output and len(output.splitlines()) == 1


def test_an_unreachable_rm_keeps_the_record_for_the_next_try(record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record.write_text(json.dumps({"n1": [4, 4096]}))
    code, output = run(monkeypatch, DownRM({"n1": (5, 4096)}))
    assert code == 1 and "could not restore n1" in output and record.exists()
    assert "Traceback" not in output
