"""Link unfurls, the "2GAD of this repository" message shortcut and the card's button, through their real
path: a signed event or payload as Slack documents it -> Bolt -> the engine on a real index -> the card ->
the Web API call the Slack stand-in receives. `web` is tracked over HTTP from a loopback git server, so
its source is a URL people can paste; `api` is tracked from a local path (no URL of it can match).

Figures by hand from tests/test_surfaces.py's histories (today is Thursday 2026-12-03):
    web, all history: 8 (person, day) pairs -> 2GAD 16, 2 developers, 9 commits, 2024-01-02 to 2026-11-30
    web, since:12w (the 84 days from 2026-09-11, in W37): bob 11-22 (W47); ann 23, ann 24, bob 24 (W48); ann 30 (W49)
        -> 5 person-days, 2GAD 10, 2 developers; weekly 2GAD W37..W46 0, W47 2, W48 6, W49 2
    api: ann 2024-01-02, di 2026-11-25 -> 2GAD 4 all time, 2GAD 2 in the last 12 weeks
"""

from __future__ import annotations

import subprocess
import uuid

import pytest
from slack_bolt.request import BoltRequest

from bot.config import Settings
from bot.engine.audiences import Audience
from bot.engine.engine import Engine
from bot.faces.links import LinksFace
from bot.faces.slack import build_app
from tests.boltidle import drain
from tests.faults import GitHttpServer
from tests.slackstub import (SlackStub, block_actions_payload, event_callback, link_shared_event,
                             message_action_payload, signed_event, signed_interaction)
from tests.test_surfaces import API, SECRET, TODAY, WEB, build, read

# · for a week without a commit; 2 of a top of 6 is step round(2 * 7 / 6) = 2 (▃); 6 is the top (█)
WEB_SPARK = "·" * 10 + "▃█▃"


@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


class Links:
    def __init__(self, tmp_path, stub, **env):
        self.stub = stub
        served = tmp_path / "served"
        served.mkdir()
        build(served / "web.git", WEB)
        self.api = build(tmp_path / "api", API)
        self.server = GitHttpServer(served).__enter__()
        self.settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                           "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url, **env})
        self.engine = Engine.open(self.settings)
        self.engine.track(self.server.url("web.git"), "web")
        self.engine.track(str(self.api.path), "api")
        self.app, self.face = build_app(self.settings, self.engine, socket_mode=False, today=lambda: TODAY)
        self.base = self.server.url("web.git").removesuffix("/web.git")  # http://127.0.0.1:PORT

    def close(self):
        self.server.__exit__(None, None, None)

    def dispatch(self, body: bytes, headers: dict):
        response = self.app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
        assert response.status == 200
        return response

    def paste(self, *urls: str) -> None:
        self.dispatch(*signed_event(SECRET, event_callback(link_shared_event(list(urls)))))


@pytest.fixture
def links(tmp_path, stub):
    made = Links(tmp_path, stub)
    yield made
    made.close()


def test_a_tracked_repositorys_link_unfurls_into_its_card_and_nothing_else_does(links, stub):
    fetched = len(links.server.requests)
    links.paste(f"{links.base}/web/tree/main/src", f"{links.base}/other", "https://example.com/web")
    (call,) = stub.wait_for("chat.unfurl", timeout=15)
    assert call.args["channel"] == "C123" and call.args["ts"] == "1700000000.000200"
    unfurls = call.args["unfurls"]
    assert list(unfurls) == [f"{links.base}/web/tree/main/src"]  # only the tracked repository's link
    shown = read(unfurls[f"{links.base}/web/tree/main/src"])
    assert "*`web`* · 2GAD repository" in shown
    assert "*2GAD 16 person-days* all time · 2 developers · 9 commits · 2024-01-02 to 2026-11-30" in shown
    assert f"Last 12 weeks: *2GAD 10* · 2 developers · `{WEB_SPARK}`" in shown
    assert "Ask more (by week, privately)" in shown
    # an untracked link never starts a fetch (nor a track)
    assert len(links.server.requests) == fetched and links.engine.known_names() == ["api", "web"]


def test_untracked_links_are_left_alone(links, stub):
    links.paste(f"{links.base}/other.git", "https://github.com/torvalds/linux")
    drain(links.app)  # the event's listener has returned: a card would have been posted by now
    assert stub.calls_to("chat.unfurl") == []


def test_an_admin_can_switch_unfurls_off(tmp_path, stub):
    off = Links(tmp_path, stub, GAD_UNFURLS="off")
    try:
        off.paste(f"{off.base}/web")
        drain(off.app)
        assert stub.calls_to("chat.unfurl") == []
    finally:
        off.close()


def test_the_cards_button_asks_the_weekly_report_privately(links, stub):
    links.paste(f"{links.base}/web")
    (call,) = stub.wait_for("chat.unfurl", timeout=15)
    (button,) = [e for b in call.args["unfurls"][f"{links.base}/web"]["blocks"] if b["type"] == "actions"
                 for e in b["elements"]]
    name = f"more-{uuid.uuid4().hex[:6]}"
    payload = block_actions_payload(button["action_id"], button["value"], response_url=stub.response_url(name))
    links.dispatch(*signed_interaction(SECRET, payload))
    (answer,) = stub.wait_for_response(name, timeout=15)
    assert answer["response_type"] == "ephemeral"
    assert answer["text"] == "web: 2GAD 10 person-days, since 2026-09-11"
    assert "2026-W48" in read(answer)


def test_the_message_shortcut_answers_privately_in_the_thread(links, stub):
    text = f"have a look at <{links.base}/web/commits|our web repo> &amp; tell me"
    payload = message_action_payload("gad_repo_card", text, message_ts="1700000000.000300",
                                     thread_ts="1700000000.000100")
    links.dispatch(*signed_interaction(SECRET, payload))
    (call,) = stub.wait_for("chat.postEphemeral", timeout=15)
    assert call.args["channel"] == "C123" and call.args["user"] == "U123"
    assert call.args["thread_ts"] == "1700000000.000100"  # in the thread the message is in
    assert "*2GAD 16 person-days* all time" in read(call.args)
    # a tracked name, without a link, is enough
    links.dispatch(*signed_interaction(SECRET, message_action_payload("gad_repo_card", "how is api doing?")))
    calls = stub.wait_for("chat.postEphemeral", count=2, timeout=15)
    assert calls[-1].args["thread_ts"] == "1700000000.000300"  # not in a thread: its own thread
    assert "*`api`* · 2GAD repository" in read(calls[-1].args)
    assert "*2GAD 4 person-days* all time · 2 developers · 2 commits" in read(calls[-1].args)
    # nothing tracked in the message: one sentence
    links.dispatch(*signed_interaction(SECRET, message_action_payload("gad_repo_card", "lunch at noon?")))
    calls = stub.wait_for("chat.postEphemeral", count=3, timeout=15)
    assert read(calls[-1].args) == ("That message links to no tracked repository or organization and names none; "
                                    "`/gad repos` lists what is tracked.")


def test_a_tracked_organizations_link_unfurls_into_the_organizations_card(tmp_path, stub):
    """A whole GitHub organization tracked from a loopback forge (tests/forgestub.py, shaped as GitHub's REST
    API): its page unfurls as the organization; a repository page of it, as that repository."""
    from tests.forgestub import ForgeStub
    from tests.gitbuild import oracle_pairs

    with ForgeStub(tmp_path / "srv", "github", token="forge-token") as forge:
        forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01"), ("bob@acme.example", "2024-03-01")])
        forge.add("acme/api", commits=[("ann@acme.example", "2024-03-01"), ("cy@acme.example", "2024-03-05")])
        settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                      "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url,
                                      "GAD_FORGES": forge.forges_setting, "GAD_HTTPS_TOKENS": "127.0.0.1=forge-token"})
        engine = Engine.open(settings)
        org = engine.track_org(engine.org_owner(forge.owner_url("acme"))).org
        app, face = build_app(settings, engine, socket_mode=False, today=lambda: TODAY)
        # (ann, 03-01) counted once across both repositories, (bob, 03-01), (cy, 03-05): 3 pairs, 2GAD 6
        pairs = oracle_pairs(forge.base / "acme/web.git") | oracle_pairs(forge.base / "acme/api.git")
        assert 2 * len(pairs) == 6
        page, repo_page = forge.owner_url("acme"), forge.owner_url("acme") + "/web/pulls"
        event = event_callback(link_shared_event([page, repo_page, forge.owner_url("acme") + "-corp"]))
        # tracked with the forge's token, so it may hold private work: admins only, until an admin opens it.
        # The listener itself, called here and run to its end: Bolt would run it in a thread, after the ack.
        LinksFace(settings, engine, lambda: TODAY, face.ask_privately, face.members).link_shared(event["event"],
                                                                                                app.client)
        assert engine.access(org).audience.text() == "admins" and stub.calls_to("chat.unfurl") == []
        engine.set_access(org, Audience.parse("everyone"))
        body, headers = signed_event(SECRET, event)
        app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
        (call,) = stub.wait_for("chat.unfurl", timeout=15)
    assert list(call.args["unfurls"]) == [page, repo_page]
    shown = read(call.args["unfurls"][page])
    assert f"*`{org}`* · 2GAD organization" in shown
    # commits as git counts them: ann's identical commit in both repositories is one commit of the union
    commits = set()
    for name in ("web", "api"):
        commits |= set(subprocess.run(["git", "rev-list", "--all"], cwd=forge.base / f"acme/{name}.git",
                                      capture_output=True, text=True, check=True).stdout.split())
    assert (f"*2GAD 6 person-days* all time · 3 developers · {len(commits)} commits · 2024-03-01 to 2024-03-05"
            in shown)
    assert "Last 12 weeks: *2GAD 0* · 0 developers\n" in shown  # no sparkline of nothing
    assert "*2GAD 4 person-days* all time · 2 developers · 2 commits" in read(call.args["unfurls"][repo_page])
