"""The one table renderer: every command's tables, on the terminal (`text`) or in Markdown files
(`markdown`), with the same cells.

A cell is a count as an integer, any other number to 3 significant digits without an exponent
(so a JCT of 1234.5 s reads 1230, not 1.23e+03), a missing value (None, NaN) as "-", and
anything else (labels, already formatted figures) as given.

pandas is imported only for a DataFrame's rows or a Markdown table: `text` of a list of rows
lays the cells out itself, as `DataFrame.to_string` would, so a command that prints a table of a
few rows (`simulate`) does not load pandas for it (~75 MB).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

if TYPE_CHECKING:
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
    import pandas as pd

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if columns is not None:
        frame = frame.reindex(columns=list(columns))
    return frame.apply(lambda col: col.map(cell)).astype(str)


def text(rows: Rows, columns: Sequence[str] | None = None, index: bool = False) -> str:
    """A plain-text table for the terminal, columns right-aligned; `index` shows a frame's row
    labels (the report's measures) as the first column."""
    if not index and isinstance(rows, Sequence):
        laid_out = _text_of_rows(rows, columns)
        if laid_out is not None:
            return laid_out
    return _frame(rows, columns).to_string(index=index)


def _text_of_rows(rows: Sequence[Mapping[str, object]], columns: Sequence[str] | None) -> str | None:
    """`text` of a list of rows without pandas: the columns are the rows' keys in order of first
    appearance (or `columns`), a missing cell is "-", each column is right-aligned to its widest
    cell or header and one space separates columns, as `DataFrame.to_string(index=False)` lays
    out a frame of strings. None for no rows or no columns, which pandas prints its own way."""
    if columns is None:
        names: dict[str, None] = {}
        for row in rows:
            names.update(dict.fromkeys(row))
        columns = list(names)
    if not rows or not columns:
        return None
    table = [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(str(c)), *(len(r[i]) for r in table)) for i, c in enumerate(columns)]
    lines = [" ".join(str(c).rjust(w) for c, w in zip(columns, widths))]
    lines += [" ".join(v.rjust(w) for v, w in zip(r, widths)) for r in table]
    return "\n".join(lines)


def markdown(rows: Rows, columns: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table of the same cells (no dependency beyond pandas)."""
    frame = _frame(rows, columns)
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"
