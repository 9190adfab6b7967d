"""Uploads to HDFS over WebHDFS, shared by the TPC-H and WordCount input generators.

Uploads go to a temporary name and are renamed into place, so a reader (or a second
replay) never sees a half-written dataset; an existing complete target is kept.
"""
from __future__ import annotations

import getpass
import posixpath
import uuid
from pathlib import Path

from hdfs import InsecureClient

TIMEOUT_S = 60.0


def client(webhdfs_url: str, user: str | None = None) -> InsecureClient:
    """A WebHDFS client (`http://namenode:9870`) with a timeout on every call."""
    return InsecureClient(webhdfs_url, user=user or getpass.getuser(), timeout=TIMEOUT_S)


def exists(webhdfs_url: str, hdfs_path: str) -> bool:
    return client(webhdfs_url).status(hdfs_path, strict=False) is not None


def upload(local: Path, webhdfs_url: str, hdfs_path: str, block_size: int | None = None) -> str:
    """Upload a file or directory to `hdfs_path` unless it is already there; returns the path.

    `block_size` (bytes) sets the HDFS block size of every uploaded file, which fixes the
    number of map tasks a Spark job gets when reading it.
    """
    hdfs = client(webhdfs_url)
    if hdfs.status(hdfs_path, strict=False) is not None:
        return hdfs_path
    parent, name = posixpath.split(hdfs_path.rstrip("/"))
    hdfs.makedirs(parent)
    temp = posixpath.join(parent, f".{name}.tmp-{uuid.uuid4().hex}")
    try:
        hdfs.upload(temp, str(local), blocksize=block_size)
        hdfs.rename(temp, hdfs_path)
    finally:
        hdfs.delete(temp, recursive=True)
    return hdfs_path
