"""Where the commands that read Spark's history (`trace import`, `estimates build`) take it from:
local event logs and folders of them, `hdfs://` paths in the cluster's HDFS (the cluster chosen
as every command chooses it, `bridge.target.config`) and Spark History Servers."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from bridge.history.historyserver import HistoryServer, history_server_url
from bridge.history.logs import EventLogError
from bridge.history.sources import RemoteSource
from bridge.history.webhdfs import SCHEME, HdfsSource
from bridge.target.config import announce, resolve

SOURCE_HELP = ("A Spark application's event log (a file, plain or zstd-compressed as Spark 4 writes it, "
               "or a rolled eventlog_v2_* folder), or a folder of them such as spark.eventLog.dir, "
               "searched at any depth; local, or in the cluster's HDFS as hdfs:///PATH (read over "
               "WebHDFS; the cluster of --hadoop-conf-dir, else $HADOOP_CONF_DIR, else $YARN_CONF_DIR, "
               "else the local testbed)")


class EventLogSource(click.ParamType):
    """A local path that exists, or an hdfs:// path (checked against the cluster when read)."""

    name = "path"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path | str:
        if isinstance(value, str) and value.startswith(SCHEME):
            return value
        return Path(str(click.Path(exists=True).convert(value, param, ctx)))


def _checked_urls(ctx: click.Context, param: click.Parameter, urls: tuple[str, ...]) -> tuple[str, ...]:
    try:
        return tuple(history_server_url(url) for url in urls)
    except EventLogError as exc:
        raise click.BadParameter(str(exc)) from None


def history_server_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--from-history-server URL`, spelt and explained the same in every command that reads history."""
    return click.option(
        "--from-history-server", "history_servers", multiple=True, metavar="URL", callback=_checked_urls,
        help="A Spark History Server's address (http://HOST:18080): every completed application it lists, "
             "its event log downloaded over its REST API. Repeatable.")(function)


def has_hdfs(given: Sequence[Path | str]) -> bool:
    return any(isinstance(source, str) for source in given)


def history_sources(given: Sequence[Path | str], history_servers: Sequence[str], conf_dir: Path | None,
                    command: str) -> list[Path | RemoteSource]:
    """The sources to read, in the order given (History Servers last). hdfs:// paths need the
    cluster, which is announced on stderr; EventLogError or HadoopConfError when it cannot serve."""
    hdfs = None
    if has_hdfs(given):
        target = resolve(conf_dir, hdfs=True)
        announce(command, target)
        hdfs = target
    found: list[Path | RemoteSource] = []
    for source in given:
        if isinstance(source, Path):
            found.append(source)
        elif hdfs is not None:
            found.append(HdfsSource(source, hdfs.webhdfs_url, hdfs.fs_default))
    return found + [HistoryServer(url) for url in history_servers]
