"""Channels kept apart, the digest's "Most active" order, and the Slack request gate from both sides
(issue 20, part 3). Histories are built in code; expected values are worked out by hand here."""

from __future__ import annotations

import urllib.parse
from datetime import timedelta

import pytest

from bot.digests import subscriptions as subs
from bot.engine.query import Subscribe, Unsubscribe
from tests.slackstub import slack_signature
from tests.test_digest import (CREATED, DUE, _shift, all_text, build_repos, make_engine, posts, run,  # noqa: F401
                               stub, world)


# -- the digest's "Most active" list -----------------------------------------------------------------

def test_most_active_ranks_by_active_days_then_commits_then_name(tmp_path, stub):
    # the digest week due at DUE runs 2026-09-28 to 2026-10-04 (tests/test_digest.py):
    #   zz: 2 days, 3 commits; al: 2 days, 2 commits; mo: 1 day, 6 commits
    # by active days, then commits, then name: zz, al, mo (by name: al first; by commits: mo first)
    history = ([("web", "zz@example.com", "2026-09-28T10:00", 0), ("web", "zz@example.com", "2026-09-29T10:00", 0),
                ("web", "zz@example.com", "2026-09-29T11:00", 0),
                ("web", "al@example.com", "2026-09-30T10:00", 0), ("web", "al@example.com", "2026-10-01T10:00", 0)]
               + [("web", "mo@example.com", f"2026-10-02T1{i}:00", 0) for i in range(6)])
    engine = make_engine(tmp_path)
    for name, b in build_repos(tmp_path / "up", history).items():
        engine.track(str(b.path), name, in_place=True)
    subs.subscribe(engine, "CP", Subscribe(("web",), tz="UTC", people=True), now=CREATED)
    run(engine, stub, DUE)
    text = all_text(posts(stub, "CP")[0].args["blocks"])
    listed = text[text.index("Most active this week"):]
    assert [listed.index(p) for p in ("zz@", "al@", "mo@")] == sorted(listed.index(p) for p in ("zz@", "al@", "mo@"))
    assert "`zz@example.com` — 2 active days · 3 commits" in listed


# -- isolation between channels ----------------------------------------------------------------------

def _channel_state(engine, channel: str) -> tuple:
    """Everything stored about one channel: its subscription row, its names, its ledger."""
    db = engine.index
    sub = db.execute("SELECT * FROM subscriptions WHERE channel_id = ?", (channel,)).fetchall()
    names = db.execute("SELECT r.name FROM subscription_repos r JOIN subscriptions s ON s.id = r.subscription_id "
                       "WHERE s.channel_id = ? ORDER BY r.name", (channel,)).fetchall()
    ledger = db.execute("SELECT * FROM deliveries WHERE channel_id = ? ORDER BY period_start", (channel,)).fetchall()
    return sub, names, ledger


def test_unsubscribing_or_pausing_one_channel_leaves_every_other_alone(world, stub):
    subs.subscribe(world, "C2", Subscribe(("web", "api"), tz="UTC"), now=CREATED)
    subs.subscribe(world, "C3", Subscribe(("web",), tz="UTC"), now=CREATED)
    run(world, stub, DUE)  # C1, C2 and C3 each get the week's digest: a ledger row each
    before = {c: _channel_state(world, c) for c in ("C2", "C3")}
    assert all(state[2] for state in before.values()) and before["C2"][1] == [("api",), ("web",)]

    subs.unsubscribe(world, "C1", Unsubscribe(("web",)))  # a name C2 and C3 also follow
    subs.pause(world.index, "C1", "channel_not_found")
    subs.unsubscribe(world, "C1", Unsubscribe(("all",)))
    assert _channel_state(world, "C1")[:2] == ([], [])
    assert _channel_state(world, "C1")[2], "the ledger outlives the subscription (no repost on resubscribe)"
    assert {c: _channel_state(world, c) for c in ("C2", "C3")} == before

    subs.pause(world.index, "C3", "is_archived")
    assert _channel_state(world, "C2") == before["C2"]
    assert not subs.get(world.index, "C2").paused and subs.get(world.index, "C3").paused
    # the next week only C2 is posted: C1 left, C3 is paused (and reported so)
    results = run(world, stub, DUE + timedelta(days=7))
    assert sorted((r.channel_id, r.state) for r in results) == [("C2", "posted"), ("C3", "paused")]


# -- the request gate, from both sides ---------------------------------------------------------------

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
NOW = 1_800_000_000


@pytest.fixture
def gate(tmp_path):
    from bot.faces.slack import RequestGate
    from bot.store.index import Index

    clock = [float(NOW)]
    return RequestGate(SECRET, Index(tmp_path / "index.sqlite"), clock=lambda: clock[0]), clock


def _signed(timestamp: int, text: str = "help") -> tuple[dict[str, str], bytes]:
    body = urllib.parse.urlencode({"command": "/gad", "text": text, "user_id": "U1", "team_id": "T1"}).encode()
    return ({"x-slack-request-timestamp": str(timestamp), "content-type": "application/x-www-form-urlencoded",
             "x-slack-signature": slack_signature(SECRET, str(timestamp), body)}, body)


@pytest.mark.parametrize("offset, status", [
    (-300, 200), (-301, 401),  # five minutes old passes; a second more is stale
    (300, 200), (301, 401),  # and the same on the other side: a timestamp from the future
    (86_400, 401),  # a day ahead: a clock attack, not skew
])
def test_the_window_holds_on_both_sides_of_now(gate, offset, status):
    check, _ = gate
    headers, body = _signed(NOW + offset)
    verdict = check.check(headers, body)
    assert verdict.status == status
    if status == 401:
        assert verdict.reason == "timestamp outside the five-minute window"


def test_a_replay_is_refused_after_other_traffic(gate):
    check, clock = gate
    first = _signed(NOW, "web")
    assert check.check(*first).status == 200
    for i in range(1, 6):  # other people's requests in between, some seconds apart
        clock[0] += 10
        assert check.check(*_signed(NOW + 10 * i, f"web since:{2020 + i}")).status == 200
    clock[0] += 200  # still inside the first request's window (250 s after it)
    verdict = check.check(*first)
    assert (verdict.status, verdict.reason) == (401, "replay of a request already accepted")
    assert check.check(*_signed(int(clock[0]), "web")).status == 200  # the same words asked afresh pass
