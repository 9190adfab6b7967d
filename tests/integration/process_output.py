"""Readable failure messages for subprocesses (spark-submit, schedbridge) run by the tests.

A JVM's stderr ends with shutdown chatter; the exception that caused the failure is usually far
above it, so a plain tail hides the cause. This keeps the first error lines and the tail.
"""
from __future__ import annotations

import re

_ERROR_LINE = re.compile(r"(Exception|Error|Caused by|Traceback)")


def failure_excerpt(stderr: str, head_lines: int = 40, tail_chars: int = 2000) -> str:
    """The first ``head_lines`` lines from the first error line on, then the last ``tail_chars``."""
    lines = stderr.splitlines()
    first = next((i for i, line in enumerate(lines) if _ERROR_LINE.search(line)), None)
    head = "\n".join(lines[first:first + head_lines]) if first is not None else "(no error line found)"
    return f"--- first error ---\n{head}\n--- tail ---\n{stderr[-tail_chars:]}"
