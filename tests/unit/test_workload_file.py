"""Workload files: the shipped examples load, and every mistake names the file and the key."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from workloads.expand import expand
from workloads.spec import TasksJob, TpchJob, WordCountInput, WordCountJob
from workloads.workload_file import WorkloadFileError, load_workload

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads" / "examples"

VALID = """
name = "t"
seed = 3
jobs = 20
mean_interarrival_s = 5.0

[inputs.wc]
kind = "wordcount"
size_mb = 4
block_mb = 1

[inputs.db]
kind = "tpch"
scale_factor = 0.01

[categories.a]
kind = "wordcount"
input = "wc"
reduces = 2
extra_flops = 10
probability = 0.5

[categories.b]
kind = "tpch"
input = "db"
queries = [1, 6]
probability = 0.5
"""


def write(tmp_path: Path, text: str, name: str = "w.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_for(tmp_path: Path, text: str) -> WorkloadFileError:
    path = write(tmp_path, text)
    with pytest.raises(WorkloadFileError) as caught:
        load_workload(path)
    assert str(caught.value).startswith(f"{path}: ")
    return caught.value


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_load(path: Path) -> None:
    workload = load_workload(path)
    assert workload.name == path.stem
    assert (workload.mix is None) != (workload.trace is None)


def test_all_required_examples_are_shipped() -> None:
    names = {p.stem for p in EXAMPLES.glob("*.toml")}
    assert {"kairos-heavy-tailed", "kairos-uniform", "tpch-mix", "mixed", "demo"} <= names


def test_kairos_heavy_tailed_matches_table_4_1() -> None:
    mix = load_workload(EXAMPLES / "kairos-heavy-tailed.toml").mix
    assert mix is not None
    assert [c.probability for c in mix.categories] == [0.32, 0.31, 0.31, 0.04, 0.02]
    assert [c.extra_flops for c in mix.categories] == [0, 500, 0, 500, 1000]
    assert mix.jobs == 100


def test_valid_file_reads_every_field(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, VALID))
    assert (w.name, w.seed) == ("t", 3)
    assert w.mix is not None and (w.mix.jobs, w.mix.arrival, w.mix.mean_interarrival_s) == (20, "poisson", 5.0)
    a, b = w.mix.categories
    assert (a.reduces, a.extra_flops, a.input) == (2, 10, "wc")
    assert b.queries == (1, 6)


def test_tpch_category_defaults_to_all_queries(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, VALID.replace("queries = [1, 6]\n", "")))
    assert w.mix is not None and w.mix.categories[1].queries == tuple(range(1, 23))


@pytest.mark.parametrize("text, key", [
    (VALID.replace("jobs = 20", "jobs = 20\nmean_interarrival = 5"), "mean_interarrival"),
    (VALID.replace("reduces = 2", "reduces = 2\nextra_flop = 1"), "categories.a.extra_flop"),
    (VALID.replace("block_mb = 1", "block_mb = 1\nblocksize = 1"), "inputs.wc.blocksize"),
])
def test_unknown_key_is_named(tmp_path: Path, text: str, key: str) -> None:
    err = error_for(tmp_path, text)
    assert err.key == key
    assert "unknown key" in str(err)


@pytest.mark.parametrize("old, new, key", [
    ("mean_interarrival_s = 5.0", "mean_interarrival_s = -5.0", "mean_interarrival_s"),
    ("mean_interarrival_s = 5.0", "mean_interarrival_s = 0", "mean_interarrival_s"),
    ("probability = 0.5\n\n[categories.b]", "probability = -0.5\n\n[categories.b]", "categories.a.probability"),
    ("size_mb = 4", "size_mb = -4", "inputs.wc.size_mb"),
    ("scale_factor = 0.01", "scale_factor = 0", "inputs.db.scale_factor"),
    ("jobs = 20", "jobs = 0", "jobs"),
    ("jobs = 20", 'jobs = "many"', "jobs"),
    ("extra_flops = 10", "extra_flops = -1", "categories.a.extra_flops"),
    ("queries = [1, 6]", "queries = [1, 23]", "categories.b.queries"),
])
def test_bad_value_is_named(tmp_path: Path, old: str, new: str, key: str) -> None:
    assert error_for(tmp_path, VALID.replace(old, new, 1)).key == key


def test_missing_input_is_named(tmp_path: Path) -> None:
    err = error_for(tmp_path, VALID.replace('input = "wc"', 'input = "nowhere"'))
    assert err.key == "categories.a.input"
    assert "'nowhere'" in str(err) and "declared: wc" in str(err)


def test_input_of_the_wrong_kind_is_rejected(tmp_path: Path) -> None:
    assert error_for(tmp_path, VALID.replace('input = "wc"', 'input = "db"')).key == "categories.a.input"


def test_missing_required_key(tmp_path: Path) -> None:
    err = error_for(tmp_path, VALID.replace("seed = 3\n", ""))
    assert (err.key, str(err).endswith("missing")) == ("seed", True)


def test_misspelt_required_key_is_pointed_out(tmp_path: Path) -> None:
    err = error_for(tmp_path, VALID.replace("reduces = 2", "reduce = 2"))
    assert err.key == "categories.a.reduces"
    assert "'categories.a.reduce' a misspelling" in str(err)


def test_probabilities_must_add_up(tmp_path: Path) -> None:
    lowered = VALID.replace("probability = 0.5\n\n[categories.b]", "probability = 0.4\n\n[categories.b]")
    err = error_for(tmp_path, lowered)
    assert err.key == "categories"
    assert re.search(r"add up to 0\.9\b", str(err))


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    assert "not valid TOML" in str(error_for(tmp_path, "seed = = 1"))
    with pytest.raises(WorkloadFileError, match="cannot read"):
        load_workload(tmp_path / "absent.toml")


TRACE = """
seed = 1
[trace]
path = "jobs.trace"
time_scale = 0.5
task_mode = "spin"
"""


def test_trace_workload(tmp_path: Path) -> None:
    (tmp_path / "jobs.trace").write_text("0 2 3 2 4\n")
    w = load_workload(write(tmp_path, TRACE))
    assert w.trace is not None and w.trace.path == tmp_path / "jobs.trace"
    assert (w.trace.time_scale, w.trace.task_mode) == (0.5, "spin")


def test_missing_trace_file_is_named(tmp_path: Path) -> None:
    err = error_for(tmp_path, TRACE)
    assert err.key == "trace.path" and "does not exist" in str(err)


def test_trace_rejects_mix_keys(tmp_path: Path) -> None:
    (tmp_path / "jobs.trace").write_text("0 1 1 1\n")
    assert error_for(tmp_path, "jobs = 3\n" + TRACE).key == "jobs"
    assert error_for(tmp_path, TRACE + "seeds = 3\n").key == "trace.seeds"


def test_job_kinds() -> None:
    assert (WordCountJob("x", 1).kind, TpchJob("x", 1).kind, TasksJob((1.0,)).kind) == (
        "wordcount", "tpch", "tasks")


def test_interactive_batch_draws_its_three_batch_jobs_where_its_paragraph_says() -> None:
    workload = load_workload(EXAMPLES / "interactive-batch.toml")
    submissions = expand(workload)
    batch = [(s.job_id, s.time_s) for s in submissions if s.category == "batch"]
    assert [b[0] for b in batch] == [1, 9, 17] and [b[1] for b in batch] == pytest.approx([3.0, 27.0, 51.0])
    assert len(submissions) == 24 and submissions[-1].time_s == pytest.approx(23 * 3.0)
    assert all(isinstance(s.params, TpchJob) for s in submissions if s.category != "batch")
    wc = next(i for i in workload.inputs if isinstance(i, WordCountInput))
    assert (wc.size_mb / wc.block_mb, submissions[1].params) == (6, WordCountJob("wc-144m", 3, 0))  # 6 long maps


def test_falcon_dag_draws_each_category_its_expected_count() -> None:
    submissions = expand(load_workload(EXAMPLES / "falcon-dag.toml"))
    counts = {c: sum(s.category == c for s in submissions)
              for c in ("wordcount-cpu", "wordcount-memory", "query-small", "query-join")}
    assert counts == {"wordcount-cpu": 6, "wordcount-memory": 4, "query-small": 9, "query-join": 5}
    assert submissions[0].category == "query-small"
    assert {s.params.query for s in submissions if isinstance(s.params, TpchJob) and s.category == "query-join"} \
        <= {3, 5, 9, 18, 21}
