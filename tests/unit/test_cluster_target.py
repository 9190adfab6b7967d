"""Which cluster a command talks to: --hadoop-conf-dir, else HADOOP_CONF_DIR, else YARN_CONF_DIR,
else the default cluster (the local testbed, which the command line registers); and the command
says which. Nothing here reaches a cluster."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.launch.submit import cluster_env, take_own
from bridge.replay.cli import replay
from bridge.target import default
from bridge.target.config import resolve
from bridge.target.default import register_default
from bridge.testbed import hadoopconf as testbed_conf
from bridge.testbed import cluster as testbed_cluster
from bridge.testbed.layout import default_layout
from bridge.testbed.local_agents import LocalTestbedAgents
from bridge.testbed.target import LocalTestbed
from yarnclient.hadoopconf import HadoopConfError

DEMO = Path(__file__).resolve().parents[2] / "workloads" / "examples" / "demo.toml"


def conf_dir(path: Path, rm: str, nn: str = "nn.example") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "core-site.xml").write_text(f"<configuration><property><name>fs.defaultFS</name>"
                                        f"<value>hdfs://{nn}:8020</value></property></configuration>")
    (path / "yarn-site.xml").write_text("<configuration><property><name>yarn.resourcemanager.webapp.address"
                                        f"</name><value>{rm}</value></property></configuration>")
    return path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No conf dir from the developer's shell; a testbed home of our own (resolving the testbed
    writes its Spark defaults there); the local testbed the default cluster, as `schedbridge` makes it."""
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SCHEDBRIDGE_TESTBED_BASE_PORT", "PYSPARK_PYTHON"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCHEDBRIDGE_TESTBED", str(tmp_path / "testbed"))
    monkeypatch.setattr(default, "_make", LocalTestbed)
    monkeypatch.setattr(default, "_built", None)


def test_hadoop_conf_dir_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf_dir(tmp_path / "prod", "rm.example:8088")))
    target = resolve(None)
    assert (target.rm_url, target.webhdfs_url, target.fs_default) == (
        "http://rm.example:8088", "http://nn.example:9870", "hdfs://nn.example:8020")
    assert target.env["HADOOP_CONF_DIR"] == str(tmp_path / "prod")
    assert target.describe() == (f"cluster from $HADOOP_CONF_DIR {tmp_path / 'prod'}: "
                                 "ResourceManager http://rm.example:8088, WebHDFS http://nn.example:9870")


def test_the_option_wins_over_the_environment_and_yarn_conf_dir_comes_after(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YARN_CONF_DIR", str(conf_dir(tmp_path / "yarn", "rm-y.example:8088")))
    assert resolve(None).rm_url == "http://rm-y.example:8088"
    assert resolve(None).origin == "$YARN_CONF_DIR"
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf_dir(tmp_path / "env", "rm-e.example:8088")))
    assert resolve(None).rm_url == "http://rm-e.example:8088"
    given = resolve(conf_dir(tmp_path / "opt", "rm-o.example:8088"))
    assert (given.rm_url, given.origin) == ("http://rm-o.example:8088", "--hadoop-conf-dir")


def test_neither_means_the_local_testbed_and_its_conf_dir_is_the_testbed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDBRIDGE_TESTBED", str(tmp_path / "testbed"))  # never the running testbed's conf
    layout = default_layout()
    running = {"resourcemanager": 4242, "nodemanager-1": 4243}
    monkeypatch.setattr(testbed_cluster.Testbed, "running", lambda self: running)
    target = resolve(None)
    assert (target.rm_url, target.origin) == (layout.rm_url, "the local testbed")
    assert target.describe().startswith("cluster from the local testbed: ResourceManager http://127.0.0.1:")
    testbed_conf.write_all(layout)  # what `testbed up` writes; then exported, as it suggests
    monkeypatch.setenv("HADOOP_CONF_DIR", str(layout.conf_dir))
    target = resolve(None)
    assert target.origin == "$HADOOP_CONF_DIR" and "SPARK_CONF_DIR" in target.env  # the testbed's Spark defaults


def test_a_stopped_testbed_is_never_the_silent_default(tmp_path: Path) -> None:
    """Nothing given and no testbed running: the user meant another cluster; the error names the
    stopped daemons and both ways out, and nothing was written."""
    with pytest.raises(HadoopConfError, match=r"not running \(.*resourcemanager.*\): point one of them at "
                                              r"your cluster's Hadoop configuration, or start the testbed"):
        resolve(None)
    assert not (tmp_path / "testbed").exists()


def test_the_testbed_starts_its_own_agents_for_a_run_and_another_cluster_has_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testbed_cluster.Testbed, "running", lambda self: {"resourcemanager": 4242})
    own = resolve(None).own_agents
    assert own is not None and isinstance(own("replay", None), LocalTestbedAgents)
    assert own("replay", None).min_share == 0.1 and own("replay", 0.02).min_share == 0.02
    assert resolve(conf_dir(tmp_path / "prod", "rm.example:8088")).own_agents is None


def test_without_a_default_cluster_nothing_given_is_an_error_and_a_conf_dir_is_any_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process the command line did not start (a policy host beside a driver) has no default."""
    register_default(None)
    with pytest.raises(HadoopConfError, match=r"^no --hadoop-conf-dir, \$HADOOP_CONF_DIR or \$YARN_CONF_DIR: point "
                                              r"one of them at your cluster's Hadoop configuration$"):
        resolve(None)
    layout = default_layout()
    testbed_conf.write_all(layout)
    target = resolve(layout.conf_dir)  # the testbed's conf dir, read as any cluster's
    assert target.rm_url == layout.rm_url and "SPARK_CONF_DIR" not in target.env and target.own_agents is None


def test_the_command_line_makes_the_local_testbed_the_default(tmp_path: Path) -> None:
    register_default(None)
    result = CliRunner().invoke(main, ["replay", str(DEMO), "--policy", "stock", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1, result.output
    assert "the local testbed is not running" in result.output and "Traceback" not in result.output
    assert isinstance(default.default_cluster(), LocalTestbed)


def test_a_command_that_asks_for_no_cluster_imports_neither_the_testbed_nor_a_cluster_client(
        tmp_path: Path) -> None:
    """The default is registered, not built: ``simulate`` starts without the testbed's imports."""
    trace = tmp_path / "trace.txt"
    trace.write_text("0.0 2 1.0 1.0 1.0\n1.0 1 2.0 2.0\n")
    code = ("import sys\nfrom bridge.cli import main\n"
            f"main(['simulate', '--trace', {str(trace)!r}, '--policy', 'fifo', '--nodes', '2', '--json'], "
            "standalone_mode=False)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('bridge.testbed', 'bridge.target.config', "
            "'yarnclient'))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr
    assert '"jobs": 2' in run.stdout and run.stdout.splitlines()[-1] == "[]", run.stdout


def test_a_users_pyspark_python_reaches_spark_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Executors on real NodeManagers run the user's interpreter path, never the gateway's."""
    conf = conf_dir(tmp_path / "prod", "rm.example:8088")
    assert "PYSPARK_PYTHON" not in resolve(conf).env  # unset: Spark's default on the nodes, not this Python
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python3.12/bin/python3")
    assert resolve(conf).env["PYSPARK_PYTHON"] == "/opt/python3.12/bin/python3"
    monkeypatch.setattr(testbed_cluster.Testbed, "running", lambda self: {"resourcemanager": 4242})
    assert resolve(None).env["PYSPARK_PYTHON"] == "/opt/python3.12/bin/python3"


def test_a_missing_directory_names_where_it_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path / "nope"))
    with pytest.raises(HadoopConfError, match=rf"\$HADOOP_CONF_DIR {tmp_path / 'nope'}: no such directory"):
        resolve(None)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_replay_honours_hadoop_conf_dir_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The RM named by $HADOOP_CONF_DIR (on a 127.0.0.1 port nobody listens on) is the one replay
    announces and tries; the testbed is never asked, nothing is submitted or written."""
    port = _closed_port()
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf_dir(tmp_path / "conf", f"127.0.0.1:{port}")))
    result = CliRunner().invoke(replay, [str(DEMO), "--policy", "fifo", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1, result.output
    assert (f"replay: cluster from $HADOOP_CONF_DIR {tmp_path / 'conf'}: ResourceManager "
            f"http://127.0.0.1:{port}, WebHDFS http://nn.example:9870") in result.output
    assert f"cannot reach http://127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "r").exists()


def test_replay_reports_a_bad_conf_dir_by_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = conf_dir(tmp_path / "conf", "rm:8088")
    (conf / "yarn-site.xml").write_text("<configuration>\n  <property><name>x</name>\n</configuration>\n")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    result = CliRunner().invoke(replay, [str(DEMO), "--policy", "fifo", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert f"{conf / 'yarn-site.xml'}: line 3: malformed XML" in result.output and "Traceback" not in result.output


def test_submit_takes_the_same_rule_and_keeps_its_option_from_spark_submit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    given, args = take_own(["--master", "spark-schedbridge://yarn", "--hadoop-conf-dir",
                            str(conf_dir(tmp_path / "opt", "rm-o:8088")), "--queue=q", "app.py", "--x"])
    assert given == tmp_path / "opt"
    assert args == ["--master", "spark-schedbridge://yarn", "--queue", "q", "app.py", "--x"]
    assert cluster_env(args, given)["HADOOP_CONF_DIR"] == str(tmp_path / "opt")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf_dir(tmp_path / "env", "rm-e:8088")))
    assert cluster_env(args, None)["YARN_CONF_DIR"] == str(tmp_path / "env")
    assert f"submit: cluster from $HADOOP_CONF_DIR {tmp_path / 'env'}: ResourceManager http://rm-e:8088\n" \
        in capsys.readouterr().err
    local = ["--master", "spark-schedbridge://local[2]", "app.py"]
    with pytest.raises(click.UsageError, match="--hadoop-conf-dir applies to --master spark-schedbridge://yarn"):
        cluster_env(local, tmp_path / "opt")


def test_submit_takes_policy_and_params_as_every_command_does() -> None:
    _, args = take_own(["--master", "spark-schedbridge://yarn", "--policy", "hawk", "--param", "cutoff=0.5",
                        "--param=big_partition=50", "app.py", "--param", "x=1"])
    assert args == ["--master", "spark-schedbridge://yarn", "--conf", "spark.schedbridge.policy=hawk",
                    "--conf", "spark.schedbridge.policy.cutoff=0.5",
                    "--conf", "spark.schedbridge.policy.big_partition=50",
                    "app.py", "--param", "x=1"]  # after the application: the application's own argument
    for bad, message in [(["--param", "cutoff"], "expected KEY=VALUE"),
                         (["--param", "a=1", "--param", "a=2"], "'a' given twice"),
                         (["--policy", "hawk", "--policy", "eagle"], "^--policy given twice"),
                         (["--param", "a=1", "--conf", "spark.schedbridge.policy.a=2"], "given both as --conf")]:
        with pytest.raises(click.UsageError, match=message):
            take_own(["--master", "spark-schedbridge://yarn", *bad, "app.py"])
