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


def pid_and_parent() -> tuple[int, int]:
    return os.getpid(), os.getppid()


def a_child_asked_here(refused: bool = False) -> dict:
    """In a worker forked from a fork server: ask for a child of its own (as a sync worker asks for a fetch) and say
    who forked whom. refused=True: the server this worker was forked from refuses it first (its address names
    nothing any more)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import forkserver

    from bot.spawning import worker_context

    if refused:
        forkserver._forkserver._forkserver_address = "\0gad-bot-test-no-such-server"
    with ProcessPoolExecutor(1, mp_context=worker_context()) as pool:
        child, its_parent = pool.submit(pid_and_parent).result(60)
        grandparent = int(open(f"/proc/{its_parent}/stat").read().rsplit(")", 1)[1].split()[1])
    return {"worker": os.getpid(), "worker_parent": os.getppid(), "child": child, "child_parent": its_parent,
            "child_grandparent": grandparent}
