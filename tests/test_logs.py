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


def test_timestamps_are_utc_with_milliseconds(captured):
    setup_logging("INFO", json_lines=True, stream=captured)
    logging.getLogger("gad-bot.test").info("sync done", extra={"repo": "web", "outcome": "ok", "seconds": 1.25})
    entry = json.loads(captured.getvalue().strip())
    import re

    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"]), entry["time"]
    assert (entry["repo"], entry["outcome"], entry["seconds"]) == ("web", "ok", 1.25)
    captured.truncate(0), captured.seek(0)
    setup_logging("INFO", json_lines=False, stream=captured)
    logging.getLogger("gad-bot.test").info("text")
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO ", captured.getvalue()), captured.getvalue()


def test_apscheduler_runs_its_jobs_without_a_line_each(captured):
    """A real BackgroundScheduler running a job: its 'Running job'/'executed successfully' INFO lines are gone."""
    import threading

    from apscheduler.schedulers.background import BackgroundScheduler

    setup_logging("INFO", stream=captured)
    ran = threading.Event()
    scheduler = BackgroundScheduler()
    scheduler.add_job(ran.set, "interval", minutes=1, next_run_time=__import__("datetime").datetime.now())
    scheduler.start()
    try:
        assert ran.wait(10)
    finally:
        scheduler.shutdown(wait=True)
    assert "apscheduler" not in captured.getvalue(), captured.getvalue()
    logging.getLogger("apscheduler.executors.default").warning("a job missed its run time")
    assert "missed its run time" in captured.getvalue()  # its warnings still show
