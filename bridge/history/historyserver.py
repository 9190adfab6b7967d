"""Event logs from a Spark History Server, through its REST API.

`GET /api/v1/applications` lists the applications the server knows, each with its attempts,
newest first; `GET /api/v1/applications/{id}[/{attempt}]/logs` answers a zip of that attempt's
event log files as Spark wrote them (a file, or a rolled `eventlog_v2_*` folder with its parts).
Each completed application is read once, from its newest attempt (an application found in an
earlier source is not downloaded at all); one still running is left out with a note, since its
log is still being written. Every call has a total deadline: the listing the client's timeouts,
a download `FETCH_SECONDS`; a download stops past `MAX_FETCH_BYTES`, and its unpacking at the
sizes the zip declares (which add up to at most that); a zip of more than `MAX_MEMBERS` entries,
or with one leaving its folder, is refused. The copy lives in a temporary folder while the bounded readers of
`bridge.history.logs` read it, and is removed before the next application.
"""
from __future__ import annotations

import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

from bridge.history.logs import EventLogError
from bridge.history.sources import FETCH_SECONDS, MAX_FETCH_BYTES, Applications, SourceLog, event_logs
from yarnclient.errors import YarnError
from yarnclient.http import RestSession

API = "/api/v1/applications"
MAX_MEMBERS = 10_000
"""The most entries unpacked from one application's zip: a rolled log of 128 MiB parts holds far
fewer before it reaches `MAX_FETCH_BYTES`."""
_CHUNK = 1 << 20
_SHAPE_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError)
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError)


@dataclass(frozen=True)
class Listed:
    """An application as the server lists it: its id, its newest attempt's id ("" when the
    application has no attempt ids, as outside YARN cluster mode) and whether that attempt ended."""

    app_id: str
    attempt: str
    completed: bool

    @classmethod
    def parse(cls, raw: Any) -> Listed:
        newest = raw["attempts"][0]
        return cls(str(raw["id"]), str(newest.get("attemptId") or ""), bool(newest["completed"]))

    @property
    def logs_path(self) -> str:
        attempt = f"/{quote(self.attempt, safe='')}" if self.attempt else ""
        return f"{API}/{quote(self.app_id, safe='')}{attempt}/logs"


def history_server_url(url: str) -> str:
    """``url`` without a trailing slash; EventLogError unless it is an http(s) address of a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise EventLogError(f"{url}: not a History Server's address (http://HOST:18080)")
    return url.rstrip("/")


class HistoryServer:
    """The logs of a History Server's applications (`bridge.history.sources.RemoteSource`)."""

    def __init__(self, url: str) -> None:
        self.url = history_server_url(url)

    def logs(self, applications: Applications) -> Iterator[SourceLog]:
        session = RestSession(self.url, retries=1)
        try:
            for app in self._listed(session):
                where = f"{self.url}{API}/{app.app_id}"
                if not app.completed:
                    applications.notes.append(f"skipped {where}: application {app.app_id}, still running")
                elif not applications.known(app.app_id, where):
                    with tempfile.TemporaryDirectory(prefix="schedbridge-history-") as tmp:
                        yield from self._unpacked(session, app, Path(tmp))
        finally:
            session.close()

    def _listed(self, session: RestSession) -> list[Listed]:
        try:
            body = session.request("GET", API)
        except YarnError as exc:
            raise EventLogError(f"{self.url}: cannot list its applications: {exc}") from None
        try:
            return [Listed.parse(raw) for raw in body]
        except _SHAPE_ERRORS as exc:
            raise EventLogError(f"{self.url}{API} did not answer as a Spark History Server does "
                                f"({type(exc).__name__}: {exc})") from None

    def _unpacked(self, session: RestSession, app: Listed, tmp: Path) -> Iterator[SourceLog]:
        """The logs of the application's zip, unpacked in ``tmp``."""
        url = f"{self.url}{app.logs_path}"
        archive, folder = tmp / "logs.zip", tmp / "logs"
        try:
            with archive.open("wb") as out:
                session.download(app.logs_path, out, max_bytes=MAX_FETCH_BYTES, seconds=FETCH_SECONDS)
        except YarnError as exc:
            raise EventLogError(f"{url}: application {app.app_id}: {exc}") from None
        unpack(archive, folder, f"{url}: application {app.app_id}")
        try:
            logs = event_logs(folder)
        except EventLogError:
            raise EventLogError(f"{url}: application {app.app_id}: no Spark event log in its zip") from None
        for log in logs:
            yield SourceLog(log, f"{url}/{log.relative_to(folder)}")


def unpack(archive: Path, into: Path, where: str) -> None:
    """The files of a zip of event logs into ``into``, each within the size the zip declares for
    it; EventLogError naming ``where`` for a zip that is none, too large, or reaches outside."""
    try:
        with zipfile.ZipFile(archive) as packed:
            members = [m for m in packed.infolist() if not m.is_dir()]
            if len(members) > MAX_MEMBERS:
                raise EventLogError(f"{where}: a zip of {len(members)} files, more than the {MAX_MEMBERS} read")
            if sum(m.file_size for m in members) > MAX_FETCH_BYTES:
                raise EventLogError(f"{where}: a zip of more than {MAX_FETCH_BYTES} bytes unpacked, the most read")
            for member in members:
                _unpack_one(packed, member, into / _inside(member.filename, where))
    except EventLogError:
        raise
    except _ZIP_ERRORS as exc:
        raise EventLogError(f"{where}: not a readable zip of event logs ({type(exc).__name__}: {exc})") from None


def _inside(name: str, where: str) -> PurePosixPath:
    """A member's path, refused when it would land outside the folder it is unpacked in."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts:
        raise EventLogError(f"{where}: the zip holds {name[:200]!r}, a path outside its folder")
    return path


def _unpack_one(packed: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path) -> None:
    """One file, streamed: zipfile stops at the size the zip declares for it (a CRC error then, for
    data that inflates past it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with packed.open(member) as source, target.open("wb") as out:
        shutil.copyfileobj(source, out, _CHUNK)
