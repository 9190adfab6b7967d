"""Text a peer chose (application names, executor ids, the errors its requests raise), made safe
for a log line: a newline in an unauthenticated hello must not forge a line of ``serve``'s log."""
from __future__ import annotations

import logging


def printable(value: object) -> str:
    """``value`` as text, its control characters escaped as ``repr`` does (``\\n`` as two
    characters); printable text, most of it, is left as it is."""
    text = str(value)
    return text if text.isprintable() else repr(text)[1:-1]


class PeerFields(logging.Filter):
    """Escapes every argument of a record that is not a number: the loggers of the modules that
    serve peers have it, so no field of theirs, present or future, can start a line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(a if isinstance(a, (int, float)) else printable(a) for a in record.args)
        return True


def peer_logger(name: str) -> logging.Logger:
    """The logger ``name``, with :class:`PeerFields` (once, however often it is asked for)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, PeerFields) for f in logger.filters):
        logger.addFilter(PeerFields())
    return logger
