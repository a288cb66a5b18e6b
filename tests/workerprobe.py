"""A report worker's runner for tests/test_startup.py: it answers a real report, then says which modules its
process has loaded. The worker unpickles it by name, so this module imports nothing a worker would not."""

from __future__ import annotations

import dataclasses
import json
import sys

from bot.service.workers import ReportAnswer, ReportJob, run_report


def report_then_modules(job: ReportJob) -> ReportAnswer:
    answer = run_report(job)
    said = {"text": answer.text, "failed": answer.failed, "modules": sorted(sys.modules)}
    return dataclasses.replace(answer, text=json.dumps(said))
