"""Attacks on who may see what (issues 31 and 34), each through its face's real path: signed requests -> Bolt -> the
engine on a real index -> the Web API calls a loopback Slack receives (tests/slackstub.py). An outsider (a member
outside `vault`'s audience, #eng), a guest and a member of another organization try to learn anything of `vault`:
its name, figures, people, or that it exists. A name they may not see must read, word for word, as a name that was
never tracked. The world is tests/test_access_faces.py's."""

from __future__ import annotations

import json

import pytest

from bot.digests import subscriptions as subs
from bot.engine.audiences import Audience
from tests.test_access_faces import (EXTERNAL, GUEST, INSIDER, OUTSIDER, World, stub, two_gad,  # noqa: F401
                                     untracked_words, world)
from tests.test_home import press, submit
from tests.gitbuild import oracle_pairs
from tests.test_surfaces import ADMIN, read


def seen_names(world, user: str) -> list[str]:
    return world.engine.known_names(world.face.members.viewer(user))


# -- the Home tab's forms: a channel chosen must not turn a hidden name into "no longer open to you" ---------------


def test_the_report_forms_channel_check_does_not_tell_a_hidden_name_from_an_untracked_one(world):
    for user in (OUTSIDER, EXTERNAL):
        for kind, names in (("gad_home_report", ["vault"]), ("gad_home_compare", ["vault", "web"])):
            modal = press(world, kind, user=user)
            hidden = submit(world, modal, {"names": names, "where": "C0PART" if user == EXTERNAL else "C123"},
                            user=user)
            modal = press(world, kind, user=user)
            never = submit(world, modal, {"names": ["nosuch", *names[1:]],
                                          "where": "C0PART" if user == EXTERNAL else "C123"}, user=user)
            said = " ".join(hidden.get("errors", {}).values())
            assert "vault" not in said.replace(untracked_words("vault", seen_names(world, user)), ""), said
            assert "no longer open" not in said
            # the same shape of answer as a name never tracked (its sentence names the name typed, nothing else)
            assert list(hidden.get("errors", {})) == list(never.get("errors", {}))


def test_the_subscribe_forms_channel_check_does_not_tell_a_hidden_name_from_an_untracked_one(world):
    modal = press(world, "gad_home_subscribe", user=OUTSIDER)
    ack = submit(world, modal, {"channel": "C123", "names": ["vault"], "day": "mon", "time": "09:00"}, user=OUTSIDER)
    said = " ".join(ack.get("errors", {}).values())
    assert said == untracked_words("vault", seen_names(world, OUTSIDER)), said
    assert subs.get(world.engine.index, "C123") is None


# -- /gad: a hidden name answers word for word as a name never tracked, in every form a question takes ------------

HIDDEN_OF = {OUTSIDER: "vault", EXTERNAL: "vault", GUEST: "web"}  # each one's hidden repository
ASKED = ["{x}", "{x} since:2024", "{x} by:person top:5", "{x} format:csv", "{x} format:json", "{x} public",
         "{x} by:repo", "{x} by:release", "{x} by:team", "{x} team:@backend", "web {x} by:repo", "compare {x} api",
         "compare api {x}@team:backend", "compare api:src {x}", "me {x}", "subscribe {x}", "unsubscribe {x}",
         "{x} author:eve@example.com", "{x}:src", "report {x}", "{x} range:v1..v2", "{x} path:src"]


def answers(world, users, texts) -> dict:
    return {(u, t): world.answer(t.format(x=HIDDEN_OF[u]), u) for u in users for t in texts}


def test_a_hidden_name_reads_as_a_name_never_tracked_in_every_question(tmp_path, stub):
    """Each question about the hidden repository, asked while it is tracked, then again once it is untracked: word
    for word the same answer."""
    stub.add_usergroup("S0BACK", "backend", [OUTSIDER, INSIDER])
    different = []
    for users, hidden in (((OUTSIDER, EXTERNAL), "vault"), ((GUEST,), "web")):
        world = World(tmp_path / hidden, stub)
        tracked = answers(world, users, ASKED)
        world.engine.untrack(hidden)
        never = answers(world, users, ASKED)
        different += [(u, t, tracked[u, t], never[u, t]) for u, t in tracked if tracked[u, t] != never[u, t]]
    assert not different, "\n".join(f"{u} {t!r}:\n  hidden: {h}\n  never:  {n}" for u, t, h, n in different)


# -- people: nobody who only worked on the hidden repository shows, in any breakdown, file or team ----------------


def test_no_person_of_the_hidden_repository_shows_through_people_teams_files_or_json(world, stub):
    """eve and fay committed only to vault (ann to both): an outsider reads neither of them, however asked, and the
    figures are git's over web alone (the project `all` counts only what they may see)."""
    stub.add_usergroup("S0ENGT", "engteam", [OUTSIDER, INSIDER])  # eve's and ann's group
    web_only = two_gad(world.web)
    for text in ("all by:person", "all by:person top:1", "all by:team", "all team:@engteam", "all team:@engteam "
                 "by:person", "compare all web", "compare all@team:engteam web", "all by:repo", "all by:week",
                 "all format:json by:person", "me all", "all by:org", "all author:*@example.com by:person"):
        shown = world.answer(text, OUTSIDER).lower()
        assert "eve@" not in shown and "fay@" not in shown and "`vault`" not in shown, (text, shown)
    assert f"*2GAD {web_only} person-days*" in world.answer("all by:person", OUTSIDER)
    world.answer("all by:person format:csv", OUTSIDER)
    (csv,) = [f for f in stub.uploaded_files() if f.data]
    assert b"ann@example.com" in csv.data and b"eve@" not in csv.data and b"fay@" not in csv.data


# -- link unfurls, the message shortcut, its card's button, the Workflow step: URLs of a hidden repository ---------


class Served:
    """web (everyone) and vault (#eng only), both tracked over HTTP from a loopback git server: URLs people paste."""

    def __init__(self, tmp_path, stub):
        from bot.config import Settings
        from bot.engine.audiences import Audience
        from bot.engine.engine import Engine
        from bot.faces.slack import build_app
        from tests.faults import GitHttpServer
        from tests.test_access_faces import VAULT
        from tests.test_surfaces import SECRET, TODAY, WEB, build

        self.stub, self.secret = stub, SECRET
        served = tmp_path / "served"
        served.mkdir()
        self.web = build(served / "web.git", WEB)
        build(served / "vault.git", VAULT)
        self.server = GitHttpServer(served).__enter__()
        self.settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                           "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
        self.engine = Engine.open(self.settings)
        self.engine.track(self.server.url("web.git"), "web")
        self.engine.track(self.server.url("vault.git"), "vault")
        self.engine.set_access("vault", Audience.parse("C0ENG"))
        self.engine.project_add("all", ["web", "vault"])
        self.app, self.face = build_app(self.settings, self.engine, socket_mode=False, today=lambda: TODAY)
        self.base = self.server.url("web.git").removesuffix("/web.git")

    def dispatch(self, body: bytes, headers: dict):
        from slack_bolt.request import BoltRequest

        response = self.app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
        assert response.status == 200
        return response

    def paste(self, urls, user: str, channel: str) -> None:
        from tests.slackstub import event_callback, link_shared_event, signed_event

        self.dispatch(*signed_event(self.secret, event_callback(link_shared_event(list(urls), user_id=user,
                                                                                  channel=channel))))

    def shortcut(self, text: str, user: str, channel: str = "C123") -> None:
        from tests.slackstub import message_action_payload, signed_interaction

        self.dispatch(*signed_interaction(self.secret, message_action_payload("gad_repo_card", text, user_id=user,
                                                                              channel_id=channel)))


@pytest.fixture
def served(tmp_path, stub):
    made = Served(tmp_path, stub)
    yield made
    made.server.__exit__(None, None, None)


def test_a_hidden_repositorys_link_gets_no_card_where_the_person_or_the_channel_may_not_see_it(served, stub):
    from tests.boltidle import drain

    web, vault = f"{served.base}/web", f"{served.base}/vault"
    urls = [web, vault, f"{vault}/tree/main/src", f"{served.base}/vault.git"]
    served.paste(urls, OUTSIDER, "C123")  # an outsider, in a channel open to everyone
    served.paste(urls, INSIDER, "C123")  # an insider, where not everyone may see vault
    served.paste(urls, EXTERNAL, "C0PART")  # another organization's member, in the shared channel
    served.paste(urls, GUEST, "C0ENG")  # a guest in #eng: vault, not web
    drain(served.app)
    cards = {call.args["channel"] + ":" + ",".join(sorted(call.args["unfurls"])) for call in
             stub.calls_to("chat.unfurl")}
    assert cards == {f"C123:{web}", f"C0ENG:{','.join(sorted(urls[1:]))}"}, cards


def test_the_message_shortcut_and_the_cards_button_treat_a_hidden_repository_as_untracked(served, stub):
    from tests.slackstub import block_actions_payload, signed_interaction

    none = ("That message links to no tracked repository or organization and names none; `/gad repos` lists what "
            "is tracked.")
    for count, text in enumerate(("how is vault doing?", f"see <{served.base}/vault/commits|the vault>"), start=1):
        served.shortcut(text, OUTSIDER)
        said = stub.wait_for("chat.postEphemeral", count=count, timeout=15)[-1].args
        assert said["user"] == OUTSIDER and read(said) == none
    # the card's button, its value forged to name vault: answered as `/gad vault since:12w by:week` would be
    url = stub.response_url("more-vault")
    payload = block_actions_payload("gad_card_more", "vault", user_id=OUTSIDER, response_url=url)
    served.dispatch(*signed_interaction(served.secret, payload))
    (answer,) = stub.wait_for_response("more-vault", timeout=15)
    names = served.engine.known_names(served.face.members.viewer(OUTSIDER))
    assert read(answer) == ":warning: " + untracked_words("vault", names)


def test_the_workflow_step_treats_a_hidden_repositorys_name_and_link_as_untracked(served, stub):
    from tests.test_workflow import run_step

    from tests.test_workflow import RUN_TOKEN

    stub.workflow_tokens.add(RUN_TOKEN)
    from bot.faces.workflow import WORKFLOW_VIEWER

    asked = ("vault", f"{served.base}/vault/tree/main", f"{served.base}/nosuch/tree/main")
    errors = [run_step(served.app, stub, {"repository": name}, "functions.completeError", count=i)["error"]
              for i, name in enumerate(asked, start=1)]
    assert errors[0] == untracked_words("vault", served.engine.known_names(WORKFLOW_VIEWER))
    assert errors[1] == errors[2].replace("nosuch", "vault")  # a link: as one to a repository never tracked
    outputs = run_step(served.app, stub, {"repository": "all"}, "functions.completeSuccess")["outputs"]
    assert outputs["two_gad_person_days"] == two_gad(served.web)



# -- look-alike names (bot/engine/lookalikes.py) given when tracking: `as:NAME`, `--name`, the URL's own ----------

WEB_CYRILLIC = "w\u0435b"  # е: CYRILLIC SMALL LETTER IE


def test_a_name_that_looks_like_a_tracked_one_is_refused_when_tracking_from_slack(world, stub):
    from tests.test_surfaces import ADMIN

    # refused in the ack itself, before anything is fetched (a refusal after "Tracking ..." reads as a change of mind)
    ack, _ = world.slash(f"track https://github.com/acme/tools as:{WEB_CYRILLIC}", user=ADMIN)
    assert read(ack) == (f":warning: `{WEB_CYRILLIC}` looks like `web`, which is tracked, but is spelled with other "
                         "letters; ask about `web`, or track this one under a name in plain letters with `as:NAME` "
                         "(CLI: --name), e.g. `as:web-2`.")
    assert WEB_CYRILLIC not in world.engine.index.repo_names()


def test_a_name_that_looks_like_a_tracked_one_is_refused_by_the_command_line(tmp_path):
    from tests.gitbuild import RepoBuilder
    from tests.test_cli import run

    data = tmp_path / "data"
    for name in ("web", "other"):
        builder = RepoBuilder(tmp_path / name)
        builder.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    assert run("track", str(tmp_path / "web"), "--name", "web", data=data).returncode == 0
    refused = run("track", str(tmp_path / "other"), "--name", WEB_CYRILLIC, data=data)
    assert refused.returncode != 0 and refused.stdout == ""
    assert f"`{WEB_CYRILLIC}` looks like `web`, which is tracked, but is spelled with other letters" in refused.stderr
    mixed = run("track", str(tmp_path / "other"), "--name", "\u0440lain", data=data)  # р (Cyrillic) + lain: no twin
    assert ("`\u0440lain` cannot be a repository's name: its name mixes letters of several scripts (Cyrillic, "
            "Latin); track it under a name in one script with `as:NAME` (CLI: --name), e.g. `as:plain`.") in mixed.stderr
    listing = run("repos", "--json", data=data).stdout
    assert WEB_CYRILLIC not in listing and "\u0440lain" not in listing


def test_a_new_project_whose_name_looks_like_a_tracked_one_is_refused(tmp_path):
    from tests.gitbuild import RepoBuilder
    from tests.test_cli import run

    data = tmp_path / "data"
    builder = RepoBuilder(tmp_path / "web")
    builder.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    assert run("track", str(builder.path), "--name", "web", data=data).returncode == 0
    refused = run("project", "add", WEB_CYRILLIC, "web", data=data)
    assert refused.returncode != 0 and refused.stdout == ""
    assert (f"`{WEB_CYRILLIC}` looks like `web`, which is tracked, but is spelled with other letters; name the project "
            "in plain letters, e.g. `web-all`.") in refused.stderr
    mixed = run("project", "add", "\u0440lain", "web", data=data)
    assert ("`\u0440lain` cannot be a project's name: its name mixes letters of several scripts (Cyrillic, Latin); "
            "name it in one script, e.g. `plain`.") in mixed.stderr
    assert run("project", "add", "web-all", "web", data=data).returncode == 0
    assert run("project", "add", "web-all", "web", data=data).returncode == 0  # adding to it again is no new name
    listing = run("projects", data=data).stdout
    assert "web-all" in listing and WEB_CYRILLIC not in listing and "\u0440lain" not in listing


# -- digests, a team's digest, with people's names: only what the channel may see --------------------------------


def test_a_digest_of_a_project_and_a_teams_digest_name_nobody_of_the_hidden_repository(world, stub):
    from datetime import timedelta

    from bot.digests.digest import run_due_digests
    from bot.slackapi import web_client
    from tests.test_surfaces import NOW

    stub.add_channel("C0TEAM", "team-news")
    stub.add_user(OUTSIDER, email="ann@example.com", channels=["C123", "C0PART", "C0TEAM"])
    stub.add_usergroup("S0ENGT", "engteam", [OUTSIDER, INSIDER])  # ann's and eve's group
    assert "subscribed" in world.answer("subscribe all people:on", OUTSIDER, channel="C123")
    assert "subscribed" in world.answer("subscribe all team:@engteam people:on", OUTSIDER, channel="C0TEAM")
    due = NOW + timedelta(days=5)
    done = run_due_digests(world.engine, lambda: web_client(world.settings), at=due, clock=lambda: due, sync=False,
                           teams=world.face.members.teams)
    assert sorted(r.state for r in done) == ["posted", "posted"]
    for call in stub.calls_to("chat.postMessage"):
        shown = read(call.args)
        assert "eve@" not in shown and "fay@" not in shown and "vault" not in shown, shown
    assert all("`ann@example.com`" in read(c.args) for c in stub.calls_to("chat.postMessage"))  # people:on


def test_with_person_detail_for_admins_a_digest_with_people_on_names_nobody(tmp_path, stub):
    """GAD_PERSON_DETAIL=admins: a channel's members are not all admins, so `people:on` shows no one there."""
    from datetime import timedelta

    from bot.digests.digest import run_due_digests
    from bot.slackapi import web_client
    from tests.test_surfaces import NOW

    world = World(tmp_path, stub, person_detail="admins")
    assert "subscribed" in world.answer("subscribe web people:on", OUTSIDER, channel="C123")
    due = NOW + timedelta(days=5)
    done = run_due_digests(world.engine, lambda: web_client(world.settings), at=due, clock=lambda: due, sync=False)
    assert [r.state for r in done] == ["posted"]
    shown = read(stub.calls_to("chat.postMessage")[-1].args)
    assert "*2GAD 2 person-days*" in shown and "@example.com" not in shown, shown


# -- GAD_PERSON_DETAIL=admins: a user group of one is `author:` by another name -----------------------------------


def test_with_person_detail_for_admins_a_team_filter_does_not_give_one_persons_figures(tmp_path, stub):
    """Any member may make a user group (Slack's default): `@solo` holding only bob, or `@pair` holding bob and the
    asker, whose figure less the asker's own (`/gad me`) is bob's (person-days add up over distinct people). So with
    GAD_PERSON_DETAIL=admins a group's figures are person-level: admins only, as `author:` is."""
    world = World(tmp_path, stub, person_detail="admins")
    stub.add_user("U0BOB", email="bob@example.com", channels=["C123"])
    stub.add_usergroup("S0SOLO", "solo", ["U0BOB"])
    bob = {(e, d) for e, d in oracle_pairs(world.web.path) if e == b"bob@example.com"}
    assert world.answer("web author:bob@example.com", OUTSIDER).startswith(":warning: Figures of one person are for "
                                                                           "admins here")
    for text in ("web team:@solo", "web by:team", "compare web@team:solo web", "web team:@solo by:month"):
        shown = world.answer(text, OUTSIDER)
        assert f"2GAD {2 * len(bob)}" not in shown.replace(f"2GAD {2 * len(bob)}0", ""), (text, shown)
        assert "Figures of a user group are for admins here (GAD_PERSON_DETAIL=admins)" in shown, (text, shown)
    assert f"*2GAD {2 * len(bob)} person-days*" in world.answer("web team:@solo", ADMIN)  # an admin reads it
    said = world.answer("subscribe web team:@solo", ADMIN)  # posted in a channel, whose members are not all admins
    assert said == (":warning: A team's digest shows a user group's figures in a channel, and those are for admins "
                    "here (GAD_PERSON_DETAIL=admins); subscribe without `team:` for the totals.")
    assert subs.get(world.engine.index, "C123") is None


# -- Share: someone else's button, a value replayed elsewhere or after the audience closed ---------------------------


def share_in(world, message: dict, user: str, channel: str) -> str:
    from tests.slackstub import block_actions_payload, signed_interaction

    (button,) = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    name = f"share-{user}-{channel}-{len(world.stub.calls)}"
    payload = block_actions_payload("gad_share", button["value"], user_id=user, channel_id=channel,
                                    response_url=world.stub.response_url(name))
    assert world._dispatch(*signed_interaction("surfaces-signing-secret", payload)).status == 200
    return name


def test_a_share_button_posts_only_its_askers_answer_only_where_its_channel_may_see_it(world, stub):
    from tests.boltidle import drain

    private = world.ask("vault", user=INSIDER, channel="C0ENG")
    # an outsider, a guest and another organization's member press (or forge) the insider's button: nothing
    forged = [share_in(world, private, user, channel) for user, channel in
              ((OUTSIDER, "C123"), (GUEST, "C0ENG"), (EXTERNAL, "C0PART"), (OUTSIDER, "C0ENG"))]
    # the insider's own value replayed into a channel open to everyone, then one shared outside: refused, kept
    for channel in ("C123", "C0PART"):
        (said,) = stub.wait_for_response(share_in(world, private, INSIDER, channel), timeout=15)
        assert said["response_type"] == "ephemeral" and "Not everyone in this channel" in read(said)
    # then, the audience closed (an admin), even #eng does not get it from this button
    world.engine.set_access("vault", Audience.parse("admins"))
    (said,) = stub.wait_for_response(share_in(world, private, INSIDER, "C0ENG"), timeout=15)
    assert read(said) == ":warning: `vault` is no longer open to you, so this answer is not posted."
    world.engine.set_access("vault", Audience.parse("C0ENG"))
    replaced, shared = stub.wait_for_response(share_in(world, private, INSIDER, "C0ENG"), count=2, timeout=15)
    assert shared["response_type"] == "in_channel" and "Shared by <@U0ENG>" in read(shared)
    drain(world.app)
    assert all(not stub.responses(name) for name in forged)  # the forged clicks got nothing, posted nothing
    assert [c for c in stub.calls_to("chat.postMessage") if "vault" in read(c.args)] == []


# -- when Slack cannot say who asks (an error, rate limits past the retries, a 5xx): no, in one sentence ----------

def test_the_name_search_answers_in_time_while_slack_is_slow_and_names_what_it_learnt_next(world, stub):
    """The name search is answered in its ack (Slack waits 3 s for it): a person whose facts are not cached while
    users.info hangs is offered nothing, at once, rather than no answer at all (the 5xx case of the test below lost
    its `options` under load: the SDK's retries outlasted the ack); the look-up goes on, and the next keystroke
    offers what they may see."""
    import time

    from tests.slackstub import block_suggestion_payload, signed_interaction

    admin_modal = press(world, "gad_home_report", user="UADMIN")
    world.face.members._people.clear()
    world.face.members._channels_of.clear()
    release = stub.hold("users.info")
    payload = block_suggestion_payload(admin_modal, "gad_names", "", block_id="names", user_id=INSIDER)
    response = world._dispatch(*signed_interaction("surfaces-signing-secret", payload))
    assert json.loads(response.body)["options"] == []
    assert stub.held.get("users.info", 0) >= 1  # answered while Slack still had not
    release.set()
    deadline = time.monotonic() + 15  # waits for the look-up's answer to be kept, not for a timer of the code
    while world.face.members.cached_viewer(INSIDER) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    response = world._dispatch(*signed_interaction("surfaces-signing-secret", payload))
    offered = [o["value"] for o in json.loads(response.body)["options"]]
    assert sorted(offered) == sorted(seen_names(world, INSIDER)) and "vault" in offered, offered


SLACK_DOWN = ({"error": "internal_error"}, {"status": 429, "retry_after": 0, "times": 4},
              {"status": 503, "times": 3}, {"error": "user_not_found"})


@pytest.mark.parametrize("failure", SLACK_DOWN, ids=["error", "ratelimited", "5xx", "user_not_found"])
def test_when_slack_cannot_say_who_asks_every_face_of_the_world_says_no(world, stub, failure):
    from tests.slackstub import block_suggestion_payload, signed_interaction

    admin_modal = press(world, "gad_home_report", user="UADMIN")  # a modal to search in (the search is by user)
    private = world.ask("vault", user=INSIDER, channel="C0ENG")  # an answer to share, while Slack answered
    world.face.members._people.clear()  # what Slack said is forgotten (its few minutes are over)
    world.face.members._channels_of.clear()

    def down():
        stub.fail_next("users.info", **failure)

    down()
    shown = world.answer("vault", INSIDER, channel="C0ENG")
    assert shown.startswith(":warning: Slack could not say who you are just now (") and "2GAD" not in shown, shown
    assert shown.count(". ") + shown.count("; ") <= 2  # one sentence
    down()
    home = read(world.open_home(INSIDER))
    assert "vault" not in home and "Slack could not say who you are just now" in home
    down()
    payload = block_suggestion_payload(admin_modal, "gad_names", "va", block_id="names", user_id=INSIDER)
    response = world._dispatch(*signed_interaction("surfaces-signing-secret", payload))
    assert json.loads(response.body)["options"] == []
    down()
    (said,) = stub.wait_for_response(share_in(world, private, INSIDER, "C0ENG"), timeout=15)
    assert said["response_type"] == "ephemeral" and "Slack could not say who you are just now" in read(said)
    assert not [c for c in stub.calls_to("chat.postMessage") if "vault" in read(c.args)]


@pytest.mark.parametrize("failure", SLACK_DOWN[:2], ids=["error", "ratelimited"])
def test_when_slack_cannot_say_who_pasted_or_asked_no_card_and_one_sentence(served, stub, failure):
    from tests.boltidle import drain

    stub.fail_next("users.info", **failure)
    served.shortcut("how is vault doing?", INSIDER, channel="C0ENG")
    said = stub.wait_for("chat.postMessage", timeout=15)[-1].args  # to the person's DM: the thread is not theirs
    assert said["channel"] == INSIDER and read(said).startswith("Slack could not say who you are just now (")
    stub.fail_next("users.info", **failure)
    served.paste([f"{served.base}/vault"], INSIDER, "C0ENG")
    drain(served.app)
    assert stub.calls_to("chat.unfurl") == []


# -- a calibration measured on a hidden repository is a fact about it --------------------------------------------


def test_a_calibration_measured_on_a_hidden_repository_is_not_applied_or_named_for_those_who_may_not_see_it(world):
    """An admin calibrates with #eng's timesheet on `team` (open to #eng only) and saves it as every report's default:
    its name, ratio and span come from that repository's history; to an outsider it was never saved."""
    from tests.test_calibrate import TIMESHEET, invoke, sheet
    from tests.gitbuild import RepoBuilder

    history = RepoBuilder(world.vault.path.parent / "team")
    for day in ("2024-03-04", "2024-03-05", "2024-03-06", "2024-04-01", "2024-04-02", "2024-04-04"):
        history.commit(name="Ann Lee", email="ann@corp.com", date=day)
        history.commit(name="Bob Stone", email="bob@corp.com", date=day)
    world.engine.track(str(history.path), "team")
    world.engine.set_access("team", Audience.parse("C0ENG"))
    saved = invoke(world.vault.path.parent, sheet(world.vault.path.parent, TIMESHEET), "team", "--save", "engcal",
                   "--default")
    assert saved.exit_code == 0, saved.output
    assert "Calibrated by engcal" in world.answer("web", INSIDER)  # #eng may see what it was measured on
    shown = world.answer("web", OUTSIDER)  # (a guest in #eng, and #eng's members, may see `team`)
    assert "engcal" not in shown and "Calibrated" not in shown, shown
    named = world.answer("web calibrated:engcal", OUTSIDER)
    never = world.answer("web calibrated:nosuch", OUTSIDER).replace("nosuch", "engcal")
    assert named == never == (":warning: No calibration is saved as `engcal` (none is saved yet); an admin's `gad-bot "
                              "calibrate TIMESHEET REPO --save engcal` measures and keeps one."), named


# -- `org:`: the organizations a zero's hint offers are those of what the person may see ---------------------------


def test_an_org_filters_hint_names_no_organization_of_the_hidden_repositorys_people(world):
    """zed of secretpartner.example committed only to vault: to an outsider, `org:secret` and the whole domain match
    nothing, as they would with vault untracked; an insider asking about vault is offered it."""
    world.vault.commit(name="Zed", email="zed@secretpartner.example", date="2026-11-25")
    world.engine.sync(["vault"])
    for glob in ("secret", "secretpartner.example", "*partner*"):
        shown = world.answer(f"web org:{glob}", OUTSIDER)
        assert "secretpartner" not in shown.replace(glob, ""), shown  # (what was typed is echoed)
        assert f"No organization matches `org:{glob}`; `by:org` lists the organizations there are." in shown, shown
    assert "`org:secret*` matches secretpartner.example" in world.answer("vault org:secret", INSIDER)
