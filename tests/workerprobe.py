"""Jobs for workers in tests/test_startup.py: a report worker's runner that answers a real report, then says which
modules its process has loaded; an index worker's job that says them, and its pid. The worker unpickles it by name, so this module imports nothing a worker would not."""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from bot.service.workers import ReportAnswer, ReportJob, run_report


def report_then_modules(job: ReportJob) -> ReportAnswer:
    answer = run_report(job)
    said = {"text": answer.text, "failed": answer.failed, "modules": sorted(sys.modules)}
    return dataclasses.replace(answer, text=json.dumps(said))


def modules_and_pid() -> dict:
    return {"pid": os.getpid(), "modules": sorted(sys.modules)}
