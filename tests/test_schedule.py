"""The scheduler in `serve`: jobs rebuilt from the database, catch-up at start, periodic sync with back-off."""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from bot.digests import subscriptions as subs
from bot.digests.digest import Ledger, run_due_digests
from bot.engine.query import Subscribe, Unsubscribe
from bot.digests.schedule import DigestScheduler, job_id, sync_due_repos
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub
from tests.test_digest import CREATED, DUE, WEEK, factory, make_engine, posts, tracking_engine

UTC = timezone.utc


@pytest.fixture
def engine(tmp_path):
    return tracking_engine(tmp_path, GAD_SYNC_INTERVAL_MINUTES="15")


@pytest.fixture
def stub():
    with SlackStub() as s:
        yield s


class Clock:
    def __init__(self, moment: datetime):
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def scheduler(engine, stub):
    made: list[DigestScheduler] = []

    def make(clock=None, **kw) -> DigestScheduler:
        s = DigestScheduler(engine.settings, engine, factory(stub), clock=clock or Clock(DUE - timedelta(days=3)), **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.shutdown(wait=True)


def test_start_builds_one_job_per_active_subscription(engine, scheduler):
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    subs.subscribe(engine, "C2", Subscribe(("api",), day="fri", at=time(16, 30), tz="Europe/London"), now=CREATED)
    subs.subscribe(engine, "C3", Subscribe(("docs",)), now=CREATED)
    subs.pause(engine.index, "C3", "is_archived")
    s = scheduler()
    s.start()
    assert s.digest_job_ids() == ["digest:C1", "digest:C2"]
    ids = {job.id for job in s.scheduler.get_jobs()}
    assert {"digest-sweep", "sync", "subscriptions-watch"} <= ids
    job = s.scheduler.get_job("digest:C2")
    assert job.trigger.timezone == ZoneInfo("Europe/London")
    assert "day_of_week='fri'" in str(job.trigger) and "hour='16'" in str(job.trigger)
    assert s.scheduler.get_job("sync").trigger.interval == timedelta(minutes=15)
    # the cron job fires exactly when the digest falls due
    now = datetime.now(UTC)
    sub = subs.get(engine.index, "C2")
    assert job.next_run_time == sub.next_due(now)[1]


def test_reload_follows_subscribe_change_and_unsubscribe(engine, scheduler):
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    s = scheduler()
    s.start()
    subs.subscribe(engine, "C4", Subscribe(("web",), tz="Asia/Tokyo"), now=CREATED)
    s.reload()
    assert s.digest_job_ids() == ["digest:C1", "digest:C4"]
    subs.subscribe(engine, "C4", Subscribe(("web",), at=time(7, 15)), now=CREATED)
    s.reload()
    trigger = s.scheduler.get_job("digest:C4").trigger
    assert "hour='7'" in str(trigger) and "minute='15'" in str(trigger) and trigger.timezone == ZoneInfo("Asia/Tokyo")
    subs.unsubscribe(engine, "C1", Unsubscribe(("all",)))
    subs.pause(engine.index, "C4", "channel_not_found")
    s.reload()
    assert s.digest_job_ids() == []


def test_changes_made_elsewhere_are_noticed(engine, scheduler, tmp_path):
    s = scheduler()
    s.reload()  # not started: the jobs are pending, which is enough to see them
    other = make_engine(tmp_path)  # e.g. another process on the same data directory
    subs.subscribe(other, "C7", Subscribe(("web",)), now=CREATED)
    assert s.digest_job_ids() == []
    s.watch()
    assert s.digest_job_ids() == [job_id("C7")]


def test_catch_up_at_start_delivers_what_fell_due_while_down(engine, stub, scheduler):
    subs.subscribe(engine, "C1", Subscribe(("web", "api")), now=CREATED)
    s = scheduler(clock=Clock(DUE + timedelta(hours=5)))  # the bot was down at 09:00
    s.start()
    stub.wait_for("chat.postMessage", 1, timeout=30)
    s.shutdown(wait=True)
    assert len(posts(stub, "C1")) == 1
    assert Ledger(engine.index).get("C1", WEEK).state == "posted"
    # a second start (a restart) posts nothing more
    again = scheduler(clock=Clock(DUE + timedelta(hours=6)))
    assert again.sweep() == []
    assert len(stub.calls_to("chat.postMessage")) == 1


def test_cron_job_firing_twice_in_the_repeated_hour_posts_once(engine, stub, scheduler):
    subs.subscribe(engine, "CO", Subscribe(("web",), day="sun", at=time(1, 30), tz="Europe/London"),
                   now=datetime(2026, 10, 20, tzinfo=UTC))
    clock = Clock(datetime(2026, 10, 25, 0, 30, tzinfo=UTC))
    s = scheduler(clock=clock)
    assert [r.state for r in s.run_channel("CO")] == ["posted"]
    clock.moment = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)  # 01:30 again, now GMT
    assert s.run_channel("CO") == []
    assert len(posts(stub, "CO")) == 1


def test_sweep_is_a_no_op_when_nothing_is_owed(engine, stub, scheduler):
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    s = scheduler(clock=Clock(DUE - timedelta(minutes=1)))
    assert s.sweep() == [] and stub.calls == []


def test_periodic_sync_honours_back_off(engine):
    calls: list[str] = []
    real = engine.sync_one

    def counting(repo, **kw):
        calls.append(repo.name)
        return real(repo, **kw)

    engine.sync_one = counting
    now = datetime.now(UTC)
    api = engine.repo("api")
    engine.index.record_attempt(api.id, "fetch failed", now - timedelta(minutes=1), now + timedelta(minutes=30))
    sync_due_repos(engine, now)
    assert sorted(calls) == ["docs", "web"]
    calls.clear()
    sync_due_repos(engine, now + timedelta(minutes=31))
    assert sorted(calls) == ["api", "docs", "web"]
    assert engine.repo("api").last_error is None  # an in-place repository: the retry succeeded


def test_with_a_syncer_the_periodic_sync_hands_over_the_due_repositories(engine, scheduler):
    """In serve the sync job only names what is due (not in back-off); the sync workers do the syncing."""
    def must_not_sync(repo, **kw):
        raise AssertionError(f"{repo.name} synced in the scheduler's own thread")

    engine.sync_one = must_not_sync
    now = datetime.now(UTC)
    api = engine.repo("api")
    engine.index.record_attempt(api.id, "fetch failed", now - timedelta(minutes=1), now + timedelta(minutes=30))
    handed: list[list[str]] = []
    s = scheduler(clock=Clock(now), syncer=handed.append)
    assert s.sync_all() == []
    assert [sorted(names) for names in handed] == [["docs", "web"]]


@pytest.mark.parametrize("env, minutes", [({}, 15), ({"GAD_WEBHOOK_SECRETS": "github.com=s3cret"}, 720),
                                          ({"GAD_WEBHOOK_SECRETS": "github.com=s3cret",
                                            "GAD_WEBHOOK_SYNC_INTERVAL_MINUTES": "240"}, 240)])
def test_with_webhooks_polling_is_the_slower_safety_net(tmp_path, stub, env, minutes):
    engine = make_engine(tmp_path, GAD_SYNC_INTERVAL_MINUTES="15", **env)
    s = DigestScheduler(engine.settings, engine, factory(stub), clock=Clock(DUE - timedelta(days=3)))
    s.start()
    try:
        assert s.scheduler.get_job("sync").trigger.interval == timedelta(minutes=minutes)
    finally:
        s.shutdown(wait=True)


def test_digest_syncs_its_repositories_first(tmp_path, stub):
    up = RepoBuilder(tmp_path / "up")
    up.commit(email="ann@example.com", date="2026-09-29T12:00")
    engine = make_engine(tmp_path)
    engine.track(str(up.path), "web")  # a mirror: it only learns of new commits by fetching
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    up.commit(email="bo@example.com", date="2026-09-30T12:00")  # pushed after the last sync
    later = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)  # the last sync is no longer fresh
    results = run_due_digests(engine, factory(stub), at=DUE, clock=lambda: later)
    assert [r.state for r in results] == ["posted"]
    assert "2GAD 4 person-days" in posts(stub)[0].args["text"]  # both commits counted
    assert engine.repo("web").last_success_at == later


# -- one completion line per digest and per sync, with its outcome and duration (issue 21, part 2) ----------


@pytest.fixture
def json_log():
    """The process's log as `serve --log-format json` writes it; `lines(prefix)`: the entries whose message starts so."""
    import io
    import json
    import logging

    from bot.logs import setup_logging

    stream = io.StringIO()
    setup_logging("INFO", json_lines=True, stream=stream)

    def lines(prefix: str) -> list[dict]:
        entries = [json.loads(line) for line in stream.getvalue().splitlines()]
        return [entry for entry in entries if entry["message"].startswith(prefix)]

    yield lines
    logging.getLogger().handlers.clear()


def scraped(name: str, **labels: str) -> float:
    """A sample of what GET /metrics would answer now (bot.metrics.exposition), read with Prometheus' own parser."""
    from bot import metrics
    from tests.test_health import samples

    return samples(metrics.exposition()[0].decode()).get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_digest_logs_one_completion_line_naming_its_channel(engine, stub, scheduler, json_log):
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    s = scheduler(clock=Clock(DUE + timedelta(hours=1)))
    posted = scraped("gad_digests_total", outcome="posted")
    assert [r.state for r in s.sweep()] == ["posted"]
    (line,) = json_log("digest ")
    assert (line["level"], line["channel"], line["outcome"]) == ("INFO", "C1", "posted"), line
    assert 0 <= line["seconds"] < 60 and line["time"].endswith("Z") and len(line["time"]) == 24, line
    assert scraped("gad_digests_total", outcome="posted") == posted + 1


def test_each_sync_logs_one_completion_line_naming_its_repository(engine, json_log):
    """Through serve's own sync queue: a worker process syncs, the serving process writes the line."""
    import time as clock

    from bot.service.syncs import SyncQueue

    done = []
    before = {outcome: scraped("gad_syncs_total", outcome=outcome) for outcome in ("ok", "failed")}
    queue = SyncQueue(engine.settings, workers=1, on_done=done.append)
    queue.start()
    try:
        assert queue.sync_due(["web", "gone"]) == 2  # `gone`: untracked since the sync was asked for
        deadline = clock.monotonic() + 120
        while len(done) < 2 and clock.monotonic() < deadline:
            clock.sleep(0.1)
    finally:
        queue.shutdown()
    (ok,) = json_log("sync of repo web")
    assert (ok["level"], ok["repo"], ok["outcome"]) == ("INFO", "web", "ok") and ok["seconds"] > 0, ok
    (failed,) = json_log("sync of repo gone")
    assert (failed["level"], failed["repo"], failed["outcome"]) == ("WARNING", "gone", "failed"), failed
    assert "`gone`" in failed["message"] and failed["seconds"] >= 0, failed
    assert {outcome: scraped("gad_syncs_total", outcome=outcome) - before[outcome] for outcome in before} == \
        {"ok": 1, "failed": 1}



def _deaf_to_sigterm(seconds: float, ready: str) -> None:
    """A sync worker's job that cannot act on SIGTERM (a handler that ignores it, as code stuck elsewhere would).
    It creates `ready` once SIGTERM is ignored: a future is `running()` as soon as the pool hands it to its call
    queue, before a worker (still starting on a loaded machine) has run a line of it."""
    import signal as signals
    import time as clock
    from pathlib import Path

    signals.signal(signals.SIGTERM, signals.SIG_IGN)
    Path(ready).touch()
    clock.sleep(seconds)


def test_a_sync_worker_that_cannot_stop_does_not_hold_serves_exit(engine, caplog, tmp_path):
    """serve's shutdown gives its sync workers SIGTERM and SHUTDOWN_WAIT_SECONDS, then SIGKILL: a worker that
    does not stop (here busy for 60 s and deaf to SIGTERM) cannot hold serve's exit, and is not left behind."""
    import time as clock

    from bot.service import syncs
    from bot.service.syncs import SyncQueue

    queue = SyncQueue(engine.settings, workers=1, on_done=lambda done: None)
    queue.start()
    ready = tmp_path / "deaf"
    queue._slots[0].submit(_deaf_to_sigterm, 60, str(ready))
    deadline = clock.monotonic() + 60
    while not ready.exists() and clock.monotonic() < deadline:
        clock.sleep(0.05)
    assert ready.exists(), "the worker never started its job"
    workers = list(queue._slots[0]._processes.values())
    started = clock.monotonic()
    queue.shutdown()
    took = clock.monotonic() - started
    assert syncs.SHUTDOWN_WAIT_SECONDS <= took < 3 * syncs.SHUTDOWN_WAIT_SECONDS, took
    assert workers and not any(w.is_alive() for w in workers)
    assert f"sync workers did not stop within {syncs.SHUTDOWN_WAIT_SECONDS} s of SIGTERM; killing them" in caplog.text


def test_a_full_disk_stops_a_digest_run_with_one_line_not_a_traceback(scheduler, monkeypatch, caplog):
    """The ledger cannot record a claim on a full disk (SQLite says so in its words): nothing is posted, one line says
    why, and the next run tries again (issue 32)."""
    import logging
    import sqlite3

    import bot.digests.schedule as schedule

    def full(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(schedule, "run_due_digests", full)
    with caplog.at_level(logging.INFO, logger="bot.digests.schedule"):
        assert scheduler()._run(None) == []
    (record,) = [r for r in caplog.records if r.name == "bot.digests.schedule"]
    assert record.getMessage() == "digests are not delivered while the data disk is full; the next run tries again"
    assert record.exc_info is None


def test_a_digest_slack_never_answered_is_counted_unknown(engine, stub):
    """The documented alert counts `unknown` too: a post whose answer never came is the operator's to look at
    (`gad-bot release-digest`), and it was counted nowhere (issue 32)."""
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    stub.stall_next("chat.postMessage", 3)  # Slack posts it, after the client (1 s) gave up waiting
    s = DigestScheduler(engine.settings, engine, factory(stub, timeout=1), clock=Clock(DUE + timedelta(hours=1)))
    unknown = scraped("gad_digests_total", outcome="unknown")
    try:
        assert [r.state for r in s.sweep()] == ["unknown"]
    finally:
        s.shutdown(wait=True)
    assert scraped("gad_digests_total", outcome="unknown") == unknown + 1
