"""The Home tab as the front door: its buttons open modals (views.open), the repository fields search the
tracked names (block_suggestion), a submission is checked field by field by the one grammar (errors next
to the field: `response_action: errors`) and answered in the chosen channel or the person's DM, with the
renderer and figures of `/gad`. Everything through Bolt's own request handling, as Slack sends it, with
figures worked out by hand in tests/test_surfaces.py (January 2024 in `web`: 2 person-days, 2GAD 4).
"""

from __future__ import annotations

import json

import pytest

from bot.digests import subscriptions as subs
from tests.slackstub import (SlackStub, block_actions_payload, block_suggestion_payload, signed_interaction,
                             view_submission_payload)
from tests.test_surfaces import TODAY, Bot, read


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


@pytest.fixture
def bot(tmp_path, stub):
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
    stub.memberships["U123"] = ["C555", "C123"]
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
    import time

    time.sleep(0.5)
    assert subs.get(bot.engine.index, "C555") is None and stub.calls_to("chat.postMessage") == []
