"""`gad-bot release-digest` (issue 32, section 4): a digest that a kill -9 during its post left `unknown` is
never posted again by itself; the operator, having looked at the channel, releases it and the next run posts
it once. Real processes (`gad-bot digest`, `gad-bot release-digest`) on a real index, Slack played by the stub.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.digests import subscriptions as subs
from bot.digests.digest import STALE_POSTING, Ledger
from bot.engine.query import Subscribe
from tests.faults import run_cli
from tests.slackstub import SlackStub
from tests.test_digest import CREATED, DUE, UTC, WEEK, build_repos, make_engine


def _posting_killed(engine, minutes_ago: float) -> None:
    """What a `gad-bot digest` killed inside chat.postMessage leaves: the row in `posting`."""
    ledger = Ledger(engine.index)
    claim = ledger.claim("C1", WEEK, datetime.now(UTC) - timedelta(minutes=minutes_ago), token="killed-mid-post")
    assert claim and ledger.start_post(claim)


def test_a_digest_left_unknown_is_released_by_the_operator_and_posted_once(tmp_path):
    engine = make_engine(tmp_path)
    for name, builder in build_repos(tmp_path / "up").items():
        engine.track(str(builder.path), name, in_place=True)
    subs.subscribe(engine, "C1", Subscribe(("web", "api", "docs"), tz="UTC"), now=CREATED)
    _posting_killed(engine, minutes_ago=STALE_POSTING.total_seconds() / 60 + 1)
    data = tmp_path / "data"
    with SlackStub() as stub:
        env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url}
        kept = run_cli("digest", "--at", DUE.isoformat(), data=data, **env)
        assert kept.returncode == 0 and "not reposted" in kept.stdout, kept.stdout + kept.stderr
        assert stub.calls_to("chat.postMessage") == []

        released = run_cli("release-digest", "C1", data=data)
        assert released.returncode == 0, released.stderr
        assert released.stdout.strip() == ("released the digest of C1 for the week of 2026-09-28: the next run posts "
                                           "it, if that is within GAD_DIGEST_GRACE_HOURS (24 h) of when it fell due.")
        posted = run_cli("digest", "--at", (DUE + timedelta(minutes=1)).isoformat(), data=data, **env)
        assert posted.returncode == 0 and "posted" in posted.stdout, posted.stdout + posted.stderr
        assert len(stub.calls_to("chat.postMessage")) == 1

        again = run_cli("release-digest", "C1", data=data)
        assert again.returncode == 2 and "Traceback" not in again.stderr
        assert again.stderr.strip() == "gad-bot: C1 has no digest left unknown: there is nothing to release."
        named = run_cli("release-digest", "C1", "2026-09-28", data=data)
        assert named.stderr.strip() == ("gad-bot: The digest of C1 for the week of 2026-09-28 is posted, not unknown: "
                                        "there is nothing to release.")
        assert len(stub.calls_to("chat.postMessage")) == 1


def test_a_post_still_under_way_is_not_released(tmp_path):
    engine = make_engine(tmp_path)
    for name, builder in build_repos(tmp_path / "up").items():
        engine.track(str(builder.path), name, in_place=True)
    subs.subscribe(engine, "C1", Subscribe(("web",), tz="UTC"), now=CREATED)
    _posting_killed(engine, minutes_ago=1)  # could still be posting: shown as in progress, not unknown
    result = run_cli("release-digest", "C1", "2026-09-28", data=tmp_path / "data")
    assert result.returncode == 2, result.stdout
    assert "is being posted" in result.stderr and "15 minutes after it began" in result.stderr, result.stderr
    assert [r.state for r in Ledger(engine.index).rows("C1")] == ["posting"]
    bad = run_cli("release-digest", "C1", "last-week", data=tmp_path / "data")
    assert bad.returncode == 2 and "is not a day" in bad.stderr, bad.stderr
