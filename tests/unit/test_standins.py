"""Stand-in schedulers (``stock``, ``stock-fair``): the registry's answers, and what they make the
live commands do: the Spark settings they need, refusing a conf that contradicts them, a pool per
replayed job."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from bridge.drivers.planners import BUILT_IN, make_planner
from bridge.drivers.spark.fifo import FifoPlanner
from bridge.replay import launchers
from bridge.replay import policy as live
from bridge.replay.cli import replay
from bridge.replay.launchers import SharedApplication, runs_sql
from bridge.replay.runner import ReplayPlan, spark_conf
from bridge.target.config import ClusterTarget
from policies.framework.registry import default_registry, sim_model, stand_in
from policies.framework.standins import STAND_INS
from workloads.spec import Submission, TasksJob, TpchJob, WordCountJob

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "workloads" / "examples" / "demo.toml"
OUTSIDE_POLICIES = ("bridge", "workloads", "yarnclient", "sparkplugin", "examples")
SCHEDULER_NAMES = frozenset({*STAND_INS, *BUILT_IN})  # the stand-ins, and the plugin's own planners


def name_comparisons(tree: ast.AST, names: frozenset[str]) -> Iterator[int]:
    """The lines where a string in ``names`` is compared with (``==``, ``!=``, ``in``, a
    ``match`` case, ``startswith``) rather than looked up in the registry."""
    def named(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(named(e) for e in node.elts)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(named(n) for n in (node.left, *node.comparators)):
            yield node.lineno
        elif isinstance(node, ast.MatchValue) and named(node.value):
            yield node.value.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith") and any(named(a) for a in node.args)):
            yield node.lineno


def test_the_registry_says_which_names_are_stand_ins_and_what_models_them() -> None:
    assert stand_in("hawk") is None and stand_in("fair") is None
    assert (sim_model("stock"), sim_model("stock-fair"), sim_model("eagle")) == ("fifo", "fair", "eagle")
    fair = stand_in("stock-fair")
    assert fair is not None and fair.live_conf == {"spark.scheduler.mode": "FAIR"}
    registered = set(default_registry().names())
    assert not registered & set(STAND_INS)  # a stand-in name never hides a policy
    assert {s.sim_model for s in STAND_INS.values()} <= registered


def test_no_stand_in_name_is_compared_as_a_string_outside_policies() -> None:
    """Which names run without the plugin, and how, is the registry's to say (``stand_in``)."""
    found = [f"{path.relative_to(ROOT)}:{line}" for package in OUTSIDE_POLICIES
             for path in sorted((ROOT / package).rglob("*.py"))
             for line in name_comparisons(ast.parse(path.read_text(), str(path)), SCHEDULER_NAMES)]
    assert not found, "compare stand-in names through policies.framework.registry.stand_in: " + ", ".join(found)


def test_the_check_sees_every_way_of_comparing_a_name() -> None:
    code = ('a == "stock"\nif p in ("x", "stock-fair"): pass\nmatch p:\n    case "spark-fifo": pass\n'
            'p.startswith("stock")\nb = "stock"\nstand_in(p)\nx == STOCK.name\n')
    assert sorted(name_comparisons(ast.parse(code), SCHEDULER_NAMES)) == [1, 2, 4, 5]


def test_the_plugins_own_planner_is_found_by_name_beside_the_registered_policies() -> None:
    assert BUILT_IN == {"spark-fifo": FifoPlanner} and isinstance(make_planner("spark-fifo"), FifoPlanner)
    with pytest.raises(ValueError, match=r"^unknown policy 'spark-fif'; known policies: .*, or spark-fifo$"):
        make_planner("spark-fif")


def test_stock_fair_puts_each_job_in_a_pool_named_so_that_names_sort_as_ids() -> None:
    fair, stock = stand_in("stock-fair"), stand_in("stock")
    assert fair is not None and stock is not None
    assert fair.pool(7) == "schedbridge-pool-000007" and stock.pool(7) is None
    assert sorted([fair.pool(10), fair.pool(9)]) == [fair.pool(9), fair.pool(10)]


def test_a_conf_that_contradicts_the_stand_in_is_refused_and_never_overridden() -> None:
    with pytest.raises(ValueError, match=r"^stock-fair runs Spark with spark.scheduler.mode=FAIR, but the conf "
                                         r"sets spark.scheduler.mode=FIFO$"):
        live.check("stock-fair", {"spark.scheduler.mode": "FIFO"})
    with pytest.raises(ValueError, match="^stock runs Spark with spark.scheduler.mode=FIFO"):
        live.check("stock", {"spark.scheduler.mode": "FAIR"})
    live.check("stock-fair", {"spark.scheduler.mode": "fair"})  # Spark reads the mode case-insensitively
    with pytest.raises(ValueError, match=r"^stock-fair takes no policy parameters, got \['cutoff'\]$"):
        live.check("stock-fair", {"spark.schedbridge.policy.cutoff": "2"})
    with pytest.raises(ValueError, match="^stock-fair runs without the plugin: --preempt"):
        live.check("stock-fair", {}, preempt=True)


def test_replay_refuses_the_contradiction_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(replay, [str(DEMO), "--policy", "stock-fair", "--conf", "spark.scheduler.mode=FIFO",
                                         "--out", str(tmp_path / "r")])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == ("Error: stock-fair runs Spark with spark.scheduler.mode=FAIR, but the conf "
                                     "sets spark.scheduler.mode=FIFO")
    assert not (tmp_path / "r").exists()


class FakeBuilder:
    """SparkSession.builder: records what the session was built with."""

    def __init__(self) -> None:
        self.conf: dict[str, str] = {}

    def master(self, master: str) -> FakeBuilder:
        self.conf["master"] = master
        return self

    def appName(self, name: str) -> FakeBuilder:
        return self

    def config(self, key: str, value: str) -> FakeBuilder:
        self.conf[key] = value
        return self

    def getOrCreate(self) -> FakeBuilder:
        return self


def test_a_stand_in_session_is_stock_spark_with_its_settings_and_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    builder = FakeBuilder()
    monkeypatch.setattr(live, "SparkSession", SimpleNamespace(builder=builder))
    live.open_session("stock-fair", {"spark.executor.cores": "2"}, "app")
    assert builder.conf == {"master": "yarn", "spark.scheduler.mode": "FAIR", "spark.executor.cores": "2"}
    assert live.submit_command("stock-fair", ["app.py"])[1:] == ["--master", "yarn", "app.py"]


def test_a_stand_ins_replay_writes_no_plugin_counters(tmp_path: Path) -> None:
    target = ClusterTarget(tmp_path, "http://rm", "http://nn", "hdfs://nn:9000", {})
    plan = ReplayPlan("w", 1, "stock-fair", "shared", (), {}, target, tmp_path, {})
    assert "spark.schedbridge.stats.file" not in spark_conf(plan, "t")
    assert "spark.schedbridge.stats.file" in spark_conf(ReplayPlan("w", 1, "fifo", "shared", (), {}, target,
                                                                   tmp_path, {}), "t")


class FakeContext:
    """A SparkContext's thread-local properties, as the shared application's jobs see them."""

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def setLocalProperty(self, key: str, value: str) -> None:
        self.props[key] = value


@pytest.mark.parametrize("policy, pools", [("stock-fair", ["schedbridge-pool-000003", "schedbridge-pool-000012"]),
                                           ("stock", [None, None])])
def test_each_replayed_job_runs_in_its_own_pool_only_when_the_stand_in_asks(
        policy: str, pools: list[str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    context = FakeContext()
    monkeypatch.setattr(launchers, "open_session", lambda *args: SimpleNamespace(sparkContext=context))
    warmed: list[object] = []
    monkeypatch.setattr(launchers, "warm_up", lambda spark, sql: warmed.append(sql))  # the real one: tests/integration
    seen: list[str | None] = []
    monkeypatch.setattr(launchers, "run_job",
                        lambda spark, *args: seen.append(context.props.get("spark.scheduler.pool")))
    app = SharedApplication(policy, {"spark.app.name": "a"}, {}, {}, sql=False)
    for job in (3, 12):
        assert app.run(Submission(job, 0.0, "c", TasksJob((1.0,)))).status == "succeeded"
    assert seen == pools and warmed == [False]


def test_the_warm_up_rehearses_spark_sql_only_for_workloads_with_queries() -> None:
    wordcount = Submission(1, 0.0, "batch", WordCountJob("wc", 2))
    trace = Submission(2, 1.0, "trace", TasksJob((1.0,)))
    query = Submission(3, 2.0, "query", TpchJob("tpch", 6))
    assert runs_sql([wordcount, trace, query])
    assert not runs_sql([wordcount, trace])
    assert not runs_sql([])
