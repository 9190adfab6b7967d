"""`schedbridge experiment --workers`: the same bytes as a serial run, and a failing run named."""
from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bridge import experiments_thesis, sweep
from bridge.experiments import experiment


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("args", [("hawk-breakdown", "--scale", "0.001"), ("kairos-prototype", "--scale", "0.05"),
                                  ("psychas-load", "--quick")])
def test_two_workers_write_the_same_bytes_as_one(tmp_path: Path, args: tuple[str, ...]) -> None:
    runner = CliRunner()
    for workers in ("1", "2"):
        result = runner.invoke(experiment, [*args, "--workers", workers, "--out", str(tmp_path / workers)])
        assert result.exit_code == 0, result.output
    serial, parallel = _files(tmp_path / "1"), _files(tmp_path / "2")
    assert len(serial) >= 2 and serial.keys() == parallel.keys()
    for path in serial:
        assert serial[path] == parallel[path], path


def fail_on_three(point: int) -> int:
    """A run that raises for the point 3 (module-level: worker processes import it)."""
    if point == 3:
        raise ValueError("no such policy 'nope'")
    return point * 10


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_point_stops_the_sweep_naming_it(workers: int) -> None:
    with sweep.workers(workers):
        assert sweep.run_points(fail_on_three, [1, 2], "demo") == [10, 20]
        with pytest.raises(click.ClickException) as failed:
            sweep.run_points(fail_on_three, [1, 2, 3, 4], "demo", lambda p: f"point #{p}")
    assert failed.value.message == "demo: the run point #3 failed: ValueError: no such policy 'nope'"


def test_a_failing_run_leaves_no_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(point: experiments_thesis.Point) -> experiments_thesis.Summary:
        if point.spec.variant.label == "no-stealing":
            raise KeyError("stealing")
        return real(point)

    real = experiments_thesis.run_point
    monkeypatch.setattr(experiments_thesis, "run_point", broken)
    result = CliRunner().invoke(experiment, ["hawk-breakdown", "--scale", "0.001", "--workers", "1",
                                             "--out", str(tmp_path / "results")])
    assert result.exit_code == 1
    assert "Error: hawk-breakdown: the run no-stealing on google at 15000 nodes, seed 1 failed: KeyError" \
        in result.output and "Traceback" not in result.output
    assert not (tmp_path / "results").exists()
