"""Issue 18, part 0: what a Slack member found wrong, each through the real path.

A signed request -> Bolt (`app.dispatch`) -> the face -> the engine on a real index of repositories
built in code -> the Web API call or response_url body the loopback stand-in received. The
repositories and their hand-worked figures are those of tests/test_surfaces.py (read its docstring).
"""

from __future__ import annotations

import json

import pytest

from bot.faces.slacktext import decode
from tests.boltidle import drain
from tests.slackstub import SlackStub
from tests.test_surfaces import ADMIN, Bot, build, read


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def bot(tmp_path, stub) -> Bot:
    return Bot(tmp_path, stub)


# -- Slack's escaping ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sent, typed", [
    ("web path:R&amp;D", "web path:R&D"),
    ("web author:&lt;ann@example.com&gt;", "web author:<ann@example.com>"),
    ("web &amp;lt;", "web &lt;"),  # a person who typed the entity itself gets it back
    ("track <https://github.com/gstreamer/gstreamer|github.com/gstreamer/gstreamer>",
     "track https://github.com/gstreamer/gstreamer"),
    ("track <https://example.org/a.git?x=1&amp;y=2>", "track https://example.org/a.git?x=1&y=2"),
    ("web author:<mailto:ann@example.com|ann@example.com>", "web author:ann@example.com"),
    ("subscribe web <#C0123ABC|eng-leads>", "subscribe web #eng-leads"),
    ("subscribe web <#C0123ABC>", "subscribe web #C0123ABC"),
    ("web by:person <@U0123ABC> <@U0456DEF|bob>", "web by:person @U0123ABC @U0456DEF"),
    ("ping <!here> <!subteam^S0123|@devs>", "ping @here @devs"),
    ("", ""),
])
def test_decode_undoes_what_slack_encodes(sent, typed):
    assert decode(sent) == typed


def test_an_ampersand_in_a_path_matches_and_is_escaped_once(bot, tmp_path):
    # Slack sends `path:R&D` as `path:R&amp;D`: ann changed R&D/notes.md on two days, bob src/x.c on one
    rnd = build(tmp_path / "rnd", [("ann", "2025-03-03", {"R&D/notes.md": "a\n"}),
                                   ("bob", "2025-03-04", {"src/x.c": "x\n"}),
                                   ("ann", "2025-03-05", {"R&D/notes.md": "b\n"})])
    bot.engine.track(str(rnd.path), "rnd")
    message = bot.ask("rnd path:R&amp;D")
    # ann's two days, doubled; all history shows its first and last day, and the path filter is stated
    assert message["text"] == "rnd: 2GAD 4 person-days, all history (2025-03-03 to 2025-03-05), only path:R&amp;D"
    assert "R&amp;D" in read(message) and "&amp;amp;" not in json.dumps(message)
    # a path that matches nothing is quoted as typed, escaped once for mrkdwn (not `&amp;amp;`)
    miss = bot.ask("rnd path:R&amp;X")
    assert "`path:R&amp;X` matches no file that `rnd` ever changed" in read(miss)
    assert "&amp;amp;" not in json.dumps(miss)


def test_a_mailto_author_counts_that_author(bot):
    # ann on web: 2024-01-02, 2024-02-01, 2026-11-23, 2026-11-24, 2026-11-30 -> 5 days, 2GAD 10
    message = bot.ask("web author:<mailto:ann@example.com|ann@example.com>")
    assert message["text"] == "web: 2GAD 10 person-days, all history (2024-01-02 to 2026-11-30), only author:ann@example.com"


# -- admin commands are refused in the ack ----------------------------------------------------------


def test_track_by_a_non_admin_is_refused_in_the_ack(bot, stub):
    ack, name = bot.slash("track <https://github.com/gstreamer/gstreamer|github.com/gstreamer/gstreamer>",
                          user="U999")
    assert "Only the people gad-bot's operator listed can do that (<@UADMIN>)" in read(ack)
    assert "Tracking" not in json.dumps(ack)
    drain(bot.app)  # the lazy work has returned: anything it would post is posted
    assert stub.responses(name) == []  # one answer, in the ack


@pytest.mark.parametrize("text", ["sync web", "untrack web", "project add suite web api", "project remove suite"])
def test_other_admin_commands_are_refused_in_the_ack(bot, stub, text):
    ack, name = bot.slash(text, user="U999")
    assert "Only the people gad-bot's operator listed can do that (<@UADMIN>)" in read(ack)
    drain(bot.app)
    assert stub.responses(name) == []
    assert bot.engine.known_names() == ["api", "web"] and bot.engine.projects() == {}


def test_a_failed_track_replaces_its_tracking_message(bot, stub, tmp_path, monkeypatch):
    """An admin tracks a URL the (loopback) git server does not have: the failure replaces "Tracking ..."."""
    from bot.faces import slack as face_module
    from tests.faults import GitHttpServer

    served = tmp_path / "served"
    served.mkdir()
    monkeypatch.setattr(face_module, "check_remote_source", lambda text, policy: text)
    track = bot.face.engine.track
    monkeypatch.setattr(bot.face.engine, "track", lambda *a, guarded=False, **k: track(*a, **k))
    with GitHttpServer(served) as server:
        ack, name = bot.slash(f"track {server.url('missing.git')} as:missing", user=ADMIN)
        assert "Tracking" in ack["text"]
        (failure,) = stub.wait_for_response(name, count=1, timeout=30)
    assert failure["replace_original"] is True
    assert failure["text"].startswith(":warning:") or read(failure).startswith(":warning:")
    assert "missing" not in bot.engine.known_names()
