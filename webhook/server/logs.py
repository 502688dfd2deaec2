"""Structured logs: one JSON object per line on stderr, one line per admission decision.

Decision lines carry identifiers and timings only (uid, name, operation, endpoint, allowed, duration_ms,
dryRun); object bodies are never logged at info level, since DeviceClass parameters may hold vendor secrets.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any, TextIO

LOGGER_NAME = "dra_capacity.webhook"


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


def _install(logger: logging.Logger, stream: TextIO | None) -> None:
    for handler in list(logger.handlers):
        if getattr(handler, "_dra_capacity", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._dra_capacity = True  # type: ignore[attr-defined]
    logger.addHandler(handler)


def configure(stream: TextIO | None = None, level: int = logging.INFO, root: bool = False) -> logging.Logger:
    """Route the webhook logger to `stream` (stderr by default) as JSON lines; idempotent. With `root`, every
    other logger (admission internals, aiohttp) also writes JSON lines there, from WARNING up."""
    logger = logging.getLogger(LOGGER_NAME)
    _install(logger, stream)
    logger.setLevel(level)
    logger.propagate = False
    if root:
        _install(logging.getLogger(), stream)
        logging.getLogger().setLevel(logging.WARNING)
    return logger


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


def log_event(logger: logging.Logger, level: int, msg: str, **fields: Any) -> None:
    """One JSON line with `fields` at the top level."""
    if logger.isEnabledFor(level):
        logger.log(level, msg, extra={"fields": fields})


def log_decision(
    logger: logging.Logger,
    *,
    uid: str,
    name: str,
    operation: str,
    endpoint: str,
    allowed: bool,
    duration_ms: float,
    dry_run: bool,
    outcome: str,
    warnings: int = 0,
    causes: list[str] | None = None,
) -> None:
    """The line written for every well-formed review answered."""
    fields: dict[str, Any] = {
        "uid": uid,
        "name": name,
        "operation": operation,
        "endpoint": endpoint,
        "allowed": allowed,
        "outcome": outcome,
        "duration_ms": round(duration_ms, 3),
        "dryRun": dry_run,
    }
    if warnings:
        fields["warnings"] = warnings
    if causes:
        fields["causes"] = causes
    log_event(logger, logging.INFO, "admission decision", **fields)
