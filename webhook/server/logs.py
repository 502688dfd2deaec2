"""Structured logs: one JSON object per line on stderr, one line per admission decision.

Decision lines carry identifiers and timings only (uid, name, operation, endpoint, allowed, duration_ms,
dryRun); object bodies are never logged at info level, since DeviceClass parameters may hold vendor secrets.
"""

from __future__ import annotations

import logging
from typing import Any, TextIO

from procrt import logs as procrt_logs
from procrt.logs import JsonFormatter, log_event

__all__ = ["LOGGER_NAME", "JsonFormatter", "configure", "get_logger", "log_decision", "log_event"]

LOGGER_NAME = "dra_capacity.webhook"


def configure(stream: TextIO | None = None, level: int = logging.INFO, root: bool = False) -> logging.Logger:
    """Route the webhook logger to `stream` (stderr by default) as JSON lines (procrt/logs.py); idempotent.
    With `root`, every other logger (admission internals, aiohttp) also writes JSON lines there, from WARNING
    up."""
    (logger,) = procrt_logs.configure([LOGGER_NAME], stream, level, root)
    return logger


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


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
