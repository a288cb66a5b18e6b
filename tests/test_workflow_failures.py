"""The Workflow step's failure sentence when gad-bot itself fails (a bug, not the inputs): the workflow's owner reads
one sentence with a reference the operator finds in the logs, never the exception, whether the report ran in the
serving process or in a report worker (bot/faces/workflow.py: internal_error_sentence). tests/test_workflow.py
covers wrong inputs, the time limit, the flood limit and errors that name the server's insides."""

from __future__ import annotations

import logging
import re

from tests.test_workflow import app, run_step, served, stub  # noqa: F401  (app, stub: fixtures)

INSIDES = "KeyError: 'generation' in /srv/gad/bot/engine/snapshots.py"
SENTENCE = (r"Something went wrong on gad-bot's side \(reference ([0-9a-f]{8})\); the operator can find the details "
            r"in the logs\.")


def report_that_breaks(*args, **kwargs):
    raise RuntimeError(INSIDES)


def breaks_in_the_worker(job):
    """The report workers' run_report on an engine whose report raises a bug (module-level: pickled by name)."""
    from bot.service import workers

    workers._engine.report = report_that_breaks
    return workers.run_report(job)


def test_a_bug_fails_the_step_with_a_reference_and_the_log_has_it(app, stub, monkeypatch, caplog):
    from bot.engine.engine import Engine

    monkeypatch.setattr(Engine, "report", report_that_breaks)
    error = run_step(app, stub, {"repository": "web"}, "functions.completeError")["error"]
    found = re.fullmatch(SENTENCE, error)
    assert found, error
    assert INSIDES not in error and stub.calls_to("functions.completeSuccess") == []
    logged = [r for r in caplog.records if found.group(1) in r.getMessage()]
    assert logged
    # the traceback is the record's exc_info, or its exc_text once gad-bot's own log handler (bot/logs.py, left
    # installed by an earlier in-process CLI test of this worker) has redacted it: either way, the log has it
    trace = logged[0].exc_text if logged[0].exc_info is None else logging.Formatter().formatException(logged[0].exc_info)
    assert INSIDES in (trace or "")


def test_under_serve_a_bug_in_the_worker_fails_the_step_with_the_workers_reference(tmp_path, stub, start_pool):
    app, _, _ = served(tmp_path, stub, start_pool, runner=breaks_in_the_worker)
    error = run_step(app, stub, {"repository": "web"}, "functions.completeError")["error"]
    assert re.fullmatch(SENTENCE, error), error
    assert INSIDES not in error and stub.calls_to("functions.completeSuccess") == []
