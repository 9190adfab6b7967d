"""HDFS access through WebHDFS, using the `hdfs` package."""
from __future__ import annotations

import getpass
from pathlib import Path

from hdfs import InsecureClient

from yarnclient.hadoopconf import webhdfs_url


def hdfs_client(url_or_conf_dir: str | Path, *, user: str | None = None,
                timeout: float = 30.0) -> InsecureClient:
    """A WebHDFS client from a NameNode URL (`http://nn:9870`) or a HADOOP_CONF_DIR."""
    target = str(url_or_conf_dir)
    url = target if target.startswith(("http://", "https://")) else webhdfs_url(Path(target))
    return InsecureClient(url, user=user or getpass.getuser(), timeout=timeout)


def hdfs_writable(url_or_conf_dir: str | Path, *, user: str | None = None) -> bool:
    """Whether a small file can be written now.

    A NameNode answers reads while still in safe mode or before any DataNode has registered;
    only a write shows the cluster is ready for work. Callers poll this against a deadline.
    """
    try:
        hdfs_client(url_or_conf_dir, user=user, timeout=5).write(
            "/tmp/.schedbridge-ready", data=b"ok", overwrite=True)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not yet"; the caller's deadline bounds it
        return False
