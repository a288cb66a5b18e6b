"""Subscriptions: what `/gad subscribe|unsubscribe|subscriptions` store and show, and when a digest is due."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.cron import CronTrigger

from bot.digests import subscriptions as subs
from bot.digests.face import DigestFace, channel_view
from bot.errors import QueryError, UnknownRepoError
from bot.engine.query import WEEKDAYS, Unsubscribe, parse_command
from bot.digests.blocks import REPOS_PER_PAGE, subscribe_blocks, subscriptions_blocks, unsubscribe_blocks
from tests.test_digest import build_repos, make_engine, tracking_engine

UTC = timezone.utc
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path):
    return tracking_engine(tmp_path, GAD_TZ="America/New_York")


def command(text: str):
    return parse_command(text, NOW.date())


# -- storing ----------------------------------------------------------------------------------------


def test_defaults_monday_nine_in_the_subscribers_zone(engine):
    result = subs.subscribe(engine, "C1", command("subscribe web"), user_tz="Europe/Berlin", user_id="U1",
                            team_id="T1", now=NOW)
    sub = result.subscription
    assert result.created and result.added == ("web",)
    assert (sub.weekday, sub.at, sub.tz, sub.people, sub.repos) == (0, time(9, 0), "Europe/Berlin", False, ("web",))
    assert sub.created_by == "U1" and sub.team_id == "T1" and sub.created_at == NOW


def test_operator_zone_when_the_subscribers_is_unknown_or_bad(engine):
    assert subs.subscribe(engine, "C1", command("subscribe web"), now=NOW).subscription.tz == "America/New_York"
    assert subs.subscribe(engine, "C2", command("subscribe web"), user_tz="Mars/Olympus", now=NOW).subscription.tz \
        == "America/New_York"


def test_subscribing_again_updates_settings_and_adds_repositories(engine):
    subs.subscribe(engine, "C1", command("subscribe web day:fri time:16:30 tz:Asia/Tokyo"), now=NOW)
    later = NOW + timedelta(days=1)
    result = subs.subscribe(engine, "C1", command("subscribe api web people:on"), user_tz="Europe/Paris", now=later)
    sub = result.subscription
    assert not result.created and result.added == ("api",) and result.changed == ("people",)
    # settings not given are kept (the subscriber's own zone does not override the subscription's)
    assert (sub.weekday, sub.at, sub.tz, sub.people) == (4, time(16, 30), "Asia/Tokyo", True)
    assert sub.repos == ("api", "web") and sub.updated_at == later and sub.created_at == NOW
    again = subs.subscribe(engine, "C1", command("subscribe web day:tue"), now=later)
    assert again.added == () and again.changed == ("day",) and again.subscription.weekday == 1


def test_unknown_repository_writes_nothing(engine):
    with pytest.raises(UnknownRepoError):
        subs.subscribe(engine, "C1", command("subscribe web nosuch"), now=NOW)
    assert subs.get(engine.index, "C1") is None


def test_a_channel_is_needed(engine):
    with pytest.raises(QueryError):
        subs.subscribe(engine, "", command("subscribe web"), now=NOW)


def test_unsubscribe_some_then_all(engine):
    subs.subscribe(engine, "C1", command("subscribe web api docs"), now=NOW)
    result = subs.unsubscribe(engine, "C1", command("unsubscribe api nosuch"))
    assert result.removed == ("api",) and result.not_subscribed == ("nosuch",)
    assert result.remaining.repos == ("docs", "web")
    result = subs.unsubscribe(engine, "C1", command("unsubscribe all"))
    assert result.removed == ("docs", "web") and result.remaining is None
    assert subs.get(engine.index, "C1") is None
    assert subs.unsubscribe(engine, "C1", command("unsubscribe web")).not_subscribed == ("web",)


def test_removing_the_last_repository_ends_the_subscription(engine):
    subs.subscribe(engine, "C1", command("subscribe web"), now=NOW)
    assert subs.unsubscribe(engine, "C1", command("unsubscribe web")).remaining is None
    assert subs.all_subscriptions(engine.index) == []


def test_pause_and_resubscribe(engine):
    subs.subscribe(engine, "C1", command("subscribe web"), now=NOW)
    subs.pause(engine.index, "C1", "is_archived", NOW)
    assert subs.get(engine.index, "C1").paused and subs.all_subscriptions(engine.index, include_paused=False) == []
    result = subs.subscribe(engine, "C1", command("subscribe web"), now=NOW)
    assert result.unpaused == "is_archived" and not result.subscription.paused


def test_fingerprint_follows_changes(engine):
    before = subs.fingerprint(engine.index)
    subs.subscribe(engine, "C1", command("subscribe web"), now=NOW)
    first = subs.fingerprint(engine.index)
    subs.subscribe(engine, "C1", command("subscribe api"), now=NOW)  # same updated_at, one more repository
    assert len({before, first, subs.fingerprint(engine.index)}) == 3


# -- when a digest is due ---------------------------------------------------------------------------


def make_sub(day="mon", at=time(9, 0), tz="UTC", created=datetime(2020, 1, 1, tzinfo=UTC)) -> subs.Subscription:
    return subs.Subscription(id=1, channel_id="C1", team_id=None, weekday=WEEKDAYS.index(day), at=at, tz=tz,
                             people=False, repos=("web",), created_by=None, created_at=created, updated_at=created)


def test_period_is_the_seven_days_before_the_delivery_day():
    monday = make_sub("mon")  # Monday 2026-11-30: Monday 11-23 to Sunday 11-29, the week just ended
    assert monday.due_at(date(2026, 11, 23)) == datetime(2026, 11, 30, 9, tzinfo=UTC)
    assert monday.period_due_before(datetime(2026, 11, 30, 9, tzinfo=UTC)) == date(2026, 11, 23)
    assert subs.period_of(date(2026, 11, 23)) == (date(2026, 11, 23), date(2026, 11, 29))
    friday = make_sub("fri", time(16, 0))  # Friday 2026-12-04: Friday 11-27 to Thursday 12-03, not 11-23 to 11-29
    assert friday.due_at(date(2026, 11, 27)) == datetime(2026, 12, 4, 16, tzinfo=UTC)
    assert friday.period_due_before(datetime(2026, 12, 4, 16, tzinfo=UTC)) == date(2026, 11, 27)
    assert friday.period_due_before(datetime(2026, 12, 4, 15, 59, tzinfo=UTC)) == date(2026, 11, 20)
    assert subs.period_of(date(2026, 11, 27)) == (date(2026, 11, 27), date(2026, 12, 3))
    sunday = make_sub("sun")  # Sunday 2026-12-06: Sunday 11-29 to Saturday 12-05
    assert sunday.due_at(date(2026, 11, 29)) == datetime(2026, 12, 6, 9, tzinfo=UTC)
    assert sunday.period_words() == "the 7 days before it (Sunday to Saturday)"
    assert monday.period_words() == "the previous week (Monday to Sunday)"


def test_period_due_before_and_next_due():
    sub = make_sub("mon")
    assert sub.period_due_before(datetime(2026, 11, 30, 9, tzinfo=UTC)) == date(2026, 11, 23)
    assert sub.period_due_before(datetime(2026, 11, 30, 8, 59, tzinfo=UTC)) == date(2026, 11, 16)
    assert sub.next_due(datetime(2026, 11, 30, 8, 59, tzinfo=UTC)) == (date(2026, 11, 23),
                                                                      datetime(2026, 11, 30, 9, tzinfo=UTC))
    assert sub.next_due(datetime(2026, 11, 30, 9, tzinfo=UTC))[0] == date(2026, 11, 30)


def test_local_week_in_a_zone_far_from_utc():
    sub = make_sub("mon", time(8, 0), "Pacific/Auckland")  # Monday 08:00 NZDT is Sunday 19:00 UTC
    due = sub.due_at(date(2026, 11, 23))
    assert due == datetime(2026, 11, 29, 19, tzinfo=UTC)
    assert sub.period_due_before(due) == date(2026, 11, 23)


def test_due_periods_honour_grace_and_creation():
    sub = make_sub("mon", created=datetime(2026, 11, 10, tzinfo=UTC))
    grace = timedelta(hours=24)
    assert sub.due_periods(datetime(2026, 11, 30, 9, tzinfo=UTC), grace) == [
        (date(2026, 11, 23), datetime(2026, 11, 30, 9, tzinfo=UTC))]
    assert sub.due_periods(datetime(2026, 12, 1, 8, 59, tzinfo=UTC), grace)[0][0] == date(2026, 11, 23)
    assert sub.due_periods(datetime(2026, 12, 1, 9, tzinfo=UTC), grace) == []  # beyond the grace period
    long = sub.due_periods(datetime(2026, 11, 30, 9, tzinfo=UTC), timedelta(days=60))
    # newest first, down to the week due after creation (due 16 Nov); not the one due 9 Nov, before it
    assert [p for p, _ in long] == [date(2026, 11, 23), date(2026, 11, 16), date(2026, 11, 9)]


def test_dst_gap_and_overlap_resolution():
    london = ZoneInfo("Europe/London")
    # 01:30 on 29 March 2026 does not exist: due at 01:30 GMT (02:30 BST)
    assert subs.resolve_local(date(2026, 3, 29), time(1, 30), london) == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    # 01:30 on 25 October 2026 happens twice: the first (BST)
    assert subs.resolve_local(date(2026, 10, 25), time(1, 30), london) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize("tz", ["Europe/London", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata",
                                "America/Santiago"])
@pytest.mark.parametrize("at", [time(0, 30), time(1, 30), time(2, 0), time(2, 30), time(9, 0), time(23, 45)])
def test_due_instants_are_cron_triggers_first_fire_each_week(tz, at):
    """A year of weeks: one due instant per week, the first time CronTrigger fires on that local day."""
    for day in WEEKDAYS:
        sub = make_sub(day, at, tz)
        trigger = CronTrigger(**sub.cron_fields(), timezone=sub.zone)
        fires: dict[date, datetime] = {}
        previous, now = None, datetime(2026, 1, 1, tzinfo=UTC)
        while now < datetime(2027, 1, 10, tzinfo=UTC):
            fire = trigger.get_next_fire_time(previous, now)
            local_day = fire.replace(tzinfo=None).date()
            fires.setdefault(local_day, fire.astimezone(UTC))
            previous = now = fire
        period = date(2025, 12, 22) + timedelta(days=sub.weekday)  # periods start on the delivery weekday
        seen = 0
        while period < date(2026, 12, 21):
            due = sub.due_at(period)
            delivery_day = period + timedelta(days=7)
            if delivery_day in fires:
                assert fires[delivery_day] == due, (day, period)
                seen += 1
            assert sub.period_due_before(due) == period
            assert sub.period_due_before(due - timedelta(seconds=1)) == period - timedelta(days=7)
            period += timedelta(days=7)
        assert seen >= 50


# -- what people see --------------------------------------------------------------------------------


def test_subscriptions_view_schedule_next_and_last(engine):
    subs.subscribe(engine, "C1", command("subscribe web api tz:Europe/London time:08:15 day:wed"), now=NOW)
    engine.untrack("api")
    view = channel_view(engine, "C1", NOW)
    assert view.untracked == ("api",) and view.tracked == ("web",)
    # Wednesday 2026-11-04 08:15 GMT covers Wednesday 10-28 to Tuesday 11-03
    assert view.next_due == datetime(2026, 11, 4, 8, 15, tzinfo=UTC) and view.next_period == date(2026, 10, 28)
    assert view.last is None
    text, blocks = subscriptions_blocks(view)
    body = json.dumps(blocks)
    assert "Wednesdays at 08:15 (Europe/London)" in body and "none yet" in body and "no longer tracked" in body
    assert "*Next digest:* Wed 2026-11-04 08:15, covering 2026-10-28 to 2026-11-03" in body
    assert channel_view(engine, "C-none", NOW) is None
    assert "no digest subscription" in subscriptions_blocks(None)[0]


def test_long_subscription_lists_are_paginated(tmp_path):
    history = [(f"repo{i:03d}", "a@example.com", "2026-06-01T12:00", 0) for i in range(REPOS_PER_PAGE * 2 + 5)]
    engine = make_engine(tmp_path)
    for name, b in build_repos(tmp_path / "up", history).items():
        engine.track(str(b.path), name, in_place=True)
    names = " ".join(r.name for r in engine.repos())
    subs.subscribe(engine, "C1", command(f"subscribe {names}"), now=NOW)
    view = channel_view(engine, "C1", NOW)
    pages = [json.dumps(subscriptions_blocks(view, page)[1]) for page in (1, 2, 3, 9)]
    assert "repo000" in pages[0] and "repo040" not in pages[0] and "subscriptions 2" in pages[0]
    assert "repo040" in pages[1] and "Page 2 of 3" in pages[1]
    assert "repo084" in pages[2] and "for the next" not in pages[2]
    assert pages[3] == pages[2]  # past the end: the last page
    for page in pages:
        for block in json.loads(page):
            assert len(block.get("text", {}).get("text", "")) <= 3000


def test_confirmation_messages(engine):
    result = subs.subscribe(engine, "C1", command("subscribe web api"), user_tz="Europe/London", now=NOW)
    text, blocks = subscribe_blocks(result, next_due=result.subscription.next_due(NOW)[1], by="U0ANN1")
    body = json.dumps(blocks)
    assert text == "<@U0ANN1> subscribed this channel to api, web."  # a mention: Slack shows the name
    assert body.startswith('[{"type": "section", "text": {"type": "mrkdwn", "text": "<@U0ANN1> subscribed this channel '
                           'to `api`, `web`.\\n:white_check_mark: *Subscribed.*')
    assert "Mondays at 09:00 (Europe/London)" in body and "Mon 2026-11-02 09:00" in body
    text, blocks = unsubscribe_blocks(subs.unsubscribe(engine, "C1", Unsubscribe(("web", "zzz"))), by="U0ANN1")
    body = json.dumps(blocks)
    assert text == "<@U0ANN1> removed web from this channel's digest."
    assert "<@U0ANN1> removed `web` from this channel's digest." in body
    assert "Unsubscribed from" in body and "`zzz`" in body and "Still subscribed (1)" in body


def as_member(channel: str) -> dict:
    """A member of the workspace asking in a channel not shared outside it: every repository here is open to
    everyone, so these tests are about the subscriptions themselves (audiences: tests/test_access_faces.py)."""
    from bot.engine.audiences import Viewer

    return {"viewer": Viewer("U0ANN1", member=True),
            "channel_viewer": lambda: Viewer.of_channel(channel, shared_outside=False)}


@pytest.mark.parametrize("change, announced", [
    ("subscribe web day:fri", "<@U0ANN1> moved this channel's weekly digest to Fridays at 09:00 (Europe/London)."),
    ("subscribe api", "<@U0ANN1> added `api` to this channel's digest."),
    ("subscribe web people:on", "<@U0ANN1> made this channel's digest show people's names."),
    ("subscribe web", None),  # nothing changed: nothing to announce
])
def test_every_change_is_announced_by_name(engine, change, announced):
    subs.subscribe(engine, "C1", command("subscribe web"), user_tz="Europe/London", now=NOW)
    face = DigestFace(engine.settings, engine, clock=lambda: NOW)
    reply = face.handle(command(change), channel_id="C1", **as_member("C1"), user_id="U0ANN1")
    assert reply.public == (announced is not None)
    if announced:  # the notification text names the person by a mention and says what changed, not "it"
        assert reply.text == re.sub(r"`([^`]*)`", r"\1", announced)
        assert not re.search(r"(?<!<)@U|\bit\b", reply.text)
        assert json.dumps(reply.blocks).startswith(f'[{{"type": "section", "text": {{"type": "mrkdwn", "text": '
                                                   f'"{announced}')
    reply = face.handle(command("unsubscribe all"), channel_id="C1", **as_member("C1"), user_id="U<script>")
    assert reply.public and "U&lt;script&gt; unsubscribed this channel from its weekly digest" in json.dumps(reply.blocks)


def test_names_are_escaped(engine):
    subs.subscribe(engine, "C1", command("subscribe web"), now=NOW)
    engine.index.execute("INSERT INTO subscription_repos SELECT id, '<!channel>' FROM subscriptions")
    body = json.dumps(subscriptions_blocks(channel_view(engine, "C1", NOW))[1])
    assert "<!channel>" not in body and "&lt;!channel&gt;" in body


# -- the face the Slack layer calls -----------------------------------------------------------------


def test_digest_face_handles_the_four_commands(engine):
    changes: list[int] = []
    face = DigestFace(engine.settings, engine, on_change=lambda: changes.append(1), clock=lambda: NOW)
    reply = face.handle(command("subscribe web api time:10:00"), channel_id="C1", **as_member("C1"), team_id="T1",
                        user_id="U0ANN1", user_tz="Europe/London")
    assert reply.public and "<@U0ANN1> subscribed this channel" in json.dumps(reply.blocks)
    assert "Mondays at 10:00 (Europe/London)" in json.dumps(reply.blocks) and changes == [1]
    reply = face.handle(command("subscriptions"), channel_id="C1", **as_member("C1"))
    assert not reply.public and "Weekly digest" in json.dumps(reply.blocks) and changes == [1]
    reply = face.handle(command("digest"), channel_id="C1", **as_member("C1"))
    assert not reply.public and reply.text.startswith("Preview") and len(reply.blocks) <= 50
    reply = face.handle(command("unsubscribe nosuch"), channel_id="C1", **as_member("C1"))
    assert not reply.public and changes == [1]  # nothing removed, nothing to rebuild or announce
    reply = face.handle(command("unsubscribe all"), channel_id="C1", **as_member("C1"), user_id="U0BOB2")
    assert reply.public and reply.text == "<@U0BOB2> unsubscribed this channel from its weekly digest."
    assert changes == [1, 1] and subs.get(engine.index, "C1") is None
    with pytest.raises(Exception):
        face.handle(command("digest"), channel_id="C1", **as_member("C1"))


def test_a_failing_reload_does_not_fail_the_command(engine):
    def broken():
        raise RuntimeError("scheduler down")

    face = DigestFace(engine.settings, engine, on_change=broken, clock=lambda: NOW)
    reply = face.handle(command("subscribe web"), channel_id="C1", **as_member("C1"))
    assert "Subscribed" in json.dumps(reply.blocks)


def test_untracking_a_repository_removes_it_from_subscriptions(engine):
    changes: list[int] = []
    face = DigestFace(engine.settings, engine, on_change=lambda: changes.append(1), clock=lambda: NOW)
    face.handle(command("subscribe web api"), channel_id="C1", **as_member("C1"))
    face.handle(command("subscribe web"), channel_id="C2", **as_member("C2"))
    changes.clear()
    engine.untrack("web")
    assert face.forget_repo("web") == ["C1", "C2"] and changes == [1]
    assert subs.get(engine.index, "C1").repos == ("api",)
    assert subs.get(engine.index, "C2") is None
    assert face.forget_repo("web") == [] and changes == [1]
