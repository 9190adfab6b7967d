"""Uploads of generated inputs to HDFS, shared by the TPC-H and WordCount generators.

Uploads go to a temporary name and are renamed into place, so a reader (or a second replay)
never sees a half-written dataset; an existing complete target is kept as it is.
"""
from __future__ import annotations

import posixpath
import uuid
from pathlib import Path

from yarnclient.hdfs import hdfs_client


def upload(local: Path, webhdfs_url: str, hdfs_path: str, block_size: int | None = None) -> str:
    """Upload a file or directory to `hdfs_path` unless it is already there; returns the path.

    `block_size` (bytes) sets the HDFS block size of every uploaded file, which fixes the
    number of map tasks a Spark job gets when reading it.
    """
    hdfs = hdfs_client(webhdfs_url)
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
