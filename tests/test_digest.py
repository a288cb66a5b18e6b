"""Weekly digests: the figures equal `gad-bot report`'s, and each digest is posted exactly once.

Real git repositories (RepoBuilder), a real SQLite index, the loopback Slack stub; every instant
is passed explicitly (`at=`, `now=`, `clock=`).
"""

from __future__ import annotations

import re
import threading
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

import pytest
from slack_sdk import WebClient

from bot.digests import subscriptions as subs
from bot.digests.face import channel_view
from bot.config import Settings
from bot.digests.digest import (MAX_RETRY_AFTER, RETRY_FAILED_AFTER, STALE_CLAIM, STALE_POSTING, ChannelPacer, Ledger,
                        build_digest, preview_digest, run_due_digests)
from bot.engine.engine import Engine
from bot.errors import DigestError
from bot.engine.query import Subscribe, Unsubscribe, parse_query
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub


def channel(channel_id: str):
    """The channel a digest is posted in, not shared outside the workspace (audiences: tests/test_access_faces.py)."""
    from bot.engine.audiences import Viewer

    return Viewer.of_channel(channel_id, shared_outside=False)


UTC = timezone.utc
CREATED = datetime(2026, 10, 2, tzinfo=UTC)  # after the previous digest fell due: none is owed
SHIFT = 56
WEEK = date(2026, 9, 28)  # Monday; the digest for it is due Monday 2026-10-05 (all in the past)
DUE = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)  # Mondays 09:00 UTC

# (repo, e-mail, local date-time, offset minutes)
_HISTORY = [
    ("web", "ann@example.com", "2026-10-01T12:00", 0),
    ("web", "ann@example.com", "2026-11-17T12:00", 0),
    ("web", "ann@example.com", "2026-11-23T10:00", 0),
    ("web", "Ann@Example.com", "2026-11-23T15:00", 0),  # same person, same day
    ("web", "ann@example.com", "2026-11-24T23:30", -300),  # the author's own date (UTC says the 25th)
    ("web", "bo@example.com", "2026-11-25T09:00", 60),
    ("web", "cy@example.com", "2026-11-29T23:00", 0),  # Sunday: inside the week
    ("web", "dependabot[bot]@users.noreply.github.com", "2026-11-26T09:00", 0),
    ("web", "cy@example.com", "2026-11-30T00:30", 0),  # next week: not counted
    ("api", "ann@example.com", "2026-11-23T11:00", 0),  # ann on web the same day: one person-day in the union
    ("api", "di@example.com", "2026-11-18T11:00", 0),
    ("api", "di@example.com", "2026-09-07T11:00", 0),
    ("docs", "eve@example.com", "2026-10-14T11:00", 0),  # quiet this week
]




def _shift(when: str, days: int = -SHIFT) -> str:
    return (datetime.fromisoformat(when) + timedelta(days=days)).isoformat(timespec="minutes")


# Written in the calendar of the week of 23 November, moved 8 weeks back so every instant is in the past.
HISTORY = [(repo, email, _shift(when), offset) for repo, email, when, offset in _HISTORY]


def build_repos(root: Path, history=HISTORY) -> dict[str, RepoBuilder]:
    builders: dict[str, RepoBuilder] = {}
    for repo, email, when, offset in history:
        b = builders.get(repo) or builders.setdefault(repo, RepoBuilder(root / repo))
        name = "dependabot[bot]" if "[bot]" in email else email.split("@")[0].title()
        b.commit(name=name, email=email, date=when, offset=offset)
    return builders


def make_engine(tmp_path: Path, **env) -> Engine:
    return Engine(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), **env}))


def tracking_engine(tmp_path: Path, **env) -> Engine:
    """An engine with the test repositories (web, api, docs) tracked in place."""
    engine = make_engine(tmp_path, **env)
    for name, b in build_repos(tmp_path / "up").items():
        engine.track(str(b.path), name, in_place=True)
    return engine


@pytest.fixture
def world(tmp_path):
    """An engine tracking web, api and docs (in place), and channel C1 subscribed to all three."""
    builders = build_repos(tmp_path / "up")
    engine = make_engine(tmp_path)
    for name, b in builders.items():
        engine.track(str(b.path), name, in_place=True)
    subs.subscribe(engine, "C1", Subscribe(("web", "api", "docs"), tz="UTC"), now=CREATED)
    return engine


@pytest.fixture
def stub():
    with SlackStub() as s:
        yield s


def factory(stub, timeout: int = 30):
    return lambda: WebClient(base_url=stub.api_url, token=stub.good_token, timeout=timeout)


class Sleeps:
    def __init__(self):
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def run(engine, stub, at, **kw):
    kw.setdefault("sleep", Sleeps())
    kw.setdefault("pacer", ChannelPacer(interval=0))
    return run_due_digests(engine, factory(stub), at=at, **kw)


def posts(stub, channel: str | None = None):
    return [c for c in stub.calls_to("chat.postMessage") if c.ok and (channel is None or c.args.get("channel") == channel)]


def all_text(blocks) -> str:
    import json

    return json.dumps(blocks, ensure_ascii=False)


# -- figures --------------------------------------------------------------------------------------


# The week of the digest due at DUE, worked out by hand from _HISTORY (dates moved back 8 weeks):
#   web: ann 09-28 (two commits, one as Ann@Example.com), ann 09-29 (23:30 at -05:00: her own date),
#        bo 09-30, cy 10-04 (Sunday); dependabot[bot] 10-01 is left out; cy 10-05 is next week
#   api: ann 09-28 (the same person-day as on web)        docs: nothing
# union: (ann, 28), (ann, 29), (bo, 30), (cy, 04) = 4 person-days, 2GAD 8; 3 developers; 6 commits
# week before (09-21..27): web ann 09-22, api di 09-23: 2 person-days, 2GAD 4
# the 12 weeks before (07-06..09-27), 2GAD per week: di 07-13 -> 2, ann 08-06 -> 2, eve 08-19 -> 2,
#   ann 09-22 + di 09-23 -> 4; every other week 0: average 10 / 12
def test_digest_figures_are_the_weeks_worked_out_by_hand(world):
    sub = subs.get(world.index, "C1")
    digest = build_digest(world, sub, WEEK, viewer=channel(sub.channel_id))
    t = digest.total
    assert (t.week.person_days, t.week.developers, t.week.commits) == (4, 3, 6)
    assert (t.previous.person_days, t.previous.developers, t.previous.commits) == (2, 2, 2)
    assert t.average_two_gad == pytest.approx(10 / 12)
    assert [r.key for r in t.trend][-1] == "2026-W40" and len(t.trend) == 12
    assert [r.totals.two_gad for r in t.trend] == [2, 0, 0, 2, 0, 2, 0, 0, 0, 0, 4, 8]  # W29 .. W40
    assert t.new_people == ("bo@example.com", "cy@example.com")  # ann was active before, in both repositories
    by_name = {f.name: f for f in digest.repos}
    assert (by_name["web"].week.person_days, by_name["web"].week.commits) == (4, 5)
    assert by_name["web"].previous.person_days == 1  # ann 09-22
    assert (by_name["api"].week.person_days, by_name["api"].previous.person_days) == (1, 1)  # ann 09-28; di 09-23
    assert by_name["docs"].quiet and by_name["docs"].week.commits == 0
    assert by_name["api"].new_people == ("ann@example.com",)  # new to api, not to the channel
    assert by_name["web"].new_people == ("bo@example.com", "cy@example.com")


def test_posted_digest_says_the_figures_and_the_change(world, stub):
    results = run(world, stub, DUE)
    assert [r.state for r in results] == ["posted"]
    message = posts(stub)[0].args
    text = all_text(message["blocks"])
    assert message["text"].startswith("Weekly 2GAD digest, 2026-09-28 to 2026-10-04 (2026-W40): 2GAD 8 person-days "
                                      "for all 3 repositories")
    assert "*2GAD 8 person-days*" in text
    assert "▲ 4 (+100%) vs last week (4)" in text  # 8 now, 4 the week before
    assert "▲ 860% vs 12-week average (0.8)" in text  # 8 / (10 / 12) - 1 = 8.6
    assert "3 developers active · 6 commits · 2 new contributors" in text
    assert "`web` — 2GAD *8* · ▲ 6 (+300%) vs last week (2)" in text  # web: 4 person-days now, 1 before
    assert "Week Monday to Sunday in UTC" in text


def test_new_contributor_in_one_repo_is_not_new_to_the_channel(tmp_path):
    history = [("a", "zed@example.com", "2026-06-01T12:00", 0), ("b", "zed@example.com", "2026-09-29T12:00", 0),
               ("b", "yan@example.com", "2026-09-29T12:00", 0)]
    engine = make_engine(tmp_path)
    for name, b in build_repos(tmp_path / "up", history).items():
        engine.track(str(b.path), name, in_place=True)
    subs.subscribe(engine, "C9", Subscribe(("a", "b")), now=CREATED)
    digest = build_digest(engine, subs.get(engine.index, "C9"), WEEK, viewer=channel("C9"))
    assert {f.name: f.new_people for f in digest.repos}["b"] == ("yan@example.com", "zed@example.com")
    assert digest.total.new_people == ("yan@example.com",)


# -- due, catch-up, grace -------------------------------------------------------------------------


def test_not_due_then_due_then_once(world, stub):
    assert run(world, stub, DUE - timedelta(seconds=1)) == []
    assert posts(stub) == []
    results = run(world, stub, DUE)
    assert [(r.channel_id, r.period_start, r.state) for r in results] == [("C1", WEEK, "posted")]
    assert run(world, stub, DUE + timedelta(minutes=5)) == []
    assert run(world, stub, DUE + timedelta(hours=3)) == []
    assert len(posts(stub)) == 1
    message = posts(stub)[0].args
    assert message["channel"] == "C1" and "2GAD 8 person-days" in message["text"]
    record = Ledger(world.index).get("C1", WEEK)
    assert record.state == "posted" and record.message_ts == results[0].message_ts


def test_catch_up_within_grace_and_missed_beyond(world, stub):
    results = run(world, stub, DUE + timedelta(hours=23, minutes=59))  # the bot was down at 09:00
    assert [r.state for r in results] == ["posted"]
    # the next week was missed entirely (down for more than 24 h after it fell due) ...
    late = DUE + timedelta(days=7, hours=25)
    results = run(world, stub, late)
    assert [(r.period_start, r.state) for r in results] == [(WEEK + timedelta(days=7), "missed")]
    assert run(world, stub, late + timedelta(hours=1)) == []  # said once
    # ... and the one after is delivered as usual
    results = run(world, stub, DUE + timedelta(days=14))
    assert [(r.period_start, r.state) for r in results] == [(WEEK + timedelta(days=14), "posted")]
    assert len(posts(stub)) == 2
    view = channel_view(world, "C1", DUE + timedelta(days=14, hours=1))
    assert view.last.shown_state == "posted" and view.last.period_start == WEEK + timedelta(days=14)


def test_long_grace_delivers_every_owed_week_oldest_first(tmp_path, stub):
    engine = make_engine(tmp_path, GAD_DIGEST_GRACE_HOURS="400")
    for name, b in build_repos(tmp_path / "up").items():
        engine.track(str(b.path), name, in_place=True)
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    results = run(engine, stub, DUE + timedelta(days=14, hours=1))
    assert [(r.period_start, r.state) for r in results] == [
        (WEEK, "posted"), (WEEK + timedelta(days=7), "posted"), (WEEK + timedelta(days=14), "posted")]
    assert len(posts(stub)) == 3


def test_nothing_due_before_the_subscription_existed(world, stub):
    subs.subscribe(world, "C2", Subscribe(("web",)), now=DUE + timedelta(minutes=30))
    assert [r.channel_id for r in run(world, stub, DUE + timedelta(hours=1))] == ["C1"]
    assert posts(stub, "C2") == []
    results = run(world, stub, DUE + timedelta(days=7))
    assert sorted((r.channel_id, r.state) for r in results) == [("C1", "posted"), ("C2", "posted")]


def test_future_instants_are_refused(world, stub):
    with pytest.raises(DigestError):
        run_due_digests(world, factory(stub), at=datetime.now(UTC) + timedelta(hours=2))


# -- exactly once under races ---------------------------------------------------------------------


def _race(engines, stub, at, channels=None):
    barrier = threading.Barrier(len(engines))
    results: list = []
    lock = threading.Lock()

    def go(engine):
        barrier.wait()
        out = run(engine, stub, at, channels=channels)
        with lock:
            results.extend(out)

    threads = [threading.Thread(target=go, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_racing_threads_post_once(world, stub):
    for channel in ("C2", "C3", "C4"):
        subs.subscribe(world, channel, Subscribe(("web", "api")), now=CREATED)
    results = _race([world] * 8, stub, DUE + timedelta(minutes=1))
    assert sorted(r.channel_id for r in results if r.state == "posted") == ["C1", "C2", "C3", "C4"]
    for channel in ("C1", "C2", "C3", "C4"):
        assert len(posts(stub, channel)) == 1


def test_two_engines_on_one_data_dir_post_once(world, stub, tmp_path):
    others = [make_engine(tmp_path) for _ in range(3)]  # like `serve` and `gad-bot digest` side by side
    results = _race([world, *others], stub, DUE)
    assert [r.state for r in results if r.state == "posted"] == ["posted"]
    assert len(posts(stub)) == 1
    assert all(r.state in ("posted", "skipped") for r in results)


def test_two_processes_post_once(world, stub, tmp_path):
    import subprocess
    import sys

    script = (
        "import sys, datetime\n"
        "from slack_sdk import WebClient\n"
        "from bot.config import Settings\nfrom bot.engine.engine import Engine\nfrom bot.digests.digest import run_due_digests\n"
        "e = Engine(Settings.from_env({'GAD_DATA_DIR': sys.argv[1]}))\n"
        "f = lambda: WebClient(base_url=sys.argv[2], token=sys.argv[3])\n"
        "r = run_due_digests(e, f, at=datetime.datetime.fromisoformat(sys.argv[4]))\n"
        "print(','.join(x.state for x in r))\n")
    args = [sys.executable, "-c", script, str(tmp_path / "data"), stub.api_url, stub.good_token, DUE.isoformat()]
    root = Path(__file__).resolve().parent.parent
    procs = [subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    states = [o[0].strip() for o in outputs]
    assert sorted(states).count("posted") == 1, states
    assert len(posts(stub)) == 1


# -- retries, errors, pauses ----------------------------------------------------------------------


def test_429_then_ok_posts_exactly_one_message(world, stub):
    stub.fail_next("chat.postMessage", status=429, retry_after=3)
    sleeps = Sleeps()
    results = run(world, stub, DUE, sleep=sleeps)
    assert [(r.state, r.post_attempts) for r in results] == [("posted", 2)]
    assert 3.0 in sleeps.calls  # Retry-After honoured
    assert len(stub.calls_to("chat.postMessage")) == 2 and len(posts(stub)) == 1
    assert run(world, stub, DUE + timedelta(minutes=1)) == []
    assert Ledger(world.index).get("C1", WEEK).attempts == 1  # one claim


def test_5xx_retried_inside_one_claim(world, stub):
    stub.fail_next("chat.postMessage", status=503, times=2)
    results = run(world, stub, DUE)
    assert [(r.state, r.post_attempts) for r in results] == [("posted", 3)]
    assert len(posts(stub)) == 1


def test_retries_exhausted_fail_then_a_later_run_retries(world, stub):
    stub.fail_next("chat.postMessage", status=500, times=10)
    results = run(world, stub, DUE)
    assert results[0].state == "failed" and len(posts(stub)) == 0
    # too soon to claim again
    assert [r.state for r in run(world, stub, DUE + timedelta(minutes=1))] == ["skipped"]
    later = datetime.now(UTC) + RETRY_FAILED_AFTER + timedelta(seconds=1)
    stub.clear_calls()
    stub._failures.clear()
    results = run(world, stub, DUE + timedelta(minutes=20), clock=lambda: later)
    assert [r.state for r in results] == ["posted"] and len(posts(stub)) == 1
    assert Ledger(world.index).get("C1", WEEK, later).attempts == 2


def test_long_retry_after_ends_the_claim(world, stub):
    stub.fail_next("chat.postMessage", status=429, retry_after=int(MAX_RETRY_AFTER) + 60)
    sleeps = Sleeps()
    results = run(world, stub, DUE, sleep=sleeps)
    assert results[0].state == "failed" and sleeps.calls == []


def test_channel_not_found_pauses_until_subscribed_again(world, stub):
    stub.fail_next("chat.postMessage", error="channel_not_found")
    results = run(world, stub, DUE)
    assert [(r.state, r.detail) for r in results] == [("paused", "channel_not_found")]
    sub = subs.get(world.index, "C1")
    assert sub.paused_reason == "channel_not_found"
    # paused: nothing is attempted, the reason is shown
    stub.clear_calls()
    later = datetime.now(UTC) + RETRY_FAILED_AFTER + timedelta(seconds=1)
    assert [r.state for r in run(world, stub, DUE + timedelta(hours=1), clock=lambda: later)] == ["paused"]
    assert stub.calls_to("chat.postMessage") == []
    from bot.digests.blocks import subscriptions_blocks

    text, blocks = subscriptions_blocks(channel_view(world, "C1", DUE + timedelta(hours=1)))
    assert "Paused" in all_text(blocks) and "channel_not_found" in all_text(blocks)
    # subscribing again unpauses; the week, still within the grace period, is delivered
    result = subs.subscribe(world, "C1", Subscribe(("web",)), now=DUE + timedelta(hours=2))
    assert result.unpaused == "channel_not_found" and not result.subscription.paused
    results = run(world, stub, DUE + timedelta(hours=2), clock=lambda: later)
    assert [r.state for r in results] == ["posted"] and len(posts(stub)) == 1


@pytest.mark.parametrize("error", ["is_archived", "not_in_channel", "token_revoked", "account_inactive"])
def test_errors_that_will_not_heal_pause(world, stub, error):
    stub.fail_next("chat.postMessage", error=error)
    assert [r.state for r in run(world, stub, DUE)] == ["paused"]
    assert subs.get(world.index, "C1").paused_reason == error


def test_other_slack_errors_fail_without_pausing(world, stub):
    stub.fail_next("chat.postMessage", error="msg_too_long")
    assert [r.state for r in run(world, stub, DUE)] == ["failed"]
    assert not subs.get(world.index, "C1").paused


def test_lost_answer_is_never_reposted(world, stub):
    stub.stall_next("chat.postMessage", 3)  # Slack posts, but after the client gave up
    results = run_due_digests(world, factory(stub, timeout=1), at=DUE, sleep=Sleeps(), pacer=ChannelPacer(0))
    assert [r.state for r in results] == ["unknown"]
    stub.wait_for("chat.postMessage", 1, timeout=10)
    much_later = datetime.now(UTC) + timedelta(hours=2)
    results = run(world, stub, DUE + timedelta(hours=1), clock=lambda: much_later)
    assert [r.state for r in results] == ["skipped"] and "not reposted" in results[0].detail
    assert len(stub.calls_to("chat.postMessage")) == 1
    view = channel_view(world, "C1", much_later)
    assert view.last.shown_state == "unknown"


# -- the crash window -----------------------------------------------------------------------------


def test_stale_claim_never_posted_is_taken_over(world, stub):
    ledger = Ledger(world.index)
    crashed_at = datetime.now(UTC) - STALE_CLAIM - timedelta(seconds=1)
    assert ledger.claim("C1", WEEK, crashed_at, token="dead-process")  # died before chat.postMessage
    results = run(world, stub, DUE)
    assert [r.state for r in results] == ["posted"] and len(posts(stub)) == 1


def test_fresh_claim_is_left_alone(world, stub):
    Ledger(world.index).claim("C1", WEEK, datetime.now(UTC), token="busy-process")
    results = run(world, stub, DUE)
    assert [(r.state, r.detail) for r in results] == [("skipped", "being delivered by another process")]
    assert posts(stub) == []


def test_slow_claimer_taken_over_does_not_post(world):
    ledger = Ledger(world.index)
    now = datetime.now(UTC)
    slow = ledger.claim("C1", WEEK, now - STALE_CLAIM - timedelta(seconds=5), token="slow")
    fresh = ledger.claim("C1", WEEK, now, token="fresh")
    assert slow and fresh
    assert ledger.start_post(slow) is False  # the fencing token: the slow one must not post
    assert ledger.start_post(fresh) is True
    assert ledger.claim("C1", WEEK, now + timedelta(days=1), token="third") is None  # posting: never again


def test_crash_during_post_is_unknown_and_not_reposted(world, stub):
    ledger = Ledger(world.index)
    long_ago = datetime.now(UTC) - STALE_POSTING - timedelta(minutes=1)
    claim = ledger.claim("C1", WEEK, long_ago, token="crashed-mid-post")
    assert ledger.start_post(claim)
    results = run(world, stub, DUE)
    assert [r.state for r in results] == ["skipped"] and "not reposted" in results[0].detail
    assert posts(stub) == []
    assert channel_view(world, "C1", datetime.now(UTC)).last.shown_state == "unknown"
    # an operator who checked the channel may release it
    assert ledger.release("C1", WEEK)
    assert [r.state for r in run(world, stub, DUE + timedelta(minutes=1))] == ["posted"]


# -- DST ------------------------------------------------------------------------------------------


def test_week_across_march_change_europe_london(world, stub):
    subs.subscribe(world, "CL", Subscribe(("web",), day="mon", at=time(9, 0), tz="Europe/London"),
                   now=datetime(2026, 3, 20, tzinfo=UTC))
    ch = ["CL"]
    # the week before the change: due 09:00 GMT = 09:00 UTC
    assert run(world, stub, datetime(2026, 3, 23, 8, 59, tzinfo=UTC), channels=ch) == []
    assert [r.period_start for r in run(world, stub, datetime(2026, 3, 23, 9, 0, tzinfo=UTC), channels=ch)] == [
        date(2026, 3, 16)]
    # the week of the change (Sunday 29 March): due 09:00 BST = 08:00 UTC, once
    assert run(world, stub, datetime(2026, 3, 30, 7, 59, tzinfo=UTC), channels=ch) == []
    assert [r.period_start for r in run(world, stub, datetime(2026, 3, 30, 8, 0, tzinfo=UTC), channels=ch)] == [
        date(2026, 3, 23)]
    assert run(world, stub, datetime(2026, 3, 30, 9, 0, tzinfo=UTC), channels=ch) == []
    assert len(posts(stub, "CL")) == 2


def test_week_across_october_change_posts_once_when_the_hour_repeats(world, stub):
    subs.subscribe(world, "CO", Subscribe(("web",), day="sun", at=time(1, 30), tz="Europe/London"),
                   now=datetime(2026, 10, 20, tzinfo=UTC))
    ch = ["CO"]
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 01:30 BST
    second = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)  # 01:30 GMT, an hour later
    assert run(world, stub, first - timedelta(minutes=1), channels=ch) == []
    # Sunday 25 October covers Sunday 18 to Saturday 24 October
    assert [(r.period_start, r.state) for r in run(world, stub, first, channels=ch)] == [(date(2026, 10, 18), "posted")]
    assert run(world, stub, second, channels=ch) == []  # CronTrigger fires again: nothing more
    assert len(posts(stub, "CO")) == 1


def test_skipped_hour_still_delivers(world, stub):
    subs.subscribe(world, "CS", Subscribe(("web",), day="sun", at=time(1, 30), tz="Europe/London"),
                   now=datetime(2026, 3, 25, tzinfo=UTC))
    ch = ["CS"]
    # 2026-03-29 01:30 does not exist in London; it falls due at 01:30 GMT (= 02:30 BST), like CronTrigger
    assert run(world, stub, datetime(2026, 3, 29, 1, 29, tzinfo=UTC), channels=ch) == []
    results = run(world, stub, datetime(2026, 3, 29, 1, 30, tzinfo=UTC), channels=ch)
    assert [(r.period_start, r.state) for r in results] == [(date(2026, 3, 22), "posted")]  # Sun 22 to Sat 28
    # the week after is back to normal: 01:30 BST = 00:30 UTC
    results = run(world, stub, datetime(2026, 4, 5, 0, 30, tzinfo=UTC), channels=ch)
    assert [(r.period_start, r.state) for r in results] == [(date(2026, 3, 29), "posted")]


# -- content, charts, preview, dry run ------------------------------------------------------------


def test_chart_uploaded_and_shown_in_the_message(world, stub):
    results = run(world, stub, DUE)
    assert results[0].chart == "image"
    files = stub.uploaded_files()
    assert len(files) == 1 and files[0].data.startswith(b"\x89PNG") and files[0].channel_id is None
    blocks = posts(stub)[0].args["blocks"]
    images = [b for b in blocks if b["type"] == "image"]
    assert images and images[0]["slack_file"] == {"id": files[0].id}


def test_sparkline_when_the_app_lacks_files_write(world, stub):
    stub.scopes.remove("files:write")
    subs.subscribe(world, "C2", Subscribe(("web",)), now=CREATED)
    results = run(world, stub, DUE)
    assert {r.chart for r in results} == {"sparkline"} and [r.state for r in results] == ["posted", "posted"]
    assert stub.uploaded_files() == []
    for call in posts(stub):
        text = all_text(call.args["blocks"])
        assert "12-week trend" in text and re.search("`[·▁▂▃▄▅▆▇█]{12}`", text) and '"image"' not in text


def test_refused_chart_block_falls_back_to_sparkline(world, stub):
    stub.fail_next("chat.postMessage", error="invalid_blocks")
    results = run(world, stub, DUE)
    assert [(r.state, r.chart) for r in results] == [("posted", "sparkline")]
    assert len(posts(stub)) == 1


def test_people_only_with_people_on(world, stub):
    run(world, stub, DUE)
    assert "@example.com" not in all_text(posts(stub, "C1")[0].args)
    assert "2 new contributors" in all_text(posts(stub, "C1")[0].args["blocks"])
    subs.subscribe(world, "CP", Subscribe(("web", "api"), people=True), now=CREATED)
    run(world, stub, DUE, channels=["CP"])
    text = all_text(posts(stub, "CP")[0].args["blocks"])
    assert "bo@example.com" in text and "cy@example.com" in text and "Most active" in text


def test_quiet_repositories_listed_compactly(world, stub):
    run(world, stub, DUE)
    text = all_text(posts(stub)[0].args["blocks"])
    assert "Quiet this week (1):* `docs`" in text


def test_many_repositories_fit_slack_limits(tmp_path, stub):
    history = [(f"r{i:03d}", f"p{i % 7}@example.com", f"2026-09-{28 + i % 3}T12:00", 0) for i in range(120)]
    history += [(f"q{i:03d}", "old@example.com", "2026-01-05T12:00", 0) for i in range(150)]
    engine = make_engine(tmp_path)
    for name, b in build_repos(tmp_path / "up", history).items():
        engine.track(str(b.path), name + "-" + "x" * 60, in_place=True)
    subs.subscribe(engine, "CB", Subscribe(tuple(r.name for r in engine.repos()), people=True), now=CREATED)
    results = run(engine, stub, DUE)
    assert [r.state for r in results] == ["posted"]  # the stub rejects > 50 blocks or > 3000 characters
    blocks = posts(stub)[0].args["blocks"]
    assert len(blocks) <= 50
    assert all(len(b.get("text", {}).get("text", "")) <= 3000 for b in blocks)


def test_untracked_repository_is_mentioned(world, stub):
    world.untrack("api")
    results = run(world, stub, DUE)
    assert results[0].state == "posted"
    assert "No longer tracked" in all_text(posts(stub)[0].args["blocks"])


def test_preview_does_not_write_the_ledger(world, stub):
    text, blocks = preview_digest(world, "C1", DUE - timedelta(hours=1), viewer=channel("C1"))
    assert "Preview" in text and "2026-09-28" in text and len(blocks) <= 50
    assert Ledger(world.index).rows() == [] and stub.calls == []
    # mid-week: the next digest's week, so far
    text, blocks = preview_digest(world, "C1", datetime(2026, 10, 1, 12, tzinfo=UTC), viewer=channel("C1"))
    assert "2026-09-28" in text and "so far" in all_text(blocks)
    assert Ledger(world.index).rows() == []
    assert [r.state for r in run(world, stub, DUE)] == ["posted"]
    with pytest.raises(DigestError):
        preview_digest(world, "C-none", DUE, viewer=channel("C-none"))


def test_dry_run_claims_and_posts_nothing(world, stub):
    results = run(world, stub, DUE, dry_run=True)
    assert [r.state for r in results] == ["dry_run"] and results[0].blocks and results[0].text
    assert results[0].to_dict()["period_start"] == "2026-09-28"
    # nothing written, posted or uploaded: Slack was only asked whether the channel is shared outside
    assert Ledger(world.index).rows() == [] and [c.method for c in stub.calls] == ["conversations.info"]
    assert [r.state for r in run(world, stub, DUE)] == ["posted"]


def test_fetch_failure_still_delivers_saying_how_old_the_data_is(tmp_path, stub):
    builders = build_repos(tmp_path / "up")
    engine = make_engine(tmp_path)
    engine.track(str(builders["web"].path), "web")  # a real mirror, fetched before each digest
    subs.subscribe(engine, "C1", Subscribe(("web",)), now=CREATED)
    import shutil

    shutil.rmtree(builders["web"].path)  # the upstream is gone
    later = datetime.now(UTC) + timedelta(hours=1)  # past the "synced recently" window
    results = run(engine, stub, DUE, clock=lambda: later)
    assert [r.state for r in results] == ["posted"] and results[0].stale == ("web",)
    text = all_text(posts(stub)[0].args["blocks"])
    assert "fetch failed" in text and "Data as of" in text
    repo = engine.repo("web")
    assert repo.failures == 1 and repo.next_attempt_at > later


def test_unsubscribed_channel_gets_nothing(world, stub):
    subs.unsubscribe(world, "C1", Unsubscribe(("all",)))
    assert run(world, stub, DUE) == []
    assert posts(stub) == []


def test_pacing_per_channel():
    clock = [0.0]
    slept: list[float] = []

    def sleep(s):
        slept.append(s)
        clock[0] += s

    pacer = ChannelPacer(1.0, clock=lambda: clock[0], sleep=sleep)
    pacer.wait("A")
    pacer.wait("B")  # another channel: no wait
    pacer.wait("A")
    assert slept == [1.0]
    pacer.hold("B", 5)
    pacer.wait("B")
    assert slept == [1.0, 5.0]  # B waits out the Retry-After from the moment it was given


class _ChannelKnown(WebClient):
    """A client whose conversations.info answers (the channel is not shared outside) and whose posts go nowhere."""

    def conversations_info(self, **kwargs):
        return {"ok": True, "channel": {"id": kwargs["channel"], "is_ext_shared": False, "is_member": True}}


def test_unreachable_slack_fails_without_posting_and_is_retried_later(world):
    sleeps = Sleeps()
    dead = lambda: _ChannelKnown(base_url="http://127.0.0.1:1/api/", token="xoxb-x", timeout=2)  # noqa: E731
    results = run_due_digests(world, dead, at=DUE, sleep=sleeps, pacer=ChannelPacer(0))
    assert [r.state for r in results] == ["failed"] and results[0].post_attempts == 5
    assert "could not reach Slack" in results[0].detail and len(sleeps.calls) == 4
    record = Ledger(world.index).get("C1", WEEK)
    assert record.state == "failed"  # verifiably not posted: a later run may claim it again


def test_a_channel_slack_cannot_describe_gets_no_digest_until_it_can(world, stub):
    """Who may see each repository depends on whether the channel is shared outside: unknown, nothing is posted."""
    stub.fail_next("conversations.info", error="internal_error")
    results = run(world, stub, DUE)
    assert [r.state for r in results] == ["failed"] and "Slack could not say whether <#C1> is shared" in results[0].detail
    assert posts(stub) == [] and Ledger(world.index).get("C1", WEEK).state == "failed"  # a later run tries again


def test_nothing_left_to_report_is_recorded_not_retried_every_sweep(world, stub):
    for name in ("web", "api", "docs"):
        world.untrack(name)
    results = run(world, stub, DUE)
    assert [r.state for r in results] == ["failed"] and "tracked" in results[0].detail
    assert [r.state for r in run(world, stub, DUE + timedelta(minutes=5))] == ["skipped"]
    assert stub.calls == []


def test_parse_at():
    from bot.digests.digest import parse_at

    assert parse_at("2026-11-30T09:00Z") == datetime(2026, 11, 30, 9, tzinfo=UTC)
    assert parse_at("2026-11-30T10:00+01:00") == datetime(2026, 11, 30, 9, tzinfo=UTC)
    assert parse_at("2026-11-30T09:00") == datetime(2026, 11, 30, 9, tzinfo=UTC)
    with pytest.raises(DigestError):
        parse_at("next monday")


# -- a digest covers the seven days before its delivery day (issue 12, item 11) -------------------


def test_friday_digest_covers_friday_to_thursday(world, stub):
    """Friday 2026-10-02 09:00: Friday 09-25 to Thursday 10-01, not the Monday week that ended five days before.

    By hand: ann 09-28 (web and api), ann 09-29, bo 09-30; dependabot 10-01 left out; cy 10-04 is after:
    3 person-days, 2GAD 6, 5 commits. The period before (09-18..24): ann 09-22, di 09-23: 2GAD 4.
    The old rule (the Monday week 09-21..27) would have said 2GAD 4.
    """
    subs.subscribe(world, "CF", Subscribe(("web", "api", "docs"), day="fri", at=time(9, 0), tz="UTC"), now=CREATED)
    friday = datetime(2026, 10, 2, 9, 0, tzinfo=UTC)
    assert run(world, stub, friday - timedelta(minutes=1), channels=["CF"]) == []
    results = run(world, stub, friday, channels=["CF"])
    assert [(r.period_start, r.state) for r in results] == [(date(2026, 9, 25), "posted")]
    message = posts(stub, "CF")[0].args
    text = all_text(message["blocks"])
    assert message["text"].startswith("Weekly 2GAD digest, 2026-09-25 to 2026-10-01: 2GAD 6 person-days")
    assert "▲ 2 (+50%) vs last week (4)" in text
    assert "2 developers active · 5 commits" in text
    assert "7 days Friday to Thursday in UTC" in text
    digest = build_digest(world, subs.get(world.index, "CF"), date(2026, 9, 25), viewer=channel("CF"))
    assert [r.key for r in digest.total.trend][-2:] == ["2026-09-18", "2026-09-25"]
    assert digest.total.average_two_gad == pytest.approx(10 / 12)  # 07-13, 08-06, 08-19: 2 each; 09-18..24: 4


def test_a_digest_posted_under_the_old_monday_key_is_not_posted_again(world, stub):
    """Upgrading between a Friday post and its grace period's end: the ledger row is keyed by the Monday."""
    subs.subscribe(world, "CF", Subscribe(("web",), day="fri", at=time(9, 0), tz="UTC"), now=CREATED)
    friday = datetime(2026, 10, 2, 9, 0, tzinfo=UTC)
    ledger = Ledger(world.index)
    old = ledger.claim("CF", date(2026, 9, 21), friday + timedelta(seconds=5), token="old-version")  # its Monday
    assert ledger.start_post(old)
    ledger.finish(old, "posted", friday + timedelta(seconds=6), message_ts="1.2")
    results = run(world, stub, friday + timedelta(minutes=5), channels=["CF"])
    assert [(r.state, r.detail) for r in results] == [("skipped", "already delivered as the period from 2026-09-21")]
    assert posts(stub, "CF") == []
    # the next Friday is delivered as usual
    assert [r.state for r in run(world, stub, friday + timedelta(days=7), channels=["CF"])] == ["posted"]


def test_dry_run_shows_every_subscription_whatever_the_ledger_says(world, stub):
    subs.subscribe(world, "C2", Subscribe(("api",)), now=DUE + timedelta(days=1))  # made after the digest fell due
    assert [r.state for r in run(world, stub, DUE)] == ["posted"]  # C1's digest is posted
    results = run(world, stub, DUE + timedelta(hours=1), dry_run=True)
    assert [(r.channel_id, r.period_start, r.state) for r in results] == [("C1", WEEK, "dry_run"), ("C2", WEEK, "dry_run")]
    assert results[0].detail == "not posted (dry run); the ledger says posted"
    assert "2GAD 8 person-days" in results[0].text and "2GAD 2 person-days" in results[1].text  # api: ann 09-28
    only = run(world, stub, DUE + timedelta(hours=1), dry_run=True, channels=["C2"])
    assert [r.channel_id for r in only] == ["C2"]
    future = run(world, stub, datetime.now(UTC) + timedelta(days=30), dry_run=True, channels=["C1"])
    assert [r.state for r in future] == ["dry_run"]  # a future --at previews the digest to come
    assert len(posts(stub)) == 1 and len(Ledger(world.index).rows()) == 1


# -- `gad-bot digest` as a process (the operator's face) ------------------------------------------


def test_cli_digest_posts_what_is_due(world, stub, tmp_path):
    from tests.faults import run_cli

    env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url}
    result = run_cli("digest", "--at", DUE.isoformat(), data=tmp_path / "data", **env)
    assert result.returncode == 0, result.stderr
    (post,) = posts(stub)
    assert post.args["channel"] == "C1" and "2GAD 8 person-days" in post.args["text"]
    assert result.stdout.startswith(f"C1 2026-09-28 to 2026-10-04: posted (ts {post.response['ts']})")
    again = run_cli("digest", "--at", DUE.isoformat(), data=tmp_path / "data", **env)
    assert again.stdout == "no digest is due\n" and len(posts(stub)) == 1


def test_cli_dry_run_right_after_subscribing_prints_the_digest(world, stub, tmp_path):
    import json as jsonlib

    from tests.faults import run_cli

    subs.subscribe(world, "C7", Subscribe(("web",), day="fri"), now=datetime.now(UTC))  # nothing due yet
    at = DUE.isoformat()
    text = run_cli("digest", "--dry-run", "--channel", "C7", "--at", at, data=tmp_path / "data")
    assert text.returncode == 0, text.stderr
    # Friday 10-02 covers 09-25..10-01 on web: ann 09-28, ann 09-29, bo 09-30 -> 2GAD 6
    # no Slack token here: the operator's preview shows it all, and says that audiences were not checked
    assert text.stdout.startswith("C7 2026-09-25 to 2026-10-01: dry_run: not posted (dry run); who may see each "
                                  "repository was not checked (Slack could not say what the channel is)\n")
    assert "Weekly 2GAD digest, 2026-09-25 to 2026-10-01" in text.stdout
    assert "2GAD 6 person-days" in text.stdout and "&lt;" not in text.stdout and "*2GAD" not in text.stdout
    out = jsonlib.loads(run_cli("digest", "--dry-run", "--json", "--at", at, data=tmp_path / "data").stdout)
    assert [(d["channel"], d["state"]) for d in out] == [("C1", "dry_run"), ("C7", "dry_run")]
    assert "2GAD 8 person-days" in out[0]["text"] and out[0]["blocks"]
    future = run_cli("digest", "--dry-run", "--at", "2099-01-05T09:00Z", "--channel", "C1", data=tmp_path / "data")
    assert future.returncode == 0 and "C1 2098-12-29 to 2099-01-04: dry_run" in future.stdout
    assert stub.calls == [] and Ledger(world.index).rows() == []
