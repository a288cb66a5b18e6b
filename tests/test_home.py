"""The Home tab as the front door: its buttons open modals (views.open), the repository fields search the
tracked names (block_suggestion), a submission is checked field by field by the one grammar (errors next
to the field: `response_action: errors`) and answered in the chosen channel or the person's DM, with the
renderer and figures of `/gad`. Everything through Bolt's own request handling, as Slack sends it, with
figures worked out by hand in tests/test_surfaces.py (January 2024 in `web`: 2 person-days, 2GAD 4).
"""

from __future__ import annotations

import functools
import json

import pytest

from bot.digests import subscriptions as subs
from tests.slackstub import (SlackStub, block_actions_payload, block_suggestion_payload, signed_interaction,
                             view_submission_payload)
from tests.test_surfaces import TODAY, Bot, build, read


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def bot(tmp_path, stub):
    # the channels the forms post in: U123 and U456 are in them (a channel a person is not in: test_access_faces)
    stub.memberships.update({"U123": ["C123", "C555", "C777"], "U456": ["C123", "C777"]})
    return Bot(tmp_path, stub)


def press(bot, action_id: str, user: str = "U123") -> dict:
    """Press a Home tab button; return the modal it opened (as views.open stored it)."""
    opened = len(bot.stub.opened_views)
    payload = block_actions_payload(action_id, None, user_id=user, container_type="view")
    assert bot._dispatch(*signed_interaction("surfaces-signing-secret", payload)).status == 200
    bot.stub.wait_for("views.open", count=opened + 1, timeout=15)
    return bot.stub.opened_views[-1]


def submit(bot, view: dict, answers: dict, user: str = "U123") -> dict:
    """Submit a modal; return the ack's body ({} closes the modal)."""
    response = bot._dispatch(*signed_interaction("surfaces-signing-secret",
                                                 view_submission_payload(view, answers, user_id=user)))
    assert response.status == 200
    return json.loads(response.body) if response.body else {}


def posted(bot, count: int = 1) -> dict:
    return bot.stub.wait_for("chat.postMessage", count=count, timeout=15)[-1].args


def test_home_has_the_buttons_and_keeps_its_weekly_figures(bot):
    view = bot.open_home()
    (buttons,) = [b for b in view["blocks"] if b.get("block_id") == "home_buttons"]
    assert [e["text"]["text"] for e in buttons["elements"]] == ["Ask a report", "Compare", "Subscribe a channel",
                                                                  "Digests of my channels"]
    assert "`web` · 2GAD 6 person-days in 2026-W48" in read(view)


def test_a_report_asked_in_the_modal_is_posted_in_the_chosen_channel(bot, stub):
    modal = press(bot, "gad_home_report")
    assert modal["title"]["text"] == "Ask a report" and modal["callback_id"] == "gad_modal_report"
    # the repository field searches the tracked names
    payload = block_suggestion_payload(modal, "gad_names", "we", block_id="names")
    response = bot._dispatch(*signed_interaction("surfaces-signing-secret", payload))
    assert [o["value"] for o in json.loads(response.body)["options"]] == ["web"]
    ack = submit(bot, modal, {"names": ["web"], "since": "2024-01-01", "until": "2024-01-31", "by": "month",
                              "where": "C777"})
    assert ack == {}  # the modal closes
    message = posted(bot)
    assert message["channel"] == "C777"
    assert message["text"] == "web: 2GAD 4 person-days, 2024-01-01 to 2024-01-31"  # as `/gad` answers it
    assert "2 developers · 2 commits · 2 active days (GAD)" in read(message)
    assert "gad_share" not in json.dumps(message)  # posted for everyone already


def test_without_a_channel_the_answer_goes_to_the_persons_dm(bot, stub):
    submit(bot, press(bot, "gad_home_report"), {"names": ["web", "api"], "since": "2024-01-01", "until": "2024-01-31"})
    message = posted(bot)
    assert message["channel"] == "U123"  # the app's DM with the person
    # ann on 2024-01-02 in both repositories is one person-day; bob 2024-01-03: 2GAD 4
    assert message["text"] == "web and api: 2GAD 4 person-days, 2024-01-01 to 2024-01-31"


def test_a_wrong_field_gets_the_grammars_sentence_next_to_it(bot, stub):
    modal = press(bot, "gad_home_report")
    ack = submit(bot, modal, {"names": ["web"], "since": "2024-02-01", "until": "2024-01-01"})
    assert ack["response_action"] == "errors" and list(ack["errors"]) == ["until"]
    assert ack["errors"]["until"].startswith("`since:2024-02-01` starts after `until:2024-01-01` ends")
    ack = submit(bot, modal, {"names": ["web"], "ref": "main dev"})
    assert ack == {"response_action": "errors",
                   "errors": {"ref": "One branch (e.g. `main`) or one range (e.g. `v1.0..v2.0`), without spaces."}}
    assert stub.calls_to("chat.postMessage") == []


def test_compare_in_the_modal(bot, stub):
    modal = press(bot, "gad_home_compare")
    assert submit(bot, modal, {"names": ["web"]}) == {
        "response_action": "errors", "errors": {"names": "Choose at least two repositories or projects to compare."}}
    assert submit(bot, modal, {"names": ["web", "api"], "where": "C777"}) == {}
    message = posted(bot)
    # web: 8 person-days (2GAD 16); api: ann 2024-01-02, di 2026-11-25 (2GAD 4)
    assert message["channel"] == "C777", message
    assert message["text"].startswith("Side by side: web, api (all history): "
                                                                         "web 2GAD 16; api 2GAD 4")


def test_subscribe_a_channel_in_the_modal_then_see_it_among_my_channels_digests(bot, stub):
    modal = press(bot, "gad_home_subscribe")
    ack = submit(bot, modal, {"channel": "C555", "names": ["web"], "day": "fri", "time": "17:00", "tz": "Mars/Olympus"})
    assert ack["response_action"] == "errors" and list(ack["errors"]) == ["tz"]
    assert "Mars/Olympus" in ack["errors"]["tz"]
    assert submit(bot, modal, {"channel": "C555", "names": ["web"], "day": "fri", "time": "17:00",
                               "tz": "Asia/Tokyo"}) == {}
    message = posted(bot)
    assert message["channel"] == "C555" and "Fridays at 17:00 (Asia/Tokyo)" in read(message)
    assert subs.get(bot.engine.index, "C555").repos == ("web",)
    mine = press(bot, "gad_home_digests")
    assert read(mine) == "<#C555>: `web` · Fridays at 17:00 (Asia/Tokyo)"


def test_when_only_admins_may_subscribe_a_member_is_told_in_the_modal(tmp_path, stub):
    from bot.faces.slack import build_app
    import dataclasses

    bot = Bot(tmp_path, stub)
    bot.app, bot.face = build_app(dataclasses.replace(bot.settings, subscribers="admins"), bot.engine,
                                  digests=bot.digests, socket_mode=False, today=lambda: TODAY)
    ack = submit(bot, press(bot, "gad_home_subscribe"), {"channel": "C555", "names": ["web"], "day": "mon",
                                                         "time": "09:00"})
    assert ack["response_action"] == "errors"
    assert ack["errors"]["channel"].startswith("Only the people gad-bot's operator listed can change a channel's digest")
    from tests.boltidle import drain

    drain(bot.app)  # every listener of the submission has returned: a subscription or a post would be there
    assert subs.get(bot.engine.index, "C555") is None and stub.calls_to("chat.postMessage") == []


# -- under serve: the forms take their turn in the report workers (bot/service/workers.py) --------------------

def computes_for_ever(job):
    """A report that never ends (in a worker process: the pool's time limit has to stop it)."""
    import time

    while True:
        time.sleep(1)


def waits_for_the_gate(gate: str, job):
    """A report that answers once the file `gate` exists (a worker's runner: functools.partial names the gate)."""
    import os
    import time
    from pathlib import Path

    from bot.service.workers import ReportAnswer

    while not Path(gate).exists():
        time.sleep(0.01)
    return ReportAnswer(f"answered {job.query_text} for {job.user}", [])


def served(bot, start_pool, **pool_args):
    """`bot` as `serve` runs it: report workers, and a serving Engine that has loaded nothing yet."""
    from bot.engine.engine import Engine
    from bot.faces.slack import build_app

    pool = start_pool(bot.settings, **pool_args)
    bot.engine = Engine.open(bot.settings)
    bot.app, bot.face = build_app(bot.settings, bot.engine, reports=pool, socket_mode=False, today=lambda: TODAY)
    return pool


def test_a_modal_compare_is_answered_by_a_report_worker_not_by_serve(bot, stub, start_pool):
    from tests.gitbuild import oracle_gad

    served(bot, start_pool, workers=1)
    assert submit(bot, press(bot, "gad_home_compare"), {"names": ["web", "api"], "where": "C777"}) == {}
    message = posted(bot)
    assert message["channel"] == "C777"
    web, api = 2 * oracle_gad(bot.web.path), 2 * oracle_gad(bot.api.path)
    assert (web, api) == (16, 4)  # as tests/test_surfaces.py works them out by hand
    assert message["text"].startswith(f"Side by side: web, api (all history): web 2GAD {web}; api 2GAD {api}")
    assert "gad_share" not in json.dumps(message)  # posted for everyone already
    assert bot.engine.snapshots.loaded == {}  # the serving process computed nothing: it never loaded a repository


def test_a_modal_report_past_its_time_tells_the_person_where_its_answer_was_to_go(bot, stub, start_pool):
    served(bot, start_pool, workers=1, runner=computes_for_ever, timeout=1)
    assert submit(bot, press(bot, "gad_home_report"), {"names": ["web"], "where": "C777"}) == {}
    message = posted(bot)
    assert message["channel"] == "U123"  # failures go to the person's DM, not to the channel
    assert message["text"].startswith("Your question for <#C777> was still computing after 1 s, so gad-bot "
                                      "stopped it")
    assert read(message).count(".") == 1 and "<#C777>" in read(message)  # one sentence, the channel a link
    assert [c.args["channel"] for c in stub.calls_to("chat.postMessage")] == ["U123"]


def test_the_per_person_limit_applies_to_the_forms_and_a_waiting_form_says_where_it_stands(
        bot, stub, start_pool, tmp_path):
    gate = tmp_path / "gate"
    served(bot, start_pool, workers=1, per_user=1, runner=functools.partial(waits_for_the_gate, str(gate)))
    modal = press(bot, "gad_home_report")
    assert submit(bot, modal, {"names": ["web"], "where": "C777"}) == {}  # a worker takes it at once
    refused = submit(bot, modal, {"names": ["api"]})
    assert refused == {"response_action": "errors", "errors": {"names": (
        "You already have 1 question waiting or computing (at most 1 at a time); wait for some of them to be "
        "answered, then ask again.")}}  # the modal stays open with the pool's sentence
    queued = submit(bot, press(bot, "gad_home_compare", user="U456"), {"names": ["web", "api"]}, user="U456")
    assert queued["response_action"] == "update" and queued["view"]["close"]["text"] == "Close"  # not "Cancel"
    assert read(queued["view"]) == (":hourglass_flowing_sand: Queued: 1 report ahead of yours. I will post the "
                                    "answer in your direct messages with gad-bot.")
    gate.touch()
    answers = {m.args["channel"]: m.args["text"] for m in stub.wait_for("chat.postMessage", count=2, timeout=15)}
    assert answers == {"C777": "answered web for U123", "U456": "answered compare web api for U456"}


def count_reports(bot, monkeypatch) -> list[tuple[str, ...]]:
    """The repositories of every report the engine computes from now on, in order (a list that grows)."""
    asked = []
    report = bot.engine.report

    def counted(query, today):
        asked.append(query.repos)
        return report(query, today)

    monkeypatch.setattr(bot.engine, "report", counted)
    return asked


def test_home_recomputes_only_what_a_sync_changed_and_never_shows_a_stale_week(bot, monkeypatch):
    asked = count_reports(bot, monkeypatch)
    assert "`web` · 2GAD 6 person-days in 2026-W48" in read(bot.open_home())
    assert sorted(asked) == [("api",), ("web",)]
    assert "`web` · 2GAD 6 person-days in 2026-W48" in read(bot.open_home())
    assert len(asked) == 2  # nothing changed: the second open computed nothing
    # Cy commits on Wednesday of 2026-W48: ann 23rd and 24th, bob 24th, cy 25th are 4 person-days, 2GAD 8
    bot.web.commit(name="Cy", email="cy@example.com", date="2026-11-25T09:00")
    bot.engine.sync(["web"])
    view = bot.open_home()
    assert "`web` · 2GAD 8 person-days in 2026-W48" in read(view)
    assert asked[2:] == [("web",)]  # only the repository the sync changed
    assert "`api` · 2GAD 2 person-days in 2026-W48" in read(view)  # di on the 25th, from before the sync


def test_a_repository_tracked_again_under_its_name_never_shows_the_one_untracked(bot, tmp_path):
    # SQLite handed the id of the last row deleted to the next row inserted (no AUTOINCREMENT): untracking `api`
    # (the newest) and tracking another repository made a row of the same id and, after as many syncs, the same
    # generation, so a figure kept under (id, generation, week) alone was the untracked repository's. Ids are no
    # longer given twice (Index.remove_repo).
    assert "`api` · 2GAD 2 person-days in 2026-W48" in read(bot.open_home())  # di on the 25th
    bot.engine.untrack("api")
    other = build(tmp_path / "other", [("eve", "2026-11-23", None), ("fay", "2026-11-23", None),
                                       ("eve", "2026-11-26", None)])
    bot.engine.track(str(other.path), "api")
    # eve 23rd and 26th, fay 23rd: 3 person-days in W48, 2GAD 6
    assert "`api` · 2GAD 6 person-days in 2026-W48" in read(bot.open_home())


def wait_until_kept(bot, names: set[str], timeout: float = 15.0) -> dict:
    """What the face keeps once it holds a figure of each of `names`' current generations (fail after `timeout`)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        current = {(repo.id, repo.generation) for repo in bot.engine.repos() if repo.name in names}
        kept = bot.face.home_weeks.kept()
        if current <= {(repo_id, generation) for repo_id, generation, _ in kept}:
            return kept
        assert time.monotonic() < deadline, f"no figure of {names} kept within {timeout} s: {kept}"
        time.sleep(0.02)


def test_serves_thread_keeps_the_figures_before_anyone_opens_home_and_after_each_sync(bot, monkeypatch):
    """serve starts the face's thread (home_weeks.start()) and wakes it after each sync its workers finish: the
    first open after the start, and the first after a sync, compute nothing. Figures by hand: web's 2026-W48 is
    ann on the 23rd and 24th and bob on the 24th (3 person-days, 2GAD 6); api's is di on the 25th (2GAD 2)."""
    from datetime import date

    asked = count_reports(bot, monkeypatch)
    weeks = bot.face.home_weeks
    weeks.start()
    try:
        kept = wait_until_kept(bot, {"web", "api"})  # nobody opened the Home tab
        assert sorted(asked) == [("api",), ("web",)]
        assert {monday for *_, monday in kept} == {date(2026, 11, 23)}
        view = bot.open_home()
        assert "`web` · 2GAD 6 person-days in 2026-W48" in read(view)
        assert "`api` · 2GAD 2 person-days in 2026-W48" in read(view)
        assert len(asked) == 2  # the open computed nothing

        # Cy commits on Wednesday of 2026-W48: 4 person-days in web, 2GAD 8
        bot.web.commit(name="Cy", email="cy@example.com", date="2026-11-25T09:00")
        bot.engine.sync(["web"])
        weeks.wake()  # what serve's sync queue calls when a worker finished a sync
        wait_until_kept(bot, {"web"})
        assert asked[2:] == [("web",)]  # only the repository the sync changed
        view = bot.open_home()
        assert "`web` · 2GAD 8 person-days in 2026-W48" in read(view)
        assert "`api` · 2GAD 2 person-days in 2026-W48" in read(view)
        assert len(asked) == 3  # the open computed nothing
        web = bot.engine.repo("web")
        assert {(repo_id, generation) for repo_id, generation, _ in weeks.kept() if repo_id == web.id} == \
            {(web.id, web.generation)}  # web's old generation is no longer kept
    finally:
        weeks.stop()
    assert not weeks._thread.is_alive()


def test_an_open_while_serves_thread_computes_waits_for_it_rather_than_computing_beside_it(bot, monkeypatch):
    """Side by side in one interpreter, the open and the thread took longer than either alone (bench_home.py): an
    open that comes while the thread computes (serve's first seconds, a new week) waits, then computes nothing."""
    import threading

    from tests.slackstub import app_home_opened_event, event_callback, signed_event
    from tests.test_surfaces import SECRET

    held, release = threading.Event(), threading.Event()
    computed_by = []
    report = bot.engine.report

    def gated(query, today):
        computed_by.append((threading.current_thread().name, query.repos))
        held.set()
        assert release.wait(15), "the test never released the thread"
        return report(query, today)

    monkeypatch.setattr(bot.engine, "report", gated)
    weeks = bot.face.home_weeks
    waiting = threading.Event()

    class Idle(threading.Event):
        """The thread's idle flag, telling the test when an open starts waiting on it."""

        def wait(self, timeout=None):
            waiting.set()
            return super().wait(timeout)

    idle = Idle()
    if weeks._idle.is_set():
        idle.set()
    weeks._idle = idle
    weeks.start()
    try:
        assert held.wait(15)  # the thread is computing its first figure
        assert bot._dispatch(*signed_event(SECRET, event_callback(app_home_opened_event("U123")))).status == 200
        assert waiting.wait(15), "the open never waited for the thread"
        assert not bot.stub.calls_to("views.publish")  # the open waits for the thread
        release.set()
        bot.stub.wait_for("views.publish", timeout=15)
        assert "`web` · 2GAD 6 person-days in 2026-W48" in read(bot.stub.home_views["U123"])
        assert "`api` · 2GAD 2 person-days in 2026-W48" in read(bot.stub.home_views["U123"])
        assert sorted(computed_by) == [("home-weeks", ("api",)), ("home-weeks", ("web",))]  # none by the open
    finally:
        release.set()
        weeks.stop()


def test_a_damaged_repository_costs_its_own_figure_only_and_is_logged_once_per_generation(bot, caplog):
    """A repository whose stored history is damaged (here web's days column cut to two bytes: numpy refuses it with
    ValueError, not a GadError) stopped serve's thread at it on every pass, every 60 s and after each sync, with a
    traceback each time, so the repositories after it were never computed; and it failed every Home tab open. Now it
    shows no figure, the others theirs (api's 2026-W48: di on the 25th, 2GAD 2), and it is logged once."""
    import logging
    import sqlite3

    from bot.service.homeweeks import last_full_week

    web = bot.engine.repo("web")
    with sqlite3.connect(bot.settings.index_path) as damaged:
        assert damaged.execute("UPDATE commit_chunks SET days = x'0102' WHERE repo_id = ?", (web.id,)).rowcount
    damaged.close()
    caplog.set_level(logging.WARNING, logger="bot.service.homeweeks")
    weeks = bot.face.home_weeks
    weeks.start()  # from the far end of the list: web, then api
    try:
        wait_until_kept(bot, {"api"})
        for _ in range(2):  # two more passes (a sync finished, say): still one line about web
            weeks.wake()
            weeks.for_open(bot.engine.repos(), last_full_week(TODAY), TODAY)
        view = bot.open_home()
    finally:
        weeks.stop()
    assert "`api` · 2GAD 2 person-days in 2026-W48" in read(view)
    assert "`web` · no weekly figure yet" in read(view)
    about_web = [r for r in caplog.records if "`web`" in r.getMessage()]
    assert len(about_web) == 1 and about_web[0].levelno == logging.WARNING, [r.getMessage() for r in caplog.records]
