"""Logs: one line per event, optional JSON with request ids, secrets redacted."""

from __future__ import annotations

import io
import json
import logging

import pytest

from bot.logs import setup_logging


@pytest.fixture
def captured():
    stream = io.StringIO()
    yield stream
    logging.getLogger().handlers.clear()


def test_json_lines_with_request_id_and_redaction(captured):
    setup_logging("INFO", json_lines=True, secrets=["s3cr3t-signing"], stream=captured)
    logging.getLogger("gad-bot.test").info("fetch https://bob:hunter2@example.com/x.git with s3cr3t-signing "
                                            "and xoxb-1-2-abc", extra={"request_id": "abc123"})
    entry = json.loads(captured.getvalue().strip())
    assert entry["request_id"] == "abc123" and entry["level"] == "INFO"
    assert "hunter2" not in entry["message"] and "s3cr3t-signing" not in entry["message"]
    assert "xoxb-1-2-abc" not in entry["message"] and "***" in entry["message"]


def test_text_lines_are_one_line_per_event(captured):
    setup_logging("INFO", json_lines=False, stream=captured)
    logging.getLogger("gad-bot.test").info("two\nlines", extra={"request_id": "r1"})
    lines = captured.getvalue().strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("[request=r1]") and "two\\nlines" in lines[0]


def test_tracebacks_are_redacted_too(captured):
    setup_logging("INFO", json_lines=True, secrets=["tok-ABCDEF"], stream=captured)
    try:
        raise RuntimeError("failed with tok-ABCDEF")
    except RuntimeError:
        logging.getLogger("gad-bot.test").exception("boom")
    entry = json.loads(captured.getvalue().strip())
    assert "tok-ABCDEF" not in json.dumps(entry) and "RuntimeError" in entry["traceback"]
