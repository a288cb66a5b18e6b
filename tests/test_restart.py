"""Nothing lost on a restart (issue 21, part 1): SIGTERM with a full queue, and a second `serve`.

The queue's work is swapped for `gated` (tests/test_workers.py: a report waits until a file
exists), so which reports are still waiting when the drain starts is exact, not a race.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading

import pytest

from bot.config import Settings
from bot.service.workers import BusyError, ReportPool
from tests.faults import ROOT, Serve, cli_env, run_cli, tracked_web, wait_until, workers_of
from tests.slackstub import SlackStub
from tests.test_workers import Inbox, _job, gated

PEOPLE = [f"U{i:03d}" for i in range(20)]


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})


def queued(settings, gate) -> tuple[ReportPool, Inbox]:
    """One worker, and each of PEOPLE with a report that waits until `gate` exists: one runs, 19 wait."""
    pool = ReportPool(settings, workers=1, per_user=1, runner=gated)
    pool.start()
    inbox = Inbox()
    for person in PEOPLE:
        pool.submit(_job(person, str(gate)), inbox)
    return pool, inbox


def test_drain_lets_the_queue_finish_within_the_grace_period(settings, tmp_path):
    gate = tmp_path / "go"
    pool, inbox = queued(settings, gate)
    cut: list[int] = []
    drainer = threading.Thread(target=lambda: cut.append(pool.drain(grace=120)))
    drainer.start()
    try:
        while pool.room_for("U999") is None:  # the drain has begun: new work is refused
            pass
        with pytest.raises(BusyError, match="shutting down; ask again in a minute"):
            pool.submit(_job("U999", str(gate)), inbox)
        gate.touch()
    finally:
        drainer.join(timeout=120)
    assert cut == [0]
    answers = inbox.wait(20)
    assert sorted(a.text.split()[0] for a in answers) == PEOPLE  # every queued person got their report
    assert not any(a.failed for a in answers)


def test_drain_tells_each_person_whose_report_is_cut_off(settings, tmp_path):
    gate = tmp_path / "never"
    pool, inbox = queued(settings, gate)
    assert pool.drain(grace=0.2) == 20  # one running, nineteen waiting: none can finish
    answers = inbox.wait(20)
    assert len(answers) == 20 and all(a.failed for a in answers)
    for answer in answers:
        assert "gad-bot restarted before your report" in answer.text and "ask again" in answer.text
        assert str(gate) in answer.text  # names the report that was asked for
    gate.touch()  # the report that was running can never be delivered twice: its worker is gone
    with pytest.raises(BusyError):
        pool.submit(_job("U999", str(gate)), inbox)
    assert len(inbox.answers) == 20


@pytest.fixture
def data(tmp_path):
    return tracked_web(tmp_path, "2024-01-02", "2024-01-03")[0]


def final_answer(stub, name: str) -> dict:
    """The one answer at a response_url, after the notice of where the report stood in the queue, if any."""
    from tests.test_slack import answer

    got = answer(stub, name, timeout=30)
    assert len([r for r in stub.responses(name) if not r.get("text", "").startswith("Queued:")]) == 1
    return got


def test_sigterm_with_a_full_queue_answers_everyone_who_was_queued(data, tmp_path):
    """20 people queued behind one worker, SIGTERM with no grace: each hears back, a report or 'ask again'."""
    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1",
                                    GAD_SHUTDOWN_GRACE_SECONDS="0") as serve:
        queued = []
        for person in PEOPLE:
            status, body, _ = serve.post(stub.slash_fields("web refs:all by:person", response_name=person,
                                                           user_id=person))
            assert status == 200, body
            queued.append(person)
        code = serve.stop(signal.SIGTERM, timeout=30)
        for person in queued:
            answer = final_answer(stub, person)  # after "Queued: ..." when it was
            text = json.dumps(answer)
            assert "2GAD" in text or ("restarted before your report" in text and "ask again" in text), text
    assert code == 0, serve.stderr
    assert "Traceback" not in serve.stderr
    assert "leaked semaphore" not in serve.stderr


def test_sigterm_with_a_stalled_queue_tells_each_person_and_the_log(data, tmp_path):
    """Reports now take milliseconds, so a queue drains before a SIGTERM lands: here serve's children are stopped
    (SIGSTOP) while 20 people ask, so every report is still queued or running when SIGTERM comes with no grace.
    Each person is told it was cut off, and the log says so: one completion line each, and how many in all."""
    import os
    import time

    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1",
                                    GAD_SHUTDOWN_GRACE_SECONDS="0") as serve:
        serve.wait_serving()  # its report worker is up: stopped below with the rest
        children = workers_of(serve.proc.pid)
        assert children, "serve has no worker processes"
        for pid in children:
            os.kill(pid, signal.SIGSTOP)
        try:
            for person in PEOPLE:
                status, body, _ = serve.post(stub.slash_fields("web by:person", response_name=person, user_id=person))
                assert status == 200, body
            serve.proc.send_signal(signal.SIGTERM)
            # the workers stay stopped until the drain (no grace) has cut everyone off: serve may first wait for
            # its stopped sync workers (seconds), and a worker resumed before the drain would answer
            wait_until("the drain's line", lambda: "did not finish within" in serve.stderr, timeout=60)
        finally:
            for pid in children:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        try:
            serve.proc.wait(timeout=30)  # the one SIGTERM is enough
        except subprocess.TimeoutExpired:
            serve.proc.send_signal(signal.SIGUSR1)  # its threads' stacks, into the log shown below
            time.sleep(1)
            serve.proc.kill()
            raise AssertionError(f"serve did not exit within 30 s of SIGTERM; its log:\n{serve.stderr[-4000:]}")
        code = serve.stop()
        for person in PEOPLE:
            answer = final_answer(stub, person)
            text = json.dumps(answer)
            assert "restarted before your report" in text and "ask again" in text, (person, text[:200], serve.stderr)
    assert code == 0, serve.stderr
    assert len(re.findall(r"report for U0\d\d on 1 names: cut_off in -", serve.stderr)) == 20, serve.stderr
    assert "shutting down: 20 report(s) did not finish within 0" in serve.stderr, serve.stderr
    assert "Traceback" not in serve.stderr and "leaked semaphore" not in serve.stderr


def test_a_second_serve_on_the_same_data_directory_is_refused(data, tmp_path):
    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "first") as first:
        assert run_cli("healthcheck", data=data).returncode == 0
        env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": "s" * 32}
        second = subprocess.run([sys.executable, "-m", "bot.faces.cli", "serve", "--port", "0", "--host", "127.0.0.1"],
                                cwd=ROOT, env=cli_env(data, **env), capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "another `gad-bot serve`" in lines[0] and str(first.proc.pid) in lines[0], lines
        # the refused one left the live one's heartbeat and lock alone
        assert (data / "serve.heartbeat").exists()
        assert run_cli("healthcheck", data=data).returncode == 0
        assert first.stop(signal.SIGTERM) == 0
    assert not (data / "serve.heartbeat").exists()
    from bot.version import package_version

    from bot.store.index import SCHEMA_VERSION

    # the start-up line, with milliseconds: version, schema, mode and data directory
    assert re.search(rf"^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{3}}Z INFO .*gad-bot {re.escape(package_version())} starting: "
                     rf"schema {SCHEMA_VERSION}, mode HTTP on 127\.0\.0\.1:{first.port}, data directory {re.escape(str(data))}$",
                     first.stderr, re.M), first.stderr


def read_only(path) -> list[str]:
    """A command prefix that runs a program with `path` mounted read-only (a private mount namespace)."""
    import shutil

    if not shutil.which("unshare"):
        pytest.skip("`unshare` is not installed")
    setup = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", setup, str(path), "true"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private read-only mount here: {probe.stderr.decode()[:200]}")
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", setup, str(path)]


def test_serve_on_a_read_only_data_directory_is_one_sentence(data):
    with SlackStub() as stub:
        env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": "s" * 32}
        result = subprocess.run([*read_only(data), sys.executable, "-m", "bot.faces.cli", "serve", "--port", "0"],
                                cwd=ROOT, env=cli_env(data, **env), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot write in its data directory" in lines[0], lines
