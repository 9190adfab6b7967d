"""The one table renderer: every command's tables, on the terminal (`text`) or in Markdown files
(`markdown`), with the same cells.

A cell is a count as an integer, any other number to 3 significant digits without an exponent
(so a JCT of 1234.5 s reads 1230, not 1.23e+03), a missing value (None, NaN) as "-", and
anything else (labels, already formatted figures) as given.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import TypeAlias

import numpy as np
import pandas as pd

Rows: TypeAlias = "pd.DataFrame | Sequence[Mapping[str, object]]"


def cell(value: object) -> str:
    """One value as the tables show it (see the module docstring)."""
    if value is None or (isinstance(value, Real) and not isinstance(value, bool) and math.isnan(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        return str(value)
    number = float(value)
    if number.is_integer() and abs(number) >= 1:
        return f"{number:.0f}"
    return np.format_float_positional(number, precision=3, unique=True, fractional=False, trim="-")


def _frame(rows: Rows, columns: Sequence[str] | None) -> pd.DataFrame:
    """The rows as a frame of formatted cells, restricted to (and ordered by) `columns`."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if columns is not None:
        frame = frame.reindex(columns=list(columns))
    return frame.apply(lambda col: col.map(cell)).astype(str)


def text(rows: Rows, columns: Sequence[str] | None = None, index: bool = False) -> str:
    """A plain-text table for the terminal, columns right-aligned; `index` shows a frame's row
    labels (the report's measures) as the first column."""
    return _frame(rows, columns).to_string(index=index)


def markdown(rows: Rows, columns: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table of the same cells (no dependency beyond pandas)."""
    frame = _frame(rows, columns)
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"
