"""Read addresses out of a Hadoop configuration directory (HADOOP_CONF_DIR)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from yarnclient.errors import YarnError


class HadoopConfError(YarnError):
    """A configuration directory is missing a file or a key, or holds malformed XML."""


def read_site(path: Path) -> dict[str, str]:
    """The name → value pairs of one `*-site.xml` file."""
    if not path.is_file():
        raise HadoopConfError(f"{path}: no such file (is HADOOP_CONF_DIR right?)")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise HadoopConfError(f"{path}: malformed XML: {exc}") from exc
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name:
            props[name.strip()] = (value or "").strip()
    return props


def rm_webapp_url(conf_dir: Path) -> str:
    """The ResourceManager's REST base URL from yarn-site.xml."""
    props = read_site(conf_dir / "yarn-site.xml")
    address = props.get("yarn.resourcemanager.webapp.address")
    if not address:
        host = props.get("yarn.resourcemanager.hostname")
        if not host:
            raise HadoopConfError(f"{conf_dir / 'yarn-site.xml'}: neither yarn.resourcemanager."
                                  "webapp.address nor yarn.resourcemanager.hostname is set")
        address = f"{host}:8088"
    return f"http://{address}"


def webhdfs_url(conf_dir: Path) -> str:
    """The NameNode's WebHDFS base URL from hdfs-site.xml (falls back to core-site's host)."""
    props = read_site(conf_dir / "hdfs-site.xml")
    address = props.get("dfs.namenode.http-address")
    if not address:
        default_fs = read_site(conf_dir / "core-site.xml").get("fs.defaultFS", "")
        host = default_fs.removeprefix("hdfs://").split(":")[0].split("/")[0]
        if not host:
            raise HadoopConfError(f"{conf_dir}: no dfs.namenode.http-address and no hdfs:// "
                                  "fs.defaultFS to derive it from")
        address = f"{host}:9870"
    return f"http://{address}"
