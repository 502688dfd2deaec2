"""Structured logs for every process: one JSON object per line on stderr, `{"time", "level", "msg", ...}`."""

from __future__ import annotations

import datetime
import json
import logging
import sys
from collections.abc import Iterable
from typing import Any, TextIO


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "msg", ...fields}`; a traceback goes into `"exception"` (operators, not clients)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, separators=(",", ":"), default=str)


def install(logger: logging.Logger, stream: TextIO | None = None) -> None:
    """Give `logger` one JSON-lines handler on `stream` (stderr by default), replacing an earlier one."""
    for handler in list(logger.handlers):
        if getattr(handler, "_dra_capacity", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._dra_capacity = True  # type: ignore[attr-defined]
    logger.addHandler(handler)


def configure(
    names: Iterable[str],
    stream: TextIO | None = None,
    level: int = logging.INFO,
    root: bool = False,
) -> list[logging.Logger]:
    """Route each named logger to `stream` as JSON lines at `level`, not to the root's handlers; idempotent.
    With `root`, every other logger (library internals, aiohttp) writes JSON lines there too, from WARNING
    up."""
    loggers = []
    for name in names:
        logger = logging.getLogger(name)
        install(logger, stream)
        logger.setLevel(level)
        logger.propagate = False
        loggers.append(logger)
    if root:
        install(logging.getLogger(), stream)
        logging.getLogger().setLevel(logging.WARNING)
    return loggers


def log_event(logger: logging.Logger, level: int, msg: str, **fields: Any) -> None:
    """One JSON line with `fields` at the top level."""
    if logger.isEnabledFor(level):
        logger.log(level, msg, extra={"fields": fields})


def flush(logger: logging.Logger) -> None:
    """Write out what the logger's handlers hold (before an `os._exit`)."""
    for handler in logger.handlers:
        handler.flush()
