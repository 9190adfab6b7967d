"""Event logs in HDFS, read through the NameNode's WebHDFS REST API (no `hdfs` command needed).

An `hdfs://` source is a path in the cluster's file system: `hdfs:///spark-logs` (the cluster's
`fs.defaultFS`), or `hdfs://NAMENODE:PORT/spark-logs`, which must be that same file system; the
NameNode's web address comes from the cluster's Hadoop configuration (`bridge.target.config`).
The path is an application's log (a file, whatever its name, or a rolled `eventlog_v2_*` folder)
or a folder searched at any depth as a local one is (`bridge.history.sources.event_logs`): rolled
folders and files named or starting as Spark's logs (the first `HEAD_BYTES` of a file without a
codec's suffix are read to tell). Each log is copied to a temporary folder while it is read, the
bounded readers of `bridge.history.logs` decompress it, and the copy is removed before the next.
Every call has a total deadline: the listings the client's timeouts, a copy `FETCH_SECONDS`; a
copy stops past `MAX_FETCH_BYTES`. Calls are made as `$HADOOP_USER_NAME`, else this user, as a
Hadoop client does on a cluster without Kerberos (Spark writes its logs readable by their owner
and group only).
"""
from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

from bridge.history.logs import HEAD_BYTES, ROLLED_PREFIX, EventLogError, named_as_log, starts_as_log
from bridge.history.sources import FETCH_SECONDS, MAX_FETCH_BYTES, Applications, SourceLog
from yarnclient.errors import YarnError
from yarnclient.http import RestSession

SCHEME = "hdfs://"
_PART_PREFIX = "events_"  # a rolled log's parts; its appstatus marker is not read


@dataclass(frozen=True)
class Entry:
    """One entry of a WebHDFS listing: its path, and whether it is a folder."""

    path: PurePosixPath
    folder: bool


def hdfs_path(uri: str, fs_default: str) -> PurePosixPath:
    """The path of ``uri`` in the file system ``fs_default`` (the cluster's fs.defaultFS);
    EventLogError for a URI of another file system or without an absolute path."""
    parts, default = urlsplit(uri), urlsplit(fs_default)
    if parts.scheme != "hdfs" or not parts.path.startswith("/"):
        raise EventLogError(f"{uri}: not an hdfs:// path (hdfs:///FOLDER, or hdfs://NAMENODE:PORT/FOLDER)")
    if parts.netloc and parts.netloc != default.netloc:
        raise EventLogError(f"{uri}: not in the cluster's file system {fs_default} (its fs.defaultFS): give the "
                            "Hadoop configuration of the cluster it is in, or write hdfs:///PATH")
    return PurePosixPath(parts.path)


class WebHdfs:
    """The few WebHDFS calls a reader of logs makes, against one NameNode."""

    def __init__(self, url: str, user: str | None = None) -> None:
        self.session = RestSession(url, retries=1)
        self.user = user or os.environ.get("HADOOP_USER_NAME") or getpass.getuser()

    def _params(self, op: str, **more: Any) -> dict[str, Any]:
        return {"op": op, "user.name": self.user, **more}

    @staticmethod
    def _url_path(path: PurePosixPath) -> str:
        return "/webhdfs/v1" + quote(str(path))

    def is_folder(self, path: PurePosixPath) -> bool:
        return self.session.get(self._url_path(path), lambda body: body["FileStatus"]["type"] == "DIRECTORY",
                                **self._params("GETFILESTATUS"))

    def listing(self, folder: PurePosixPath) -> list[Entry]:
        """The folder's entries by name (links and hidden entries left out, as locally)."""
        statuses = self.session.get(self._url_path(folder), lambda body: body["FileStatuses"]["FileStatus"],
                                    **self._params("LISTSTATUS"))
        entries = [Entry(folder / str(s["pathSuffix"]), s["type"] == "DIRECTORY") for s in statuses
                   if s["type"] in ("FILE", "DIRECTORY") and not str(s["pathSuffix"]).startswith(".")]
        return sorted(entries, key=lambda e: e.path.name)

    def copy(self, path: PurePosixPath, into: Path, length: int | None = None) -> None:
        """The file's bytes (its first ``length`` only, if given) into the local file ``into``."""
        params = self._params("OPEN", **({} if length is None else {"length": length}))
        with into.open("wb") as out:
            self.session.download(self._url_path(path), out, max_bytes=MAX_FETCH_BYTES, seconds=FETCH_SECONDS,
                                  params=params)

    def close(self) -> None:
        self.session.close()


class HdfsSource:
    """The logs at one hdfs:// URI (`bridge.history.sources.RemoteSource`)."""

    def __init__(self, uri: str, webhdfs_url: str, fs_default: str) -> None:
        self.uri, self.webhdfs_url = uri, webhdfs_url
        self.root = hdfs_path(uri, fs_default)
        self.prefix = uri[:len(uri) - len(urlsplit(uri).path)]  # hdfs://NAMENODE:PORT, or hdfs://

    def logs(self, applications: Applications) -> Iterator[SourceLog]:
        client = WebHdfs(self.webhdfs_url)
        try:
            found = self._found(client)
            for log in found:
                with tempfile.TemporaryDirectory(prefix="schedbridge-hdfs-") as tmp:
                    yield SourceLog(self._copied(client, log, Path(tmp)), f"{self.prefix}{log.path}")
        except YarnError as exc:
            raise EventLogError(f"{self.uri}: {exc}") from None
        finally:
            client.close()

    def _found(self, client: WebHdfs) -> list[Entry]:
        """The logs the URI is or holds: a file given is one, whatever its name."""
        root = Entry(self.root, client.is_folder(self.root))
        if not root.folder or root.path.name.startswith(ROLLED_PREFIX):
            return [root]
        found, folders = [], [root]
        while folders:
            for entry in client.listing(folders.pop().path):
                if entry.folder and entry.path.name.startswith(ROLLED_PREFIX):
                    found.append(entry)
                elif entry.folder:
                    folders.append(entry)
                elif self._looks_like_log(client, entry):
                    found.append(entry)
        if not found:
            raise EventLogError(f"{self.uri}: no Spark event log in it, at any depth")
        return sorted(found, key=lambda e: e.path)

    @staticmethod
    def _looks_like_log(client: WebHdfs, entry: Entry) -> bool:
        if named_as_log(entry.path.name):
            return True
        with tempfile.TemporaryDirectory(prefix="schedbridge-hdfs-") as tmp:
            head = Path(tmp) / "head"
            client.copy(entry.path, head, length=HEAD_BYTES)
            return starts_as_log(head.read_bytes()[:HEAD_BYTES])

    @staticmethod
    def _copied(client: WebHdfs, log: Entry, into: Path) -> Path:
        """A local copy of one log: a file, or a rolled folder's parts."""
        local = into / log.path.name
        if not log.folder:
            client.copy(log.path, local)
            return local
        local.mkdir()
        for part in client.listing(log.path):
            if not part.folder and part.path.name.startswith(_PART_PREFIX):
                client.copy(part.path, local / part.path.name)
        return local
