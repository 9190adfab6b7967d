"""A gateway host for the deployment guide's test (tests/integration/test_compose_cluster.py).

The gateway is the Dockerfile's `gateway` stage, Java 17 and Python 3.11 and nothing of
schedbridge, on the compose cluster's network. It gets what an operator brings to a gateway:

* a Spark distribution in /opt/spark: pyspark's, which carries `bin/`, `jars/`, `python/lib/`
  and `examples/` as a Spark tarball does;
* the cluster's client configuration (`HADOOP_CONF_DIR`) and its `spark-defaults.conf`, from the
  compose cluster's client;
* the wheel built from this tree, beside its dependencies' wheels, which stand in for the package
  index (pip reads `PIP_NO_INDEX` and `PIP_FIND_LINKS`).

From there the guide's steps are the shell blocks of docs/deploy.md marked
`<!-- deploy-step: NAME -->`, run as written (:func:`guide_steps`).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import sparkplugin
from bridge.target.spark import SPARK_HOME
from tests.integration.docker_engine import ROOT, Engine
from tests.integration.test_packaging import clean_env, copy_of

GUIDE = ROOT / "docs" / "deploy.md"
STEP = re.compile(r"<!-- deploy-step: (?P<name>[\w-]+) -->\s*```bash\n(?P<body>.*?)```", re.DOTALL)
WHEELS = "/opt/wheels"
ENV = {"SPARK_HOME": "/opt/spark", "HADOOP_CONF_DIR": "/etc/hadoop/conf",
       "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": WHEELS, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def guide_steps(guide: Path = GUIDE) -> dict[str, str]:
    """The guide's marked shell blocks, by name."""
    return {m["name"]: m["body"] for m in STEP.finditer(guide.read_text())}


def wheelhouse(work: Path) -> Path:
    """`work/wheels`: the wheel built from a copy of this tree (with the plugin jar, as after `make
    plugin`), beside its dependencies' wheels and venv-pack's, at constraints.txt's versions
    (from pip's cache, else the index)."""
    source = copy_of(ROOT, work / "src")
    (source / "sparkplugin" / "build").mkdir()
    shutil.copy2(sparkplugin.jar_path(), source / "sparkplugin" / "build")
    wheels = work / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    _pip(pip + ["wheel", "--no-deps", "--wheel-dir", str(wheels), str(source)])
    built = next(wheels.glob("schedbridge-*.whl"))
    # wheels of every dependency, built where the index has only a source distribution (docopt)
    _pip(pip + ["wheel", "--wheel-dir", str(wheels), "-c", str(source / "constraints.txt"), str(built), "venv-pack"])
    return wheels


def _pip(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=clean_env())
    assert done.returncode == 0, done.stderr[-3000:]


@dataclass
class Gateway:
    engine: Engine
    name: str

    def sh(self, script: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """`script` under bash (-eu, pipefail) in the gateway, with :data:`ENV`, from WHEELS."""
        env = [arg for key, value in ENV.items() for arg in ("--env", f"{key}={value}")]
        return self.engine.run("exec", "--workdir", WHEELS, *env, self.name, "bash", "-euo", "pipefail", "-c", script,
                               timeout=timeout, check=False)

    def copy_in(self, source: Path, dest: str) -> None:
        self.engine.run("cp", str(source), f"{self.name}:{dest}", timeout=600)

    def stop(self) -> None:
        self.engine.run("rm", "--force", self.name, check=False)


def start(engine: Engine, image: str, network: str, client: str, work: Path) -> Gateway:
    """The gateway container, named and reachable as `gateway` on `network` (executors connect to
    a client-mode driver there), given the Spark distribution, the wheels and the cluster's
    configuration from the `client` container."""
    found = Gateway(engine, f"{network}-gateway")
    engine.run("run", "--detach", "--init", "--name", found.name, "--hostname", "gateway", "--network", network,
               "--network-alias", "gateway", image)
    try:
        conf = work / "cluster"
        conf.mkdir()
        engine.run("cp", f"{client}:/var/lib/schedbridge/cluster/conf", str(conf / "conf"))
        engine.run("cp", f"{client}:/var/lib/schedbridge/cluster/spark-conf/spark-defaults.conf", str(conf))
        engine.run("exec", found.name, "mkdir", "-p", "/etc/hadoop")
        # docker cp of a directory to a path that does not exist yet: the path becomes the copy
        found.copy_in(conf / "conf", "/etc/hadoop/conf")
        found.copy_in(wheelhouse(work), WHEELS)
        found.copy_in(SPARK_HOME, "/opt/spark")
        engine.run("exec", found.name, "mkdir", "-p", "/opt/spark/conf")
        found.copy_in(conf / "spark-defaults.conf", "/opt/spark/conf/spark-defaults.conf")
    except BaseException:
        found.stop()
        raise
    return found
