"""sim-vs-live with declared task demands: executors of (cores, GB), measured jobs that carry
their jobs' demands by stage kind, and the policies that play them."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.apps.simlive.calibration import NONE
from bridge.apps.simlive.compare import CompareError
from bridge.apps.simlive.measured import measured_jobs
from bridge.apps.simlive import session
from bridge.apps.simlive.predict import predict
from bridge.apps.simlive.session import Comparison
from bridge.apps.simlive.stages import stage_play
from bridge.cli import main as cli
from tests.unit.test_simlive import write_staged_run
from workloads.demands import TaskDemands
from workloads.model import Job
from workloads.spec import Submission, WordCountJob
from workloads.workload_file import WorkloadFileError

MAP, REDUCE = (1.0, 0.75), (2.0, 0.25)
DECLARED = TaskDemands(MAP, REDUCE)


def test_measured_tasks_demand_what_their_job_declares_for_their_stages_kind(tmp_path: Path) -> None:
    live = write_staged_run(tmp_path)
    subs = [Submission(0, 0.0, "wc", WordCountJob("in", 1, 0, DECLARED)),
            Submission(1, 1.0, "wc", WordCountJob("in", 1))]
    job, other = measured_jobs(live, subs, "tasks")
    # stages 0, 1, 3, 4: Spark lists parents for 1 and 3 (reduce stages), none for 0 and 4 (maps)
    assert job.stage_of == (0, 0, 1, 2, 3) and job.demands == (MAP, MAP, REDUCE, REDUCE, MAP)
    assert other.demands is None   # job 1 declares none
    play = stage_play(live, subs)
    assert [j.demands for j in play.jobs] == [(MAP, MAP), (REDUCE,), (REDUCE,), (MAP,), None]


def two_memory_heavy_tasks() -> list[Job]:
    return [Job(0, 0.0, (1.0, 1.0), 1.0, demands=((1.0, 0.75), (1.0, 0.75)))]


@pytest.mark.parametrize("memory_per_core, finish", [(0.5, 2.0), (4.0, 1.0)])
def test_the_simulated_executors_have_the_given_memory(tmp_path: Path, memory_per_core: float, finish: float) -> None:
    """One executor of 2 cores: with 1 GB two 0.75 GB tasks run one after the other, with 8 GB together."""
    frame = predict(two_memory_heavy_tasks(), "falcon", {}, 1, 2, 1, NONE, 5.0, tmp_path / "sim.csv",
                    memory_per_core=memory_per_core)
    assert frame["finish"].iloc[0] == pytest.approx(finish, abs=0.01)


def test_spark_places_by_slots_so_a_stand_in_plays_no_declared_demand(tmp_path: Path) -> None:
    stock = predict(two_memory_heavy_tasks(), "stock", {}, 1, 2, 1, NONE, 5.0, tmp_path / "stock.csv",
                    memory_per_core=0.5, declared=False)
    assert stock["finish"].iloc[0] == pytest.approx(1.0, abs=0.01)   # both at once, as Spark runs them
    with pytest.raises(CompareError, match="does not fit"):   # the simulator's FIFO cannot overcommit memory
        predict(two_memory_heavy_tasks(), "stock", {}, 1, 2, 1, NONE, 5.0, tmp_path / "x.csv", memory_per_core=0.5)


def demanding_workload(tmp_path: Path, demand: str = "demand = { map = [1, 0.75], reduce = [2, 0.25] }") -> Path:
    workload = tmp_path / "wc.toml"
    workload.write_text('name = "wc"\nseed = 1\njobs = 2\narrival = "fixed"\nmean_interarrival_s = 1.0\n'
                        '[inputs.i]\nkind = "wordcount"\nsize_mb = 1\nblock_mb = 1\n'
                        '[categories.heavy]\nkind = "wordcount"\ninput = "i"\nreduces = 1\nprobability = 1.0\n'
                        f'{demand}\n')
    return workload


def test_a_workload_with_demands_needs_executors_they_fit(tmp_path: Path) -> None:
    workload = demanding_workload(tmp_path)
    with pytest.raises(CompareError, match="declare task demands .*give --executor-memory"):
        Comparison.prepare(workload, ["stock", "falcon"], 2, 2, None, None, {}, False, None)
    with pytest.raises(WorkloadFileError, match=r"categories\.heavy\.demand: .*fits no executor of 2 cores and 0.5 GB"):
        Comparison.prepare(workload, ["stock", "falcon"], 2, 2, None, None, {}, False, None, executor_memory_gb=0.5)
    comparison = Comparison.prepare(workload, ["stock", "falcon"], 2, 2, None, None, {}, False, None,
                                    executor_memory_gb=1.0)
    assert comparison.memory_per_core == 0.5
    assert not comparison._declared("stock") and comparison._declared("falcon")


def test_the_executor_memory_goes_to_spark_and_a_bad_size_is_refused(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(cli, ["sim-vs-live", str(demanding_workload(tmp_path)), "--policy", "falcon",
                                      "--executor-cores", "2", "--executor-memory", "512m",
                                      "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "categories.heavy.demand" in result.output and "0.5 GB" in result.output
    result = CliRunner().invoke(cli, ["sim-vs-live", str(demanding_workload(tmp_path)), "--policy", "falcon",
                                      "--executor-memory", "2x"])
    assert result.exit_code == 2 and "'2x' is not a memory size" in result.output
    comparison = Comparison.prepare(demanding_workload(tmp_path), ["falcon"], 2, 2, None, None, {}, False, None,
                                    executor_memory_gb=1.5)
    commands: list[list[str]] = []

    class Child:
        pid = -1

        def wait(self) -> int:
            return 0

    monkeypatch.setattr(session.subprocess, "Popen", lambda command, **kwargs: commands.append(command) or Child())
    with pytest.raises(CompareError):   # the fake child wrote no results
        comparison._replay("falcon", 1, tmp_path / "falcon")
    assert "spark.executor.memory=1536m" in commands[0]


def test_the_table_and_json_state_the_executors_memory() -> None:
    from bridge.apps.simlive.session import Result
    from tests.unit.test_simlive import _measured

    runs = [_measured("falcon", 1, 10.0, 11.0)]
    given, unset = Result("w", 2, 2, 1.5, runs, executor_memory_gb=0.5), Result("w", 2, 2, 1.5, runs)
    assert given.text().startswith("w: 2 executors x 2 cores 0.5 GB, live and simulated;")
    assert unset.text().startswith("w: 2 executors x 2 cores, live and simulated;")
    assert (given.as_dict()["executor_memory_gb"], unset.as_dict()["executor_memory_gb"]) == (0.5, None)
