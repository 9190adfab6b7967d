"""Hostile Spark event logs (issue 46, items 5-7): a decompression bomb, a part linked to a device,
and events of the wrong shape or of impossible magnitudes each end in one error naming the file and
the line, in every reader of `bridge.history` (its typed events, report, trace import,
the estimates' history, idle slots, the simulator's calibration), never a traceback, a
MemoryError or a silently wrong number."""
from __future__ import annotations

import json
import os
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.apps.report import idle_slots
from bridge.apps.report.cli import report
from bridge.apps.report.eventlog import load_event_log
from bridge.apps.report.run import ResultsError
from bridge.apps.simlive.calibration import CalibrationError, _read
from bridge.apps.traceimport.imported import Skipped
from bridge.apps.traceimport.spark import read_event_log
from bridge.cli import main
from bridge.history import logs
from bridge.history.logs import EventLogError, log_lines, read_events
from tests.unit.test_report_eventlog import APP, TWO_JOBS, application, lines
from tests.unit.test_report_inputs import assert_one_error_line

EVENTS = application(TWO_JOBS)
JOB_START, TASK_END, JOB_END = 3, 6, 10  # indexes in EVENTS of job 0's start, its first task's end, its end


def _with(index: int, change: Callable[[dict], str]) -> list[str]:
    """The log's lines with the event at ``index`` written by ``change``."""
    texts = lines(EVENTS).splitlines()
    texts[index] = change(EVENTS[index])
    return texts


def _set(**fields: object) -> Callable[[dict], str]:
    return lambda event: json.dumps({**event, **fields})


def _raw(key: str, text: str, inner: str | None = None) -> Callable[[dict], str]:
    """The event with ``key`` (of its ``inner`` object) written as the JSON text ``text``."""
    def change(event: dict) -> str:
        mark = "__hostile__"
        changed = {**event, inner: {**event[inner], key: mark}} if inner else {**event, key: mark}
        return json.dumps(changed).replace(f'"{mark}"', text)
    return change


HOSTILE = {  # name -> (event index, its hostile text, a fragment of the error)
    "job result not an object": (JOB_END, _set(**{"Job Result": "oops"}), "SparkListenerJobEnd"),
    "properties a list": (JOB_START, _set(Properties=[1, 2]), "SparkListenerJobStart"),
    "finish time of 400 digits": (TASK_END, _raw("Finish Time", "1" + "0" * 400, "Task Info"), "Finish Time"),
    "submission time 1e400": (JOB_START, _raw("Submission Time", "1e400"), "Submission Time"),
    "submission time 1e300": (JOB_START, _raw("Submission Time", "1e300"), "within [0, 1e+13] ms"),
    "negative launch time": (TASK_END, _raw("Launch Time", "-5", "Task Info"), "Launch Time"),
}


def _log(tmp_path: Path, texts: list[str]) -> Path:
    log = tmp_path / APP
    log.write_text("".join(f"{t}\n" for t in texts))
    return log


@pytest.mark.parametrize("name", HOSTILE)
def test_report_refuses_a_malformed_event_in_one_line_naming_file_and_line(tmp_path: Path, name: str) -> None:
    index, change, fragment = HOSTILE[name]
    log = _log(tmp_path, _with(index, change))
    assert_one_error_line(CliRunner().invoke(report, [str(log)]), f"{log} line {index + 1}", fragment)


@pytest.mark.parametrize("name", HOSTILE)
def test_estimates_build_refuses_a_malformed_event_in_one_line(tmp_path: Path, name: str) -> None:
    index, change, fragment = HOSTILE[name]
    log = _log(tmp_path, _with(index, change))
    result = CliRunner().invoke(main, ["estimates", "build", str(log), "--out", str(tmp_path / "e.json")])
    assert_one_error_line(result, f"{log} line {index + 1}", fragment)


@pytest.mark.parametrize("name", HOSTILE)
def test_the_other_readers_name_the_file_and_line_too(tmp_path: Path, name: str) -> None:
    index, change, fragment = HOSTILE[name]
    log = _log(tmp_path, _with(index, change))
    with pytest.raises(EventLogError, match=f"{APP} line {index + 1}: .*{re.escape(fragment)}"):
        list(read_events(log))
    skipped = Skipped()
    read_event_log(log, skipped)
    assert any(f"{APP} line {index + 1}: " in line and fragment in line for line in skipped.lines())


@pytest.mark.parametrize("index,change", [
    (TASK_END, _raw("Finish Time", "1" + "0" * 400, "Task Info")), (2, _raw("Timestamp", "1e400"))])
def test_idle_slots_names_the_file(tmp_path: Path, index: int, change: Callable[[dict], str]) -> None:
    log = _log(tmp_path, _with(index, change))
    with pytest.raises(idle_slots.EventLogError, match=f"{log}: malformed event .*not a time within"):
        idle_slots.read(log)


@pytest.mark.parametrize("index,change", [
    (1, _raw("Timestamp", "1" + "0" * 400)), (2, _raw("Timestamp", "1e400")), (JOB_START, _set(Properties=[1, 2]))])
def test_calibration_names_the_line(tmp_path: Path, index: int, change: Callable[[dict], str]) -> None:
    with pytest.raises(CalibrationError, match=f"{APP} line {index + 1}: "):
        _read(_log(tmp_path, _with(index, change)))


def test_trace_import_of_a_log_of_hostile_lines_is_one_error_with_the_lines_named(tmp_path: Path) -> None:
    texts = [lines(EVENTS[:3]).strip(), "[" * 200_000, *(HOSTILE[n][1](EVENTS[HOSTILE[n][0]]) for n in HOSTILE)]
    log = _log(tmp_path, texts)
    result = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(log), "--out",
                                       str(tmp_path / "t.trace")])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "line 4: not JSON: nested too deeply" in result.output
    assert "Error: no job to import: nothing written" in result.output


def test_a_line_nested_too_deeply_is_a_malformed_line(tmp_path: Path) -> None:
    log = _log(tmp_path, ["[" * 200_000, '{"Event": "x"}'])
    found = list(log_lines(log))
    assert [(line.number, line.event, line.problem) for line in found] == [
        (1, None, "not JSON: nested too deeply"), (2, {"Event": "x"}, "")]


def _zstd(path: Path, chunk: bytes, size: int) -> Path:
    """A zstd file of ``chunk`` repeated to ``size`` bytes: a few KB on disk."""
    with pa.CompressedOutputStream(str(path), "zstd") as out:
        for _ in range(size // len(chunk)):
            out.write(chunk)
    return path


def test_a_zstd_bomb_stops_at_the_line_cap_before_reading_past_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 1 << 20)
    bomb = _zstd(tmp_path / "events.zstd", b"a" * (1 << 20), 64 << 20)
    assert bomb.stat().st_size < 16_384
    tracemalloc.start()
    try:
        with pytest.raises(EventLogError, match=f"{bomb} line 1: longer than {1 << 20} bytes"):
            list(log_lines(bomb))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the capped line and a buffer, not the 64 MiB it inflates to


def test_a_file_inflating_past_the_byte_cap_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 1 << 20)
    bomb = _zstd(tmp_path / "events.zstd", b"a" * 65_535 + b"\n", 4 << 20)  # lines of 64 KiB
    with pytest.raises(EventLogError, match=f"{bomb} line 17: the file holds more than {1 << 20} bytes"):
        list(log_lines(bomb))


def test_the_report_of_a_bomb_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_LINE_BYTES", 1 << 20)
    bomb = _zstd(tmp_path / f"{APP}.zstd", b"a" * (1 << 20), 8 << 20)
    assert_one_error_line(CliRunner().invoke(report, [str(bomb)]), "line 1: longer than")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_rolled_part_linked_to_a_device_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / f"eventlog_v2_{APP}"
    folder.mkdir()
    (folder / f"events_1_{APP}").write_text(lines(EVENTS))
    (folder / f"events_2_{APP}").symlink_to("/dev/zero")
    assert_one_error_line(CliRunner().invoke(report, [str(folder)]), "events_2_", "not a regular file")
    result = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(folder), "--out",
                                       str(tmp_path / "t.trace")])
    assert_one_error_line(result, "events_2_", "not a regular file")


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)
FIELDS = ["Event", "Job ID", "Stage ID", "Stage IDs", "Stage Infos", "Submission Time", "Completion Time",
          "Job Result", "Properties", "Task Info", "Task Metrics", "Task End Reason", "Timestamp", "App ID",
          "Executor ID", "Executor Info", "Stage Info", "Launch Time", "Finish Time", "Index", "Task ID"]
KINDS = ["SparkListenerApplicationStart", "SparkListenerJobStart", "SparkListenerJobEnd", "SparkListenerTaskStart",
         "SparkListenerTaskEnd", "SparkListenerExecutorAdded", "SparkListenerStageSubmitted"]
EVENT = st.builds(lambda kind, fields: {**fields, "Event": kind}, st.sampled_from(KINDS),
                  st.dictionaries(st.sampled_from(FIELDS), JSON | st.integers(min_value=10**300), max_size=6))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.lists(EVENT, max_size=4), at=st.integers(min_value=0, max_value=len(EVENTS)))
def test_fuzzed_events_end_in_a_result_or_one_typed_error(tmp_path: Path, extra: list[dict], at: int) -> None:
    texts = lines(EVENTS).splitlines()
    texts[at:at] = [json.dumps(e) for e in extra]
    log = _log(tmp_path, texts)
    readers: list[tuple[Callable[[], object], type[Exception]]] = [
        (lambda: load_event_log(log), ResultsError), (lambda: list(read_events(log)), EventLogError),
        (lambda: read_event_log(log, Skipped()), EventLogError),
        (lambda: idle_slots.read(log), idle_slots.EventLogError), (lambda: _read(log), CalibrationError)]
    for read, error in readers:
        try:
            read()
        except error as exc:
            assert "\n" not in str(exc) and str(exc)
