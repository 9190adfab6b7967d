"""TOML text as a table, with every way a hostile file fails as one `tomllib.TOMLDecodeError`.

`tomllib` parses arrays and inline tables recursively: a file nested a few thousand deep (16 KB of
``a = [[[[...``) raised RecursionError through every reader of TOML (cluster, agents, workload and
demo files), a traceback where a line naming the file was due.
"""
from __future__ import annotations

import tomllib
from typing import Any


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads``, a file nested too deeply for it one TOMLDecodeError too."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("arrays or inline tables nested too deeply") from None
