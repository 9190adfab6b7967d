"""``schedbridge submit --deploy-mode cluster``: the driver in YARN's ApplicationMaster.

spark-submit refuses cluster deploy mode for a ``spark-schedbridge://`` master (it takes it for a
standalone one), so the submission becomes what Spark on YARN runs natively, ``--master yarn
--deploy-mode cluster`` (every YARN option keeps its own meaning), with the plugin's
``org.schedbridge.spark.ClusterDriver`` as the ApplicationMaster's user class: it sets
``spark-schedbridge://yarn`` and runs the application unchanged. A Python application is shipped
to the container's directory (``--files``) and named by ``spark.schedbridge.cluster.pyFile``, with
the plugin jar as the primary resource; a JVM application keeps its jar as the primary resource,
its main class named by ``spark.schedbridge.cluster.mainClass`` and the plugin jar in ``--jars``.
The policy host starts beside the driver in the ApplicationMaster's container, with
``spark.schedbridge.python`` (a Python with schedbridge on the NodeManagers: a packed environment
shipped by ``--archives``, or one installed there), or the driver attaches to ``serve``
(``spark.schedbridge.endpoint``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import click

import sparkplugin

DRIVER_CLASS = "org.schedbridge.spark.ClusterDriver"
PY_FILE_KEY = f"{sparkplugin.CONF_PREFIX}cluster.pyFile"
MAIN_CLASS_KEY = f"{sparkplugin.CONF_PREFIX}cluster.mainClass"
AM_PYTHON_KEY = "spark.yarn.appMasterEnv.PYSPARK_PYTHON"

Option = tuple[str, str | None]


def cluster_args(opts: Sequence[Option], app: Sequence[str], jar: str, environ: Mapping[str, str]) -> list[str]:
    """spark-submit's arguments for ``opts`` (spark-submit options, ``--master`` and
    ``--deploy-mode`` among them) and ``app`` (the application and its arguments)."""
    kept = [(n, v) for n, v in opts if n not in ("--master", "--deploy-mode", "--class")]
    rest = [o for o in kept if o[0] not in ("--files", "--jars")]
    out = ["--master", "yarn", "--deploy-mode", "cluster", *_flat(rest)]
    files, jars = _listed(kept, "--files"), _listed(kept, "--jars")
    if app[0].endswith(".py"):
        out += ["--class", DRIVER_CLASS, "--conf", f"{PY_FILE_KEY}={Path(app[0]).name}",
                "--conf", "spark.yarn.isPython=true"]
        out += _am_python(kept, environ)
        files.append(app[0])
        primary = jar
    else:
        main = next((v for n, v in opts if n == "--class"), None)
        if not main:
            raise click.UsageError("--deploy-mode cluster with a jar needs --class MAIN (the application's main class)")
        out += ["--class", DRIVER_CLASS, "--conf", f"{MAIN_CLASS_KEY}={main}"]
        jars.append(jar)
        primary = app[0]
    out += (["--files", ",".join(files)] if files else []) + (["--jars", ",".join(jars)] if jars else [])
    return [*out, primary, *app[1:]]


def _am_python(opts: Sequence[Option], environ: Mapping[str, str]) -> list[str]:
    """The driver's Python in the ApplicationMaster: the user's PYSPARK_PYTHON, as spark-submit
    passes it for a Python application in cluster mode, unless the conf already names one."""
    keys = {(v or "").split("=", 1)[0].strip() for n, v in opts if n in ("--conf", "-c")}
    given = bool(keys & {AM_PYTHON_KEY, "spark.pyspark.python"})
    python = environ.get("PYSPARK_PYTHON")
    return [] if given or not python else ["--conf", f"{AM_PYTHON_KEY}={python}"]


def _listed(opts: Sequence[Option], name: str) -> list[str]:
    return [item for n, v in opts if n == name and v for item in v.split(",") if item]


def _flat(opts: Iterable[Option]) -> list[str]:
    return [part for name, value in opts for part in ([name] if value is None else [name, value])]


def is_cluster(opts: Sequence[Option]) -> bool:
    """The last ``--deploy-mode`` says cluster (spark-submit's own rule: the last one wins)."""
    return next((v for n, v in reversed(opts) if n == "--deploy-mode"), "client") == "cluster"
