"""JSON-lines logging: one object per line, fields at the top level, tracebacks in a field of their own."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from webhook.server import logs


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_decision_line_is_one_json_object_with_its_fields() -> None:
    out = io.StringIO()
    logger = logs.configure(stream=out)
    logs.log_decision(
        logger,
        uid="u",
        name="gpu",
        operation="CREATE",
        endpoint="validate",
        allowed=True,
        duration_ms=1.23456,
        dry_run=False,
        outcome="allowed",
    )
    (line,) = out.getvalue().splitlines()
    record = json.loads(line)
    assert record["msg"] == "admission decision" and record["level"] == "info"
    assert record["duration_ms"] == 1.235
    assert {"uid", "name", "operation", "endpoint", "allowed", "dryRun", "time"} <= record.keys()


def test_exception_traceback_stays_inside_one_line() -> None:
    out = io.StringIO()
    logger = logs.configure(stream=out)
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed", extra={"fields": {"uid": "u"}})
    (line,) = out.getvalue().splitlines()
    record = json.loads(line)
    assert record["uid"] == "u" and "ValueError: boom" in record["exception"]


def test_configure_twice_writes_each_line_once() -> None:
    out = io.StringIO()
    logs.configure(stream=io.StringIO())
    logger = logs.configure(stream=out)
    logs.log_event(logger, logging.INFO, "hello")
    assert len(out.getvalue().splitlines()) == 1


def test_root_option_turns_other_loggers_warnings_into_json(restore_root: None) -> None:
    out = io.StringIO()
    logs.configure(stream=out, root=True)
    logging.getLogger("webhook.deviceclass.admission").warning("from a teammate's module")
    logging.getLogger("webhook.deviceclass.admission").info("below the root level")
    (line,) = out.getvalue().splitlines()
    assert json.loads(line)["msg"] == "from a teammate's module"


def test_below_level_events_are_not_written() -> None:
    out = io.StringIO()
    logger = logs.configure(stream=out, level=logging.WARNING)
    logs.log_event(logger, logging.INFO, "quiet")
    assert out.getvalue() == ""
