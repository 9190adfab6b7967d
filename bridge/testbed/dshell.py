"""Run a shell command on the cluster with YARN's distributed-shell ApplicationMaster.

This is the plain-YARN example application (no Spark): it shows that a client can submit a
real application through the ResourceManager's REST API alone.
"""
from __future__ import annotations

import shlex
import struct
import time
import uuid
from pathlib import Path

from hdfs import InsecureClient

from bridge.common.paths import hadoop_apps_dir
from yarnclient import Application, ResourceManagerClient
from yarnclient.submission import AppSubmission, LocalResource

AM_CLASS = "org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster"


def _upload(hdfs: InsecureClient, fs_default: str, local: Path | None, data: bytes | None,
            remote: str) -> LocalResource:
    if local is not None:
        hdfs.upload(remote, str(local), overwrite=True)
    else:
        hdfs.write(remote, data=data, overwrite=True)
    status = hdfs.status(remote)
    return LocalResource(url=f"{fs_default}{remote}", size=status["length"],
                         timestamp_ms=status["modificationTime"])


def _java_utf(text: str) -> bytes:
    data = text.encode()
    if len(data) > 0xFFFF:
        raise ValueError("distributed-shell command longer than 65535 bytes")
    return struct.pack(">H", len(data)) + data


def distributed_shell(hdfs: InsecureClient, fs_default: str, conf_dir: Path, hadoop_lib: Path,
                      command: list[str], containers: int = 1, name: str = "schedbridge-dshell"
                      ) -> AppSubmission:
    """Stage the AM jar and the command in HDFS and describe the application."""
    jars = sorted(hadoop_apps_dir().glob("hadoop-yarn-applications-distributedshell-*.jar"))
    if not jars:
        raise FileNotFoundError(f"distributed-shell jar not found in {hadoop_apps_dir()}: run `make setup`")
    staging = f"/schedbridge/dshell/{uuid.uuid4().hex}"
    resources = {
        "AppMaster.jar": _upload(hdfs, fs_default, jars[-1], None, f"{staging}/AppMaster.jar"),
        # The AM reads the command to run in each container from this file, written the way
        # Java's DataOutputStream.writeUTF writes it (a 2-byte length, then the bytes).
        "shellCommands": _upload(hdfs, fs_default, None, _java_utf(shlex.join(command)),
                                 f"{staging}/shellCommands"),
    }
    am = (f"{{{{JAVA_HOME}}}}/bin/java -Xmx128m {AM_CLASS} --container_memory 128 "
          f"--container_vcores 1 --num_containers {containers} --priority 0 "
          "1><LOG_DIR>/AppMaster.stdout 2><LOG_DIR>/AppMaster.stderr")
    # The AM's own extra jars (Jersey 1) come after the cluster's, so they never shadow them.
    extra = [str(jar) for jar in sorted(hadoop_apps_dir().glob("jersey-*.jar"))]
    classpath = "<CPS>".join(["{{CLASSPATH}}", "./*", str(conf_dir), f"{hadoop_lib}/*", *extra])
    return AppSubmission(name=name, command=am, memory_mb=256, local_resources=resources,
                         environment={"CLASSPATH": classpath})


def submit(rm: ResourceManagerClient, app: AppSubmission) -> str:
    """Reserve an id, submit, return the application id."""
    app_id = rm.new_application()["application-id"]
    rm.submit_application(app.to_json(app_id))
    return app_id


def wait_until_done(rm: ResourceManagerClient, app_id: str, timeout_s: float = 120) -> Application:
    """Poll until the application reaches a final state; TimeoutError names its last state."""
    deadline = time.monotonic() + timeout_s
    app = rm.app(app_id)
    while not app.is_done:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{app_id} still {app.state} after {timeout_s:.0f} s")
        time.sleep(0.5)
        app = rm.app(app_id)
    return app
