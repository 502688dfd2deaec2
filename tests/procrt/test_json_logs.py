"""procrt's JSON logs: one object per line, fields at the top level, shared by every command."""

from __future__ import annotations

import io
import json
import logging

from procrt.logs import configure, log_event


def test_named_loggers_write_one_json_object_per_line_with_their_fields() -> None:
    stream = io.StringIO()
    (logger,) = configure(["dra_capacity.test-procrt"], stream)
    log_event(logger, logging.INFO, "binder started", identity="pod-1")
    logger.debug("not at info")
    (line,) = stream.getvalue().splitlines()
    record = json.loads(line)
    assert record["level"] == "info" and record["msg"] == "binder started" and record["identity"] == "pod-1"


def test_configure_is_idempotent() -> None:
    stream = io.StringIO()
    configure(["dra_capacity.test-procrt-2"], stream)
    (logger,) = configure(["dra_capacity.test-procrt-2"], stream)
    logger.info("once")
    assert len(stream.getvalue().splitlines()) == 1
