"""Every surface a Slack member sees, through its real path, with figures worked out by hand.

A signed request goes to Bolt's own request handling (`app.dispatch`), the face asks the engine on a
real index of repositories built in code, the renderers build Block Kit, and the assertions read
what the loopback Slack stand-in received: the response_url bodies, chat.postMessage,
views.publish, the uploaded files. Digests are enabled, as in `gad-bot serve`.

The history of `web` (UTC, offset 0), and what follows from it:

    ann 2024-01-02 src/a.c        bob 2024-01-03 docs/readme.md     ann 2024-02-01 src/b.c
    bob 2026-11-22 (Sunday, W47)
    ann 2026-11-23, ann 2026-11-24 twice, bob 2026-11-24            (the week of 23 November, W48)
    ann 2026-11-30 (this week; today is Thursday 2026-12-03)

    January 2024: (ann, 01-02), (bob, 01-03)      -> 2 person-days, 2GAD 4, 2 commits
    all history: 8 (person, day) pairs            -> 2GAD 16, 9 commits
    W48: (ann, 23), (ann, 24), (bob, 24)          -> 2GAD 6; ann 2 days 3 commits, bob 1 day 1 commit

`api`: di 2026-11-25 (W48: 2GAD 2) and ann 2024-01-02 (the same person-day as on web).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from slack_bolt.request import BoltRequest

from bot.digests import subscriptions as subs
from bot.config import Settings
from bot.engine.engine import Engine
from bot.faces.slack import LAZY_THREADS, build_app
from bot.digests.face import DigestFace
from tests.boltidle import drain
from tests.gitbuild import RepoBuilder
from tests.slackstub import (SlackStub, app_home_opened_event, text_objects, block_actions_payload, event_callback,
                             signed_event, signed_interaction, signed_slash_command)

from datetime import date, datetime, timedelta, timezone

SECRET = "surfaces-signing-secret"
TODAY = date(2026, 12, 3)
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)
ADMIN = "UADMIN"

WEB = [("ann", "2024-01-02", {"src/a.c": "int a;\n"}), ("bob", "2024-01-03", {"docs/readme.md": "hi\n"}),
       ("ann", "2024-02-01", {"src/b.c": "int b;\n"}), ("bob", "2026-11-22", None), ("ann", "2026-11-23", None),
       ("ann", "2026-11-24T10:00", None), ("ann", "2026-11-24T15:00", None), ("bob", "2026-11-24", None),
       ("ann", "2026-11-30", None)]
API = [("ann", "2024-01-02", None), ("di", "2026-11-25", None)]


def build(path, history) -> RepoBuilder:
    b = RepoBuilder(path)
    for who, when, files in history:
        b.commit(name=who.title(), email=f"{who}@example.com", date=when, files=files)
    return b


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


class Bot:
    """The Bolt app of `gad-bot serve` (digests on), in process, and helpers to talk to it as Slack does."""

    def __init__(self, tmp_path, stub):
        self.stub = stub
        self.web = build(tmp_path / "web", WEB)
        self.api = build(tmp_path / "api", API)
        self.settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                           "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url,
                                           "GAD_ADMINS": ADMIN})
        self.engine = Engine.open(self.settings)
        self.engine.track(str(self.web.path), "web")
        self.engine.track(str(self.api.path), "api")
        self.digests = DigestFace(self.settings, self.engine, clock=lambda: NOW)
        self.app, self.face = build_app(self.settings, self.engine, digests=self.digests, socket_mode=False,
                                        today=lambda: TODAY)

    def _dispatch(self, body: bytes, headers: dict):
        return self.app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))

    def slash(self, text: str, *, user: str = "U123", channel: str = "C123") -> tuple[dict, str]:
        """Send `/gad text`; return (the ack's body, the response_url's name)."""
        name = f"r-{uuid.uuid4().hex[:8]}"
        fields = self.stub.slash_fields(text, user_id=user, channel_id=channel, response_name=name)
        response = self._dispatch(*signed_slash_command(SECRET, fields))
        assert response.status == 200
        return (json.loads(response.body) if response.body else {}), name

    def ask(self, text: str, **kw) -> dict:
        """`/gad text` answered after the ack (the lazy work): the one body on its response_url."""
        ack, name = self.slash(text, **kw)
        assert ack == {}, ack
        return self.stub.wait_for_response(name, count=1, timeout=15)[-1]

    def click_share(self, message: dict, *, user: str = "U123") -> str:
        """Press the Share button of an answer, with the value Slack would send back."""
        (button,) = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
        name = f"share-{uuid.uuid4().hex[:8]}"
        payload = block_actions_payload(button["action_id"], button["value"], user_id=user,
                                        response_url=self.stub.response_url(name))
        assert self._dispatch(*signed_interaction(SECRET, payload)).status == 200
        return name

    def click(self, message: dict, action_id: str, *, user: str = "U123") -> str:
        """Press the button `action_id` of a message; return the name of its response_url."""
        (button,) = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]
                     if e["action_id"] == action_id]
        name = f"click-{uuid.uuid4().hex[:8]}"
        payload = block_actions_payload(action_id, button.get("value"), user_id=user,
                                        response_url=self.stub.response_url(name))
        assert self._dispatch(*signed_interaction(SECRET, payload)).status == 200
        return name

    def open_home(self, user: str = "U123") -> dict:
        response = self._dispatch(*signed_event(SECRET, event_callback(app_home_opened_event(user))))
        assert response.status == 200
        self._homes = getattr(self, "_homes", 0) + 1
        self.stub.wait_for("views.publish", count=self._homes, timeout=15)
        return self.stub.home_views[user]


@pytest.fixture
def bot(tmp_path, stub) -> Bot:
    return Bot(tmp_path, stub)


def read(message: dict) -> str:
    """What a person reads: every text object of the blocks, in order (mrkdwn as sent)."""
    return "\n".join(obj["text"] for obj in text_objects(message.get("blocks", [])))


def figure_and_rows(message: dict) -> str:
    """The part of an answer that carries figures (everything but who shared it and the button)."""
    return "\n".join(t for t in read(message).splitlines() if not t.startswith(("Shared by", "Share in channel")))


# -- reports ----------------------------------------------------------------------------------------


def test_report_with_until_answers_that_period(bot):
    message = bot.ask("web since:2024-01 until:2024-01")
    assert message["response_type"] == "ephemeral"
    assert message["text"] == "web: 2GAD 4 person-days, 2024-01-01 to 2024-01-31"
    shown = read(message)
    assert "*2GAD 4 person-days*" in shown and "2 developers · 2 commits · 2 active days (GAD)" in shown
    assert "*Period:* 2024-01-01 to 2024-01-31" in shown
    everything = bot.ask("web since:2024-01")
    assert everything["text"] == "web: 2GAD 16 person-days, since 2024-01-01"  # all 8 person-days


def test_an_ack_never_waits_behind_lazy_work(bot, stub):
    """Twenty people ask at once while Slack is slow to say who they are (each one's lazy work waits on users.info,
    more than the lazy threads, so some wait for a thread): a twenty-first person's typo is still refused in the
    ack, before Slack has answered anyone, and then all twenty get their figure. With Bolt's one pool for acks and
    lazy work the held lazy functions took every thread and the ack waited for them (366 ms p50 in bench_load.py
    --heavy; here it never came)."""
    release = stub.hold("users.info")
    with ThreadPoolExecutor(20) as pool:
        asked = list(pool.map(lambda i: bot.slash("web since:2024-01 until:2024-01", user=f"UQ{i:03d}"), range(20)))
    assert [ack for ack, _ in asked] == [{}] * 20  # nobody's viewer is cached: the lazy work asks Slack
    busy = min(20, LAZY_THREADS)
    assert stub.wait_held("users.info", busy)  # every lazy thread is inside Slack's slowness, the rest wait for one
    refused, _ = bot.slash("web since:someday", user="UQ999")
    assert "someday" in refused["text"] and refused["response_type"] == "ephemeral"
    assert stub.held["users.info"] == busy and not any(stub.responses(name) for _, name in asked)  # none answered
    release.set()
    for _, name in asked:
        assert stub.wait_for_response(name, count=1, timeout=30)[-1]["text"] == \
            "web: 2GAD 4 person-days, 2024-01-01 to 2024-01-31"


def test_by_person_rows_count_commits_and_active_days_apart(bot):
    message = bot.ask("web since:2026-11-23 until:2026-11-29 by:person")
    shown = read(message)
    assert "*2GAD 6 person-days*" in shown and "2 developers · 4 commits · 3 active days (GAD)" in shown
    assert "1. `ann@example.com` — 2 active days · 2GAD 4 · 3 commits" in shown
    assert "2. `bob@example.com` — 1 active day · 2GAD 2 · 1 commit" in shown


def test_share_posts_the_private_answer_for_everyone_once(bot, stub):
    private = bot.ask("web since:2026-11-23 until:2026-11-29 by:person")
    name = bot.click_share(private)
    replaced, shared = stub.wait_for_response(name, count=2, timeout=15)
    # the private answer loses its button first, so it cannot be shared twice ...
    assert replaced["replace_original"] is True and replaced["response_type"] == "ephemeral"
    assert "gad_share" not in json.dumps(replaced) and "You shared this in the channel." in read(replaced)
    # ... then everyone sees the same figures, breakdown included
    assert shared["response_type"] == "in_channel" and shared["replace_original"] is False
    assert "Shared by <@U123>" in read(shared)
    assert figure_and_rows(shared) == figure_and_rows(private)
    assert "1. `ann@example.com` — 2 active days · 2GAD 4 · 3 commits" in read(shared)
    # a second click (a double click, or a stale button) posts nothing more
    again = bot.click_share(private)
    drain(bot.app)  # its lazy work has returned: a second post would be there
    assert stub.responses(again) == []


def test_share_posts_what_was_seen_after_a_sync_and_says_newer_data_exists(bot, stub):
    private = bot.ask("web since:2026-11-23 until:2026-11-29")
    assert private["text"] == "web: 2GAD 6 person-days, 2026-11-23 to 2026-11-29"
    # di commits on Thursday of that week, and web is synced: the same query now counts 4 person-days
    bot.web.commit(name="Di", email="di@example.com", date="2026-11-26")
    bot.engine.sync(["web"])
    assert bot.ask("web since:2026-11-23 until:2026-11-29")["text"] == "web: 2GAD 8 person-days, 2026-11-23 to 2026-11-29"
    replaced, shared = bot.stub.wait_for_response(bot.click_share(private), count=2, timeout=15)
    assert shared["text"] == private["text"] and "*2GAD 6 person-days*" in read(shared)  # what the person saw
    assert figure_and_rows(shared).startswith(figure_and_rows(private))
    assert "Newer data has been indexed since this answer" in read(shared)
    assert "`/gad web since:2026-11-23 until:2026-11-29` gives today's figures." in read(shared)
    assert "Newer data" not in read(replaced) and "*2GAD 6 person-days*" in read(replaced)


def test_a_second_share_click_from_another_process_posts_nothing(bot, stub):
    """Two serving processes on one data directory: the database, not a process's memory, remembers."""
    private = bot.ask("web since:2024-01 until:2024-01")
    (button,) = [e for b in private["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert len(button["value"]) < 40  # an id, not the query
    other_app, _ = build_app(bot.settings, Engine.open(bot.settings), socket_mode=False, today=lambda: TODAY)
    first = bot.click_share(private)
    assert len(stub.wait_for_response(first, count=2, timeout=15)) == 2
    name = f"share-{uuid.uuid4().hex[:8]}"
    payload = block_actions_payload("gad_share", button["value"], response_url=stub.response_url(name))
    body, headers = signed_interaction(SECRET, payload)
    other = other_app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
    assert other.status == 200
    drain(other_app)
    assert stub.responses(name) == []
    assert len(stub.responses(first)) == 2


def test_a_share_button_that_holds_no_kept_answer_says_so(bot, stub):
    payload = block_actions_payload("gad_share", "web since:2024-01", response_url=stub.response_url("old"))
    assert bot._dispatch(*signed_interaction(SECRET, payload)).status == 200
    (message,) = stub.wait_for_response("old", count=1, timeout=15)
    assert "That Share button has expired (answers are kept 7 days); ask again with `/gad`" in read(message)
    assert message["response_type"] == "ephemeral"


def test_mistyped_command_and_names_get_suggestions(bot):
    message = bot.ask("subscibe web")
    assert "`subscibe` is not a tracked repository or project; did you mean the command `/gad subscribe`?" in read(message)
    message = bot.ask("WEB since:2024")
    assert "No repository or project named `WEB` is tracked; did you mean `web`?" in read(message)
    ack, _ = bot.slash("web sinse:2024")
    assert "`sinse:` is not a token gad-bot knows; did you mean `since:`, as in `since:2024-01`?" in read(ack)
    message = bot.ask("web path:scr")
    assert "`path:scr` matches no file that `web` ever changed, so it would count nothing; did you mean `path:src`?" \
        in read(message)


def test_an_author_outside_the_scope_is_told_where_they_did_commit(bot):
    # bob's last commit is of 2026-11-24 (WEB above); ann never changed docs/
    message = bot.ask("web since:2026-11-25 author:bob@example.com")
    assert "*2GAD 0 person-days*" in read(message)
    assert "bob@example.com committed to `web`, but not since 2026-11-25: last on 2026-11-24." in read(message)
    message = bot.ask("web since:2026-11-25 author:bob@exmple.com")  # misspelt: someone active since is offered
    assert read(message).endswith(
        "`author:bob@exmple.com` matches nobody who committed to `web`, so it would count nothing; "
        "bob@example.com committed to `web`, but not since 2026-11-25: last on 2026-11-24; "
        "`/gad web since:2026-11-25 by:person` lists those active in this scope.")


def test_help_and_repos(bot):
    shown = read(bot.ask("help"))  # the first: after the ack, once Slack has said who asks
    assert read(bot.slash("help")[0]) == shown  # the next, while that is known: in the ack, the same
    assert "since:PERIOD" in shown
    # the examples name what is tracked: web (9 commits) first, then api (2)
    assert "`/gad web by:year`" in shown and "`/gad compare web api`" in shown
    assert "gstreamer" not in shown and "Nothing is tracked yet" not in shown
    message = bot.ask("repos")
    shown = read(message)
    assert re.search(r"`web` · 9 commits · synced \d{4}-\d\d-\d\d \d\d:\d\d UTC · from `", shown)
    assert re.search(r"`api` · 2 commits · synced", shown)


def test_help_is_answered_when_the_index_cannot_be_read(bot, caplog):
    """Help is answered in the ack and its examples read the index: an index that cannot be read (here its
    repositories' table is gone, as in a damaged file) costs the member the tracked names, not their help."""
    import sqlite3

    with sqlite3.connect(bot.settings.index_path) as db:
        db.execute("ALTER TABLE repos RENAME TO repos_gone")
    shown = read(bot.ask("help"))
    assert "since:PERIOD" in shown and "`/gad gstreamer/gstreamer since:2024-01`" in shown
    assert "help examples fall back to the generic ones: the index could not be read (OperationalError)" in caplog.text


# -- App Home ---------------------------------------------------------------------------------------


def test_app_home_shows_each_repositorys_last_full_week(bot):
    view = bot.open_home()
    shown = read(view)
    assert "`web` · 2GAD 6 person-days in 2026-W48" in shown  # ann 23rd and 24th, bob 24th
    assert "`api` · 2GAD 2 person-days in 2026-W48" in shown  # di 25th
    assert "no weekly figure yet" not in shown
    assert "*Admin:*" not in shown
    assert "*Admin:*" in read(bot.open_home(ADMIN))
    assert "e.g. `/gad web by:year`" in shown  # its example names the largest tracked repository


# -- format:csv -------------------------------------------------------------------------------------

_CONTEXT = ",web,web,2024-01-01,2024-02-29,default,,,,,,on,off,off,"  # the question, on every row
CSV_JAN_FEB = ["month,active_days,two_gad,developers,commits,repositories_asked,repositories,since,until,scope,range,"
               "paths,exclude_paths,authors,orgs,mailmap,bots,coauthors,hint",
               "2024-01,2,4,2,2" + _CONTEXT, "2024-02,1,2,1,1" + _CONTEXT, "TOTAL,3,6,2,3" + _CONTEXT]


def test_csv_of_a_private_question_goes_to_the_askers_dm(bot, stub):
    message = bot.ask("web since:2024-01 until:2024-02 by:month format:csv")
    assert message["response_type"] == "ephemeral"
    assert "The CSV is in your direct messages with gad-bot (only you can see it)." in read(message)
    (upload,) = stub.uploaded_files()
    assert upload.channel_id == "D123"  # the app's DM with U123, never the channel
    assert upload.data.decode().splitlines() == CSV_JAN_FEB


def test_csv_of_a_public_question_goes_to_the_channel(bot, stub):
    message = bot.ask("web since:2024-01 until:2024-02 by:month format:csv public")
    assert message["response_type"] == "in_channel" and "The CSV is attached in this channel." in read(message)
    (upload,) = stub.uploaded_files()
    assert upload.channel_id == "C123" and upload.data.decode().splitlines() == CSV_JAN_FEB


def test_csv_upload_refused_in_the_channel_goes_to_the_dm_and_says_so(bot, stub):
    stub.fail_next("files.completeUploadExternal", error="not_in_channel")
    message = bot.ask("web since:2024-01 until:2024-02 by:month format:csv public")
    assert "I could not attach the CSV in this channel (Slack said `not_in_channel`" in read(message)
    (upload,) = stub.uploaded_files()
    assert upload.channel_id == "D123"


def test_csv_that_cannot_be_uploaded_is_shown_in_the_answer(bot, stub):
    stub.scopes.remove("files:write")
    message = bot.ask("web since:2024-01 until:2024-02 by:month format:csv")
    shown = read(message)
    assert "I could not attach the CSV (Slack said `missing_scope`" in shown
    assert "\n".join(CSV_JAN_FEB) in shown.replace("\r", "")
    assert stub.uploaded_files() == []


def test_sharing_a_csv_answer_attaches_the_csv_in_the_channel(bot, stub):
    private = bot.ask("web since:2024-01 until:2024-02 by:month format:csv")
    (in_dm,) = stub.uploaded_files()
    replaced, shared = stub.wait_for_response(bot.click_share(private), count=2, timeout=15)
    assert shared["response_type"] == "in_channel"
    shown = read(shared)
    assert "The CSV is attached in this channel." in shown
    assert "direct messages" not in shown  # the private answer's sentence about its DM is not shared
    dm_file, channel_file = stub.uploaded_files()
    assert dm_file.id == in_dm.id and channel_file.channel_id == "C123" and channel_file.completed
    assert channel_file.data.decode().splitlines() == CSV_JAN_FEB  # what the person was sent
    assert channel_file.filename == "gad-report.csv"


def test_a_shared_csv_slack_refuses_is_told_once_and_nothing_claims_a_file(bot, stub):
    private = bot.ask("web since:2024-01 until:2024-02 by:month format:csv")
    stub.fail_next("files.completeUploadExternal", error="not_in_channel")
    replaced, shared = stub.wait_for_response(bot.click_share(private), count=2, timeout=15)
    shown = read(shared)
    assert shown.count("CSV") == 1, shown
    assert ("I could not attach the CSV in this channel (Slack said `not_in_channel`); invite me with `/invite`, "
            "then ask `/gad web since:2024-01 until:2024-02 by:month format:csv public` to have it here.") in shown
    assert [f.channel_id for f in stub.uploaded_files()] == ["D123"]  # only the asker's own copy
    assert [c.args.get("channel") for c in stub.calls_to("chat.postMessage")] == ["U123"]  # no other word posted


def test_a_csv_the_dm_could_not_take_is_not_announced_there(bot, stub):
    stub.fail_next("files.completeUploadExternal", error="file_upload_failed")
    message = bot.ask("web since:2024-01 until:2024-02 by:month format:csv")
    assert "I could not attach the CSV (Slack said `file_upload_failed`" in read(message)
    assert "\n".join(CSV_JAN_FEB) in read(message).replace("\r", "")  # the figures reach the asker anyway
    (announced,) = stub.calls_to("chat.postMessage")
    (corrected,) = stub.calls_to("chat.update")
    assert corrected.args["ts"] == announced.response["ts"]
    assert corrected.args["text"] == ("I could not attach the CSV for `/gad web since:2024-01 until:2024-02 by:month "
                                      "format:csv` here (Slack said `file_upload_failed`); my answer to you shows it "
                                      "instead.")
    assert stub.uploaded_files() == []


# -- administration ---------------------------------------------------------------------------------


def test_successful_track_from_slack(bot, stub, tmp_path, monkeypatch):
    """A real clone over HTTP from a loopback git server; the source policy (tested in test_sources) is
    told to vouch for the loopback URL, since no public host may be reached from a test."""
    from bot.faces import slack as face_module
    from tests.faults import GitHttpServer

    served = tmp_path / "served"
    served.mkdir()
    build(served / "tools.git", [("eve", "2026-11-26", None), ("eve", "2026-11-27", None)])
    monkeypatch.setattr(face_module, "check_remote_source", lambda text, policy: text)
    # The fetch of a URL typed in Slack is guarded too (every connection checked: a loopback server
    # is refused there as well); that guard is tested against real public-looking hosts in
    # tests/faults/test_egress.py. Here the face's flow is what is tested, so its fetch is unguarded.
    track = bot.face.engine.track
    monkeypatch.setattr(bot.face.engine, "track", lambda *a, guarded=False, **k: track(*a, **k))
    with GitHttpServer(served) as server:
        ack, name = bot.slash(f"track {server.url('tools.git')} as:tools", user=ADMIN)
        assert "Tracking" in ack["text"] and "I will update this message as it goes" in ack["text"]
        deadline = time.monotonic() + 60
        while not any("fully indexed" in b.get("text", "") for b in stub.responses(name)) \
                and time.monotonic() < deadline:
            time.sleep(0.05)  # progress updates come first, then the answer, then "path: works now"
        bodies = stub.responses(name)
    (tracked,) = [b for b in bodies if b["text"].startswith("Tracked")]
    assert tracked["replace_original"] is True  # replaces "Tracking ..." and its progress
    assert tracked["text"] == "Tracked tools: 2 commits indexed."
    assert "Try `/gad tools since:12w by:week`" in read(tracked)
    assert bodies[-1]["text"] == "tools is fully indexed: path: works now."
    assert bot.ask("tools")["text"] == "tools: 2GAD 4 person-days, all history (2026-11-26 to 2026-11-27)"


def test_track_of_a_local_path_is_refused_in_the_ack(bot):
    ack, name = bot.slash("track /srv/git/x", user=ADMIN)
    assert "Local paths cannot be tracked from Slack" in read(ack)
    assert "Tracking" not in json.dumps(ack)
    drain(bot.app)
    assert bot.stub.responses(name) == []  # one answer only


def test_sync_untrack_and_projects_are_for_admins(bot):
    for text in ("sync web", "untrack web", "project add suite web api", "project remove suite"):
        refused, _ = bot.slash(text, user="U999")  # in the ack (tests/test_slack_app.py: nothing follows)
        assert "Only the people gad-bot's operator listed can do that (<@UADMIN>)" in read(refused), text
    assert bot.engine.projects() == {} and bot.engine.known_names() == ["api", "web"]
    assert "`web`: 9 commits (+0)" in read(bot.ask("sync web", user=ADMIN))
    added = bot.ask("project add suite web api", user=ADMIN)
    assert "Project `suite` now counts `api`, `web` as one." in read(added)
    # the project is a union: ann on 2024-01-02 in both repositories is one person-day
    union = bot.ask("suite since:2024-01 until:2024-01")
    assert union["text"] == "suite (web and api): 2GAD 4 person-days, 2024-01-01 to 2024-01-31"  # the project named
    listed = bot.ask("projects")
    assert "`suite`: `api`, `web`" in read(listed)
    assert listed["text"] == "1 project: suite (api and web)"  # the notification says what, not "Projects"
    assert "Removed project `suite`." in read(bot.ask("project remove suite", user=ADMIN))


# -- subscriptions and digests ----------------------------------------------------------------------


def test_subscribe_in_the_subscribers_time_zone_then_preview_list_and_unsubscribe(bot, stub):
    stub.user_tz = "Asia/Tokyo"  # the subscriber's Slack profile
    answer = bot.ask("subscribe web api day:fri time:5pm")
    shown = read(answer)
    assert "This channel gets a weekly 2GAD digest Fridays at 17:00 (Asia/Tokyo)" in shown
    assert "covering the 7 days before it (Friday to Thursday)" in shown
    # today is Thursday 2026-12-03 (21:00 in Tokyo): the next digest is Friday 12-04 17:00 JST
    assert "Next digest: Fri 2026-12-04 17:00 (Asia/Tokyo)" in shown
    listing = read(bot.ask("subscriptions"))
    assert "*Schedule:* Fridays at 17:00 (Asia/Tokyo)" in listing
    assert "*Next digest:* Fri 2026-12-04 17:00, covering 2026-11-27 to 2026-12-03" in listing
    preview = bot.ask("digest")
    # Friday 11-27 to Thursday 12-03 (Tokyo dates equal UTC ones here): ann 11-30 on web -> 2GAD 2 so far
    assert "Preview: Weekly 2GAD digest, 2026-11-27 to 2026-12-03" in preview["text"]
    assert "*2GAD 2 person-days*" in read(preview)
    assert "Not subscribed here: `wbe`\nDid you mean `web`?" in read(bot.ask("unsubscribe wbe"))
    gone = read(bot.ask("unsubscribe web"))
    assert ":white_check_mark: *Unsubscribed from:* `web`" in gone and "Still subscribed (1): `api`" in gone
    assert "This channel gets no digest any more." in read(bot.ask("unsubscribe all"))
    assert "This channel has no digest subscription." in read(bot.ask("subscriptions"))


def test_untrack_asks_first_then_tells_each_subscribed_channel(bot, stub):
    bot.ask("subscribe web api")
    bot.ask("subscribe web", channel="C999")
    question = bot.ask("untrack web", user=ADMIN)
    assert ("Untrack `web`? Its mirror and index are deleted and no report counts it any more. The weekly digests "
            "of <#C123>, <#C999> stop counting it; I will say so in each.") in read(question)
    assert bot.engine.known_names() == ["api", "web"]  # nothing happened yet
    # Cancel keeps it
    cancelled = stub.wait_for_response(bot.click(question, "gad_untrack_cancel", user=ADMIN), timeout=15)[-1]
    assert cancelled["replace_original"] is True
    assert "Nothing was untracked: `web` is still tracked." in read(cancelled)
    # a member cannot press the admin's button
    refused = stub.wait_for_response(bot.click(question, "gad_untrack", user="U999"), timeout=15)[-1]
    assert "Only the people gad-bot's operator listed can untrack a repository" in read(refused)
    assert bot.engine.known_names() == ["api", "web"]
    done = stub.wait_for_response(bot.click(question, "gad_untrack", user=ADMIN), timeout=15)[-1]
    assert done["replace_original"] is True and "Untracked `web`. Told <#C123>, <#C999>." in read(done)
    assert bot.engine.known_names() == ["api"]
    told = {c.args["channel"]: read(c.args) for c in stub.calls_to("chat.postMessage") if c.ok}
    assert told["C123"] == ("<@UADMIN> stopped tracking `web`: this channel's weekly digest no longer counts it; "
                            "it still counts `api`.")
    assert told["C999"] == ("<@UADMIN> stopped tracking `web`: it was all this channel's weekly digest counted, so "
                            "the digest has ended; `/gad subscribe REPO` starts a new one.")
    assert subs.get(bot.engine.index, "C123").repos == ("api",)
    assert subs.get(bot.engine.index, "C999") is None  # nothing left there
    assert "`web`" not in read(bot.ask("subscriptions"))

def test_digest_post_is_what_the_channel_reads(bot, stub):
    """The scheduler's path: Monday 2026-11-30 09:00 UTC posts the week of 23 November."""
    from bot.digests.digest import ChannelPacer, run_due_digests
    from bot.slackapi import web_client

    subs.subscribe(bot.engine, "C123", subs.Subscribe(("web", "api"), tz="UTC"), now=NOW - timedelta(days=10))
    due = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
    results = run_due_digests(bot.engine, lambda: web_client(bot.settings), at=due, clock=lambda: due,
                              pacer=ChannelPacer(0), sync=False, charts=False)
    assert [(r.period_start, r.state) for r in results] == [(date(2026, 11, 23), "posted")]
    (post,) = stub.calls_to("chat.postMessage")
    shown = read(post.args)
    # web (ann 23rd, 24th, bob 24th) and api (di 25th): 4 person-days, 2GAD 8; the week before: bob 22nd, 2GAD 2
    assert post.args["text"].startswith("Weekly 2GAD digest, 2026-11-23 to 2026-11-29 (2026-W48): 2GAD 8 person-days")
    assert "▲ 6 (+300%) vs last week (2)" in shown
    assert "3 developers active · 5 commits" in shown


def test_a_paused_digest_tells_the_person_who_subscribed_why_and_how_to_resume(bot, stub):
    """The bot was removed from the channel: Slack answers not_in_channel; the subscriber gets a DM."""
    from bot.digests.digest import ChannelPacer, run_due_digests
    from bot.slackapi import web_client

    stub.user_tz = "UTC"
    assert "Mondays at 09:00 (UTC)" in read(bot.ask("subscribe web api", user="USUB"))
    stub.fail_next("chat.postMessage", error="not_in_channel")
    due = datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc)  # the first Monday after subscribing
    results = run_due_digests(bot.engine, lambda: web_client(bot.settings), at=due, clock=lambda: due,
                              pacer=ChannelPacer(0), sync=False, charts=False)
    assert [(r.state, r.detail) for r in results] == [("paused", "not_in_channel")]
    (dm,) = [c for c in stub.calls_to("chat.postMessage") if c.ok]
    assert dm.args["channel"] == "USUB"
    assert dm.args["text"] == ("The weekly 2GAD digest you set up in <#C123> is paused: gad-bot is no longer a member "
                               "of <#C123> (it was removed).")
    assert "To resume: `/invite @gad-bot` in <#C123>, then type `/gad subscribe api web` there." in read(dm.args)
    # and resuming as told works: the channel's listing is no longer paused
    bot.ask("subscribe web api", user="USUB")
    assert "Paused" not in read(bot.ask("subscriptions"))
