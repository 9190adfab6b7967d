"""``schedbridge submit``: spark-submit with the Spark plugin on the classpath and YARN's steps kept.

spark-submit accepts ``--master spark-schedbridge://...`` (it starts with "spark", so it is
classified as standalone), but then drops the options and steps it applies only to ``yarn``.
This wrapper takes spark-submit's own arguments and, for ``spark-schedbridge://yarn`` in client
deploy mode, turns those into conf entries: ``--num-executors``, ``--queue``, ``--archives``,
``--files`` and, for Python applications, ``spark.yarn.isPython`` (so YARN's client ships
pyspark.zip and py4j to the containers); cluster deploy mode is `bridge.launch.cluster_mode`. It always
adds the plugin jar, and this Python as ``spark.schedbridge.python`` (the one the policy host beside
the driver runs with) unless given. The command runs as an argument list, never through a shell.

To tell an option's value from the application (``--name app.py app.py``) the wrapper must know
which options take a value; it reads them from the installed Spark's own option table
(`bridge.launch.launcher`, the launcher jar's ``SparkSubmitOptionParser``), so the split
matches spark-submit's for every Spark version, and no list is kept here.

For YARN the cluster is chosen as by every schedbridge command (`bridge.target.config`):
``--hadoop-conf-dir DIR`` (ours, taken out before spark-submit sees the arguments), else
``$HADOOP_CONF_DIR``, else ``$YARN_CONF_DIR``, else the local testbed with its Spark defaults.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

import sparkplugin
from bridge.common.options import KeyValue
from bridge.launch.cluster_mode import cluster_args, is_cluster
from bridge.launch.launcher import LauncherError, launcher_jar, value_options
from bridge.target.config import announce, resolve
from yarnclient.errors import YarnError

# spark-submit option -> conf key, for options spark-submit applies only when master == "yarn"
YARN_ONLY: dict[str, str] = {
    "--num-executors": "spark.executor.instances",
    "--queue": "spark.yarn.queue",
    "--archives": "spark.yarn.dist.archives",
    "--files": "spark.yarn.dist.files",  # YARN's distributed cache: each container's directory, #alias kept
}
PYTHON_KEY = f"{sparkplugin.CONF_PREFIX}python"
CONF_DIR_OPTION = "--hadoop-conf-dir"  # ours, not spark-submit's
# ours too, as in every schedbridge command: the policy and its parameters, turned into the plugin's conf
POLICY_OPTION, PARAM_OPTION = "--policy", "--param"
OWN_OPTIONS = (CONF_DIR_OPTION, POLICY_OPTION, PARAM_OPTION)
POLICY_KEY = f"{sparkplugin.CONF_PREFIX}policy"


def spark_home() -> Path:
    """$SPARK_HOME, else the installed pyspark (which carries bin/spark-submit and jars/)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def with_value() -> frozenset[str]:
    """The options that take a value: spark-submit's own, read from its jar, and ours."""
    try:
        return value_options(launcher_jar(spark_home())) | {CONF_DIR_OPTION}
    except LauncherError as e:
        raise click.ClickException(str(e)) from None


def _split(args: Sequence[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """spark-submit's options as (name, value) pairs, and the application with its arguments."""
    opts: list[tuple[str, str | None]] = []
    takes_value = with_value() | set(OWN_OPTIONS)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name, eq, value = args[i].partition("=")
        if eq:
            opts.append((name, value))
        elif name in takes_value:
            if i + 1 >= len(args):
                raise click.UsageError(f"{name} needs a value")
            opts.append((name, args[i + 1]))
            i += 1
        else:
            opts.append((name, None))
        i += 1
    return opts, list(args[i:])


def rewrite(args: Sequence[str], jar: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """spark-submit arguments with the plugin jar added and YARN-only options kept as conf; in
    cluster deploy mode, Spark on YARN's own submission around the plugin's driver
    (`bridge.launch.cluster_mode`). ``environ``: spark-submit's environment (default this one)."""
    opts, app = _split(args)
    if not app:
        raise click.UsageError("no application given (a .py file or a jar after the options)")
    master = next((v for n, v in opts if n == "--master"), None)
    if master is None or not master.startswith(sparkplugin.MASTER_PREFIX):
        raise click.UsageError(f"--master must be {sparkplugin.MASTER_PREFIX}<yarn|local[N]|spark://...>")
    yarn = master == sparkplugin.master("yarn")
    if not any(name in ("--conf", "-c") and (value or "").startswith(PYTHON_KEY + "=") for name, value in opts):
        opts = [*opts, ("--conf", f"{PYTHON_KEY}={sys.executable}")]  # the policy host beside the driver runs here
    if is_cluster(opts):
        if not yarn:
            raise click.UsageError(f"--deploy-mode cluster needs --master {sparkplugin.master('yarn')} (the driver "
                                   "in YARN's ApplicationMaster)")
        return cluster_args(opts, app, jar, os.environ if environ is None else environ)
    out: list[str] = []
    jars, class_path = [jar], [jar]
    for name, value in opts:
        if name == "--jars" and value:
            jars.append(value)
        elif name == "--driver-class-path" and value:
            class_path.append(value)
        elif yarn and name in YARN_ONLY:
            out += ["--conf", f"{YARN_ONLY[name]}={value}"]
        else:
            out += [name] if value is None else [name, value]
    if yarn and app[0].endswith(".py"):
        out += ["--conf", "spark.yarn.isPython=true"]
    return [*out, "--jars", ",".join(jars), "--driver-class-path", os.pathsep.join(class_path), *app]


def take_own(args: Sequence[str]) -> tuple[Path | None, list[str]]:
    """Our ``--hadoop-conf-dir``, and the arguments for spark-submit without our options, where
    ``--policy P`` and ``--param KEY=VALUE`` (among the options before the application) become
    the plugin's conf. A key given twice, or both ways, is refused: which would win is a guess."""
    opts, app = _split(args)
    given = [value for name, value in opts if name == CONF_DIR_OPTION]
    ours: dict[str, str] = {}
    for name, value in opts:
        if name in (POLICY_OPTION, PARAM_OPTION):
            key, item = (POLICY_KEY, value or "") if name == POLICY_OPTION else _param_conf(value or "")
            if key in ours:
                what = name if key == POLICY_KEY else f"{name} {key.removeprefix(sparkplugin.POLICY_PREFIX)!r}"
                raise click.UsageError(f"{what} given twice")
            ours[key] = item
    for name, value in opts:
        key = (value or "").partition("=")[0].strip()
        if name in ("--conf", "-c") and key in ours:
            raise click.UsageError(f"{key} is given both as --conf and as {POLICY_OPTION} or {PARAM_OPTION}")
    rest = [part for name, value in opts if name not in OWN_OPTIONS
            for part in ([name] if value is None else [name, value])]
    rest += [part for key, value in ours.items() for part in ("--conf", f"{key}={value}")]
    return (Path(given[-1]) if given and given[-1] else None), [*rest, *app]


def _param_conf(item: str) -> tuple[str, str]:
    """``KEY=VALUE`` as the plugin's conf entry for policy parameter KEY."""
    key, value = KeyValue().convert(item, None, None)
    return next(iter(sparkplugin.policy_conf({key: value}).items()))


def cluster_env(args: Sequence[str], conf_dir: Path | None) -> dict[str, str]:
    """spark-submit's environment: for ``spark-schedbridge://yarn``, the cluster's (said on stderr)."""
    master = next((v for n, v in _split(args)[0] if n == "--master"), None)
    if master != sparkplugin.master("yarn"):
        if conf_dir is not None:
            raise click.UsageError(f"{CONF_DIR_OPTION} applies to --master {sparkplugin.master('yarn')} only")
        return dict(os.environ)
    try:
        target = resolve(conf_dir, hdfs=False)
    except YarnError as exc:
        raise click.ClickException(str(exc)) from None
    announce("submit", target)
    return dict(target.env)


def asks_for_help(args: Sequence[str]) -> bool:
    """No arguments, or ``--help``/``-h`` among the options: click's own help option is off, so
    that a ``--help`` after the application reaches the application."""
    return not args or any(name in ("--help", "-h") for name, _ in _split(args)[0])


@click.command("submit", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                           "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def submit(ctx: click.Context, args: tuple[str, ...]) -> None:
    """spark-submit for spark-schedbridge:// masters: same arguments, plugin jar added.

    Example: schedbridge submit --master spark-schedbridge://yarn --num-executors 2
    --policy hawk --param cutoff=0.5 app.py (the cluster: --hadoop-conf-dir DIR, else
    $HADOOP_CONF_DIR, else $YARN_CONF_DIR, else the local testbed). --policy and --param KEY=VALUE
    are spark.schedbridge.policy and spark.schedbridge.policy.KEY."""
    if asks_for_help(args):
        click.echo(ctx.get_help())
        return
    conf_dir, spark_args = take_own(args)
    home = spark_home()  # first: without pyspark (the [spark] extra) there is no plugin jar either
    try:
        jar = str(sparkplugin.jar_path())
    except sparkplugin.PluginJarMissing as e:
        raise click.ClickException(str(e)) from None
    env = {**cluster_env(spark_args, conf_dir), "SPARK_HOME": str(home)}
    cmd = [str(home / "bin" / "spark-submit"), *rewrite(spark_args, jar, env)]
    sys.exit(subprocess.run(cmd, env=env, check=False).returncode)
