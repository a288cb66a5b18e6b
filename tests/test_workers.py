"""bot/service/workers.py: the report queue in front of real worker processes.

The jobs' work is swapped (ReportPool(runner=...)) for functions that wait on a file or end their
process, so queue positions, the per-user limit and a dying worker are exact; one test runs real
reports on a real index.
"""

from __future__ import annotations

import json

import os
import threading
import time
from pathlib import Path

import pytest

from bot.engine.audiences import OPERATOR
from bot.config import Settings
from bot.engine.query import parse_query
from bot.service.workers import BusyError, ReportAnswer, ReportJob, ReportPool
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


def graph_code_loaded(job: ReportJob) -> ReportAnswer:
    """Whether the worker has imported scipy's graph code by itself (within 30 s): the job imports nothing."""
    import sys

    deadline = time.monotonic() + 30
    while "scipy.sparse.csgraph" not in sys.modules and time.monotonic() < deadline:
        time.sleep(0.01)
    return ReportAnswer(str("scipy.sparse.csgraph" in sys.modules), [])


def _job(user: str, text: str = "") -> ReportJob:
    return ReportJob(parse_query(["web"], TODAY), text, user, TODAY, viewer=OPERATOR)


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


def _wait_running(pool: ReportPool, count: int) -> None:
    deadline = time.monotonic() + 30
    while pool.running() < count:
        assert time.monotonic() < deadline, "the pool never started the job"
        time.sleep(0.01)


def test_people_take_turns_and_only_a_flood_is_refused(settings, tmp_path):
    gate = tmp_path / "go"
    pool = ReportPool(settings, workers=1, per_user=3, runner=gated)
    pool.start()
    try:
        inbox = Inbox()
        assert pool.submit(_job("ann", str(gate)), inbox) == 0
        _wait_running(pool, 1)
        # ann's second and third wait; bob's first and cid's first go before ann's second (turns, not arrival)
        ahead = [pool.submit(_job(user, str(gate)), inbox) for user in ("ann", "ann", "bob", "cid")]
        assert ahead == [1, 2, 2, 3]  # behind the running one; bob behind at most one of ann's; cid behind bob too
        # issue 18: a fourth question is not refused below the flood limit; past it, one sentence
        with pytest.raises(BusyError, match=r"You already have 3 questions waiting or computing \(at most 3 at a time\)"):
            pool.submit(_job("ann", str(gate)), inbox)
        assert pool.room_for("ann") and pool.room_for("dan") is None
        gate.touch()
        answers = inbox.wait(5)
        assert [a.text.split()[0] for a in answers] == ["ann", "bob", "cid", "ann", "ann"]
        assert {a.text.split()[1] for a in answers} != {str(os.getpid())}  # computed in another process
        assert pool.submit(_job("ann", str(gate)), inbox) == 0  # done reports free the person's places
        inbox.wait(6)
    finally:
        pool.shutdown()


def quick_or_gated(job: ReportJob) -> ReportAnswer:
    """`quick` answers at once; anything else waits for its gate file (a slow report)."""
    if job.query_text == "quick":
        return ReportAnswer(f"{job.user} quick", [])
    return gated(job)


def test_one_persons_slow_reports_do_not_hold_every_worker(settings, tmp_path):
    """Issue 22: three slow reports from one person kept both workers busy; another person's quick one waited 111 s."""
    gate = tmp_path / "go"
    pool = ReportPool(settings, workers=2, runner=quick_or_gated)
    pool.start()
    try:
        inbox = Inbox()
        for _ in range(3):
            pool.submit(_job("greedy", str(gate)), inbox)
        _wait_running(pool, 1)
        pool.submit(_job("bob", "quick"), inbox)
        first = inbox.wait(1)  # before the slow ones are let go
        assert [a.text for a in first] == ["bob quick"] and not gate.exists()
        assert pool.running() == 1  # greedy runs on one worker; the other was kept for everybody else
        gate.touch()
        assert sorted(a.text.split()[0] for a in inbox.wait(4)) == ["bob", "greedy", "greedy", "greedy"]
    finally:
        pool.shutdown()


def sleeps_unless_quick(job: ReportJob) -> ReportAnswer:
    """Write this worker's pid where the job says, then compute for ever (unless it is `quick`)."""
    if job.query_text == "quick":
        return ReportAnswer(f"quick {os.getpid()}", [])
    Path(job.query_text).write_text(str(os.getpid()))
    while True:
        time.sleep(1)


def test_a_report_past_its_time_is_stopped_with_its_worker_and_the_person_told(settings, tmp_path):
    pidfile = tmp_path / "pid"
    pool = ReportPool(settings, workers=1, runner=sleeps_unless_quick, timeout=1)
    pool.start()
    try:
        inbox = Inbox()
        pool.submit(_job("ann", str(pidfile)), inbox)
        cut = inbox.wait(1)[0]
        assert cut.failed and "still computing after 1 s, so gad-bot stopped it" in cut.text
        assert "narrow it" in cut.text
        stuck = int(pidfile.read_text())
        with pytest.raises(ProcessLookupError):  # killed and reaped, not left computing
            os.kill(stuck, 0)
        pool.submit(_job("bob", "quick"), inbox)
        answer = inbox.wait(2)[1]
        assert answer.text.startswith("quick") and int(answer.text.split()[1]) != stuck  # a new worker
    finally:
        pool.shutdown()


def test_the_queue_has_a_limit_for_everyone(settings, tmp_path):
    pool = ReportPool(settings, workers=1, per_user=10, max_waiting=2, runner=gated)
    pool.start()
    try:
        gate = tmp_path / "go"
        inbox = Inbox()
        pool.submit(_job("a", str(gate)), inbox)
        _wait_running(pool, 1)  # the first is running: two may wait
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
        pool.submit(ReportJob(parse_query(["web", "format:csv"], TODAY), "web format:csv", "ann", TODAY, csv=True, viewer=OPERATOR),
                    inbox)
        pool.submit(ReportJob(parse_query(["nosuch"], TODAY), "nosuch", "ann", TODAY, viewer=OPERATOR), inbox)
        answers = sorted(inbox.wait(2), key=lambda a: a.failed)
        assert "4 person-days" in answers[0].text
        header, total = (line.split(",") for line in answers[0].csv.splitlines())  # no by: one row
        assert {k: v for k, v in zip(header, total) if k in ("two_gad", "developers", "commits", "repositories")} == {
            "two_gad": "4", "developers": "2", "commits": "2", "repositories": "web"}
        assert answers[1].failed and "No repository or project named `nosuch`" in answers[1].text
    finally:
        pool.shutdown()


def test_compare_and_its_share_run_in_the_workers_not_in_serve(tmp_path):
    """Issue 22: `compare` and Share of a compare ran in the serving process, outside the turns and limits."""
    from slack_bolt.request import BoltRequest

    from bot.engine.engine import Engine
    from bot.faces.slack import build_app
    from tests.slackstub import SlackStub, block_actions_payload, signed_interaction
    from tests.test_estimation_faces import read
    from tests.test_slack import SECRET, answer, dispatch

    web = RepoBuilder(tmp_path / "web")
    web.commit(email="ann@example.com", date="2024-01-02")
    web.commit(email="bob@example.com", date="2024-01-03")
    web.commit(email="ann@example.com", date="2024-02-05")
    lib = RepoBuilder(tmp_path / "lib")
    lib.commit(email="zed@example.org", date="2024-03-04")
    with SlackStub() as stub:
        settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                      "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
        engine = Engine.open(settings)
        engine.track(str(web.path), "web")
        engine.track(str(lib.path), "lib")
        engine = Engine.open(settings)  # the serving process's engine, nothing cached yet
        pool = ReportPool(settings, workers=1)
        pool.start()
        try:
            app, _ = build_app(settings, engine, reports=pool, socket_mode=False, today=lambda: TODAY)
            _, name = dispatch(app, stub, "compare web lib format:csv")
            message = answer(stub, name)
            # by hand: web 3 person-days (2GAD 6), lib 1 (2GAD 2)
            assert message["text"].startswith("Side by side: web, lib (all history): web 2GAD 6; lib 2GAD 2")
            assert "The CSV is in your direct messages" in read(message)
            (upload,) = stub.uploaded_files()
            assert upload.filename == "gad-compare.csv" and upload.data.decode().splitlines()[1].startswith("web,web,3,6,")
            (button,) = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
            url = stub.response_url("share")
            body, headers = signed_interaction(SECRET, block_actions_payload("gad_share", button["value"],
                                                                             response_url=url))
            app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
            replaced, shared = stub.wait_for_response("share", count=2, timeout=10)  # Share posts the kept answer
            assert replaced["replace_original"] is True and "gad_share" not in json.dumps(replaced)
            assert shared["response_type"] == "in_channel" and "Shared by <@U123>" in read(shared)
            assert "web 2GAD 6; lib 2GAD 2" in shared["text"]
            assert "direct messages" not in read(shared)  # where the asker's CSV went is no one else's business
            assert "The CSV is attached in this channel." in read(shared)  # what was seen, its file included
            dm_copy, shared_copy = stub.uploaded_files()
            assert shared_copy.filename == "gad-compare.csv" and shared_copy.channel_id != dm_copy.channel_id
            assert shared_copy.data == dm_copy.data
            assert engine.snapshots.loaded == {}  # the serving process computed neither: it never loaded a repository
        finally:
            pool.shutdown()


def test_an_idle_worker_loads_the_graph_search_before_anyones_first_range_question(settings):
    """range:, branch: and by:release need scipy's graph search, a 0.2-0.3 s import: each worker imports it
    while it waits for its first job, so that job does not pay for it."""
    pool = ReportPool(settings, workers=1, runner=graph_code_loaded)
    pool.start()
    try:
        inbox = Inbox()
        pool.submit(_job("ann"), inbox)
        assert [answer.text for answer in inbox.wait(1, timeout=60)] == ["True"]
    finally:
        pool.shutdown()
