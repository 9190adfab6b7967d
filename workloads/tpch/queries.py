"""The 22 TPC-H query texts, read at run time from DuckDB's tpch extension.

The texts are never copied into the repository: `duckdb-extension-tpch` (pinned to the same
version as `duckdb`) ships the extension offline, and `tpch_queries()` returns the queries.

Dialect: DuckDB writes the queries in ANSI SQL that Spark 4.3 parses unchanged (checked for all
22: `CAST(... AS date)`, `extract(year FROM ...)`, `substring(... FROM 1 FOR 2)`, the derived
column list of Q13 and the CTE of Q15). The one adaptation `for_spark` makes is dropping the
trailing `;`, which `SparkSession.sql` rejects.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import duckdb
import duckdb_extension_tpch

_ORDER_BY = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)


def extension_path() -> Path:
    """The tpch extension file inside the `duckdb_extension_tpch` package for this duckdb."""
    package = Path(duckdb_extension_tpch.__file__).parent
    path = package / "extensions" / f"v{duckdb.__version__}" / "tpch.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: duckdb-extension-tpch must be pinned to duckdb {duckdb.__version__}")
    return path


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the tpch extension loaded (no network)."""
    con = duckdb.connect()
    con.execute(f"LOAD '{extension_path()}'")
    return con


@cache
def query_texts() -> dict[int, str]:
    """Query number (1..22) -> DuckDB's text of that query."""
    with connect() as con:
        rows = con.execute("SELECT query_nr, query FROM tpch_queries() ORDER BY query_nr").fetchall()
    return {int(number): text for number, text in rows}


def for_spark(text: str) -> str:
    """DuckDB's query text in the form `SparkSession.sql` accepts."""
    return text.strip().rstrip(";").rstrip()


def is_ordered(text: str) -> bool:
    """Whether the query fixes its row order (in TPC-H an ORDER BY is always the outermost one)."""
    return _ORDER_BY.search(text) is not None
