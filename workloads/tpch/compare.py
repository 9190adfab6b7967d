"""Comparing two query results: Spark's against DuckDB's reference answer.

Engines differ in numeric types (Spark keeps `avg` of a decimal as a decimal of scale 6, DuckDB
returns a double), so numbers are compared with a tolerance. Rows are compared in order only
when the query has an ORDER BY; otherwise both sides are sorted first.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal
from numbers import Real
from typing import Any

REL_TOL = 1e-6
ABS_TOL = 1e-4


@dataclass(frozen=True)
class Comparison:
    """The verdict, and for a mismatch the first difference in words."""

    equal: bool
    detail: str = ""


def plain(value: Any) -> Any:
    """One comparable (and JSON) representation per value: numbers as float, dates as ISO strings."""
    if isinstance(value, (Decimal, Real)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def _sort_key(row: tuple) -> tuple:
    """Orders rows of mixed types; floats rounded so tolerance-level noise does not reorder."""
    return tuple((v is None, round(v, 2) if isinstance(v, float) else v)
                 for v in row)


def _values_equal(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    return a == b


def compare_results(actual: list[tuple], expected: list[tuple], ordered: bool,
                    rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL) -> Comparison:
    """Whether `actual` equals `expected` row by row, within the numeric tolerance."""
    left = [tuple(plain(v) for v in row) for row in actual]
    right = [tuple(plain(v) for v in row) for row in expected]
    if len(left) != len(right):
        return Comparison(False, f"{len(left)} rows, expected {len(right)}")
    if not ordered:
        left, right = sorted(left, key=_sort_key), sorted(right, key=_sort_key)
    for index, (a_row, b_row) in enumerate(zip(left, right)):
        if len(a_row) != len(b_row):
            return Comparison(False, f"row {index}: {len(a_row)} columns, expected {len(b_row)}")
        for column, (a, b) in enumerate(zip(a_row, b_row)):
            if not _values_equal(a, b, rel_tol, abs_tol):
                return Comparison(False, f"row {index} column {column}: {a!r} != {b!r}")
    return Comparison(True)
