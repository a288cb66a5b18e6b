"""bot/faces/workers.py: the report queue in front of real worker processes.

The jobs' work is swapped (ReportPool(runner=...)) for functions that wait on a file or end their
process, so queue positions, the per-user limit and a dying worker are exact; one test runs real
reports on a real index.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from bot.config import Settings
from bot.engine.query import parse_query
from bot.faces.workers import BusyError, ReportAnswer, ReportJob, ReportPool
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder


def gated(job: ReportJob) -> ReportAnswer:
    """Wait until the file named by the job's text exists; answer with this worker's pid."""
    gate = Path(job.query_text)
    while not gate.exists():
        time.sleep(0.01)
    return ReportAnswer(f"{job.user} {os.getpid()}", [])


def dies_on_request(job: ReportJob) -> ReportAnswer:
    if job.user == "crash":
        os._exit(9)
    return ReportAnswer(f"ok {job.user}", [])


def _job(user: str, text: str = "") -> ReportJob:
    return ReportJob(parse_query(["web"], TODAY), text, user, TODAY)


class Inbox:
    def __init__(self):
        self.answers: list[ReportAnswer] = []
        self.cond = threading.Condition()

    def __call__(self, answer: ReportAnswer) -> None:
        with self.cond:
            self.answers.append(answer)
            self.cond.notify_all()

    def wait(self, count: int, timeout: float = 30) -> list[ReportAnswer]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.answers) >= count, timeout), self.answers
            return list(self.answers)


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})


def test_queue_positions_and_the_per_user_limit(settings, tmp_path):
    gate = tmp_path / "go"
    pool = ReportPool(settings, workers=1, per_user=2, runner=gated)
    pool.start()
    try:
        inbox = Inbox()
        ahead = [pool.submit(_job(user, str(gate)), inbox) for user in ("ann", "ann", "bob")]
        assert ahead == [0, 1, 2]  # the first runs, the next two wait behind it
        with pytest.raises(BusyError, match=r"You already have 2 reports on their way \(at most 2 at a time\)"):
            pool.submit(_job("ann", str(gate)), inbox)
        assert pool.room_for("ann") and pool.room_for("cid") is None
        assert pool.submit(_job("cid", str(gate)), inbox) == 3
        gate.touch()
        answers = inbox.wait(4)
        assert [a.text.split()[0] for a in answers] == ["ann", "ann", "bob", "cid"]  # first come, first served
        assert {a.text.split()[1] for a in answers} != {str(os.getpid())}  # computed in another process
        assert pool.submit(_job("ann", str(gate)), inbox) == 0  # done reports free the person's places
        inbox.wait(5)
    finally:
        pool.shutdown()


def test_the_queue_has_a_limit_for_everyone(settings, tmp_path):
    pool = ReportPool(settings, workers=1, per_user=10, max_waiting=2, runner=gated)
    pool.start()
    try:
        gate = tmp_path / "go"
        inbox = Inbox()
        pool.submit(_job("a", str(gate)), inbox)
        time.sleep(0.5)  # the first is running: two may wait
        pool.submit(_job("b", str(gate)), inbox)
        pool.submit(_job("c", str(gate)), inbox)
        with pytest.raises(BusyError, match="gad-bot has 2 reports waiting; ask again in a minute"):
            pool.submit(_job("d", str(gate)), inbox)
        gate.touch()
        inbox.wait(3)
    finally:
        pool.shutdown()


def test_a_worker_that_dies_fails_its_report_and_the_pool_recovers(settings):
    pool = ReportPool(settings, workers=1, runner=dies_on_request)
    pool.start()
    try:
        inbox = Inbox()
        pool.submit(_job("crash"), inbox)
        first = inbox.wait(1)[0]
        assert first.failed and "stopped unexpectedly" in first.text
        pool.submit(_job("after"), inbox)
        assert inbox.wait(2)[1].text == "ok after"
    finally:
        pool.shutdown()


def test_real_reports_are_computed_and_rendered_in_a_worker(settings, tmp_path):
    from bot.engine.engine import Engine

    upstream = RepoBuilder(tmp_path / "web")
    upstream.commit(email="ann@example.com", date="2024-01-02")
    upstream.commit(email="bob@example.com", date="2024-01-03")
    engine = Engine.open(settings)
    engine.track(str(upstream.path), "web")
    engine.index.close()
    pool = ReportPool(settings, workers=2)
    pool.start()
    try:
        inbox = Inbox()
        pool.submit(ReportJob(parse_query(["web", "format:csv"], TODAY), "web format:csv", "ann", TODAY, csv=True),
                    inbox)
        pool.submit(ReportJob(parse_query(["nosuch"], TODAY), "nosuch", "ann", TODAY), inbox)
        answers = sorted(inbox.wait(2), key=lambda a: a.failed)
        assert "4 person-days" in answers[0].text
        header, *_, total = (line.split(",") for line in answers[0].csv.splitlines())
        assert dict(zip(header, total)) | {"person_days": None} == {"key": "TOTAL", "two_gad": "4", "developers": "2",
                                                                  "commits": "2", "person_days": None}
        assert answers[1].failed and "No repository or project named `nosuch`" in answers[1].text
    finally:
        pool.shutdown()
