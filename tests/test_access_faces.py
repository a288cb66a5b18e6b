"""Who may see what (issue 31), through each face's real path: signed requests -> Bolt -> the engine on a real
index -> the renderer -> the Web API calls a loopback Slack receives, whose people, channels and user groups answer
consistently (tests/slackstub.py). Each face is asked by an outsider (a member outside the audience), an insider
(in its channel), a guest, a member of another organization (Slack Connect) and an admin. Figures come from git.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import pytest

from bot.digests import subscriptions as subs
from bot.digests.digest import run_due_digests
from bot.digests.face import DigestFace
from bot.digests.subscriptions import Subscribe
from bot.engine.audiences import Audience
from bot.engine.engine import Engine
from bot.errors import UnknownRepoError
from bot.faces.slack import build_app
from bot.slackapi import web_client
from tests.gitbuild import oracle_pairs
from tests.slackstub import SlackStub, block_actions_payload, signed_interaction
from tests.test_home import press, submit
from tests.test_surfaces import ADMIN, NOW, TODAY, Bot, build, read

# eve and fay work on vault; ann (web's) once too, on a day she also committed to web (2024-01-02)
VAULT = [("eve", "2026-11-23", None), ("fay", "2026-11-23", None), ("eve", "2026-11-24", None),
         ("ann", "2024-01-02", None)]
OUTSIDER, INSIDER, GUEST, EXTERNAL = "U123", "U0ENG", "U0GUEST", "U0EXT"


@pytest.fixture
def stub():
    with SlackStub() as running:
        running.add_channel("C0ENG", "eng")  # vault's audience
        running.add_channel("C0PART", "partners", shared_outside=True)  # a Slack Connect channel
        running.add_user(OUTSIDER, email="ann@example.com", channels=["C123", "C0PART"])
        running.add_user(INSIDER, email="eve@example.com", channels=["C123", "C0ENG"])
        running.add_user(GUEST, guest="multi", channels=["C0ENG"], email="gus@example.com")
        running.add_user(EXTERNAL, team_id="T0OTHERORG", channels=["C0PART"])
        running.add_user(ADMIN, channels=["C123"])
        yield running


class World(Bot):
    """web (9 commits) and api, open to everyone; vault, open to #eng (C0ENG); project `all` of web and vault."""

    def __init__(self, tmp_path, stub, **env):
        super().__init__(tmp_path, stub)
        if env:  # the same index, served with other settings
            self.settings = dataclasses.replace(self.settings, **env)
            self.engine = Engine(self.settings, index=self.engine.index)
            self.digests = DigestFace(self.settings, self.engine, clock=lambda: NOW)
            self.app, self.face = build_app(self.settings, self.engine, digests=self.digests, socket_mode=False,
                                            today=lambda: TODAY)
        self.vault = build(tmp_path / "vault", VAULT)
        self.engine.track(str(self.vault.path), "vault")
        self.engine.set_access("vault", Audience.parse("C0ENG"))
        self.engine.project_add("all", ["web", "vault"])

    def answer(self, text: str, user: str, channel: str = "C123") -> str:
        """What `user` reads after `/gad text`: the ack's sentence, or the answer after it."""
        ack, name = self.slash(text, user=user, channel=channel)
        if ack:
            return read(ack)
        return read(self.stub.wait_for_response(name, count=1, timeout=15)[-1])


@pytest.fixture
def world(tmp_path, stub) -> World:
    return World(tmp_path, stub)


def two_gad(*builders) -> int:
    return 2 * len(set().union(*(oracle_pairs(b.path) for b in builders)))


def untracked_words(name: str, seen: list[str]) -> str:
    """Word for word what a name that was never tracked gets (offering only names the person may see)."""
    return str(UnknownRepoError(name, seen))


# -- /gad: reports, repos, projects, typos ----------------------------------------------------------


@pytest.mark.parametrize("user", [OUTSIDER, EXTERNAL])
def test_outside_the_audience_a_repository_is_not_tracked(world, user):
    shown = world.answer("vault", user)
    assert "No repository or project named `vault` is tracked" in shown and "2GAD" not in shown


@pytest.mark.parametrize("user", [GUEST, EXTERNAL])
def test_a_guest_or_another_organization_is_not_part_of_everyone(world, user):
    shown = world.answer("web since:2024", user)
    assert "No repository or project named `web` is tracked" in shown and "2GAD" not in shown


def test_inside_the_audience_the_figures_are_gits(world):
    assert f"*2GAD {two_gad(world.vault)} person-days*" in world.answer("vault", INSIDER)
    assert two_gad(world.vault) == 8  # eve 11-23, fay 11-23, eve 11-24, ann 2024-01-02


def test_a_guest_in_the_audiences_channel_sees_it(world):
    assert f"*2GAD {two_gad(world.vault)} person-days*" in world.answer("vault", GUEST)


def test_an_admin_sees_it_and_is_told_it_is_restricted(world):
    shown = world.answer("vault", ADMIN)
    assert f"*2GAD {two_gad(world.vault)} person-days*" in shown
    assert "`vault` is restricted: this answer is yours, and Share posts it only in a channel of its audience " \
           "(`/gad access vault` says who may see it)." in shown


def test_repos_projects_and_a_project_left_out(world):
    assert "`vault`" not in world.answer("repos", OUTSIDER) and "`web`" in world.answer("repos", OUTSIDER)
    assert "`vault`" in world.answer("repos", INSIDER)
    assert "`vault`" not in world.answer("projects", OUTSIDER) and "`all`" in world.answer("projects", OUTSIDER)
    outside = world.answer("all", OUTSIDER)
    assert f"*2GAD {two_gad(world.web)} person-days*" in outside
    assert "1 of `all`'s repositories are left out: you are not in their audience." in outside
    inside = world.answer("all", INSIDER)
    assert f"*2GAD {two_gad(world.web, world.vault)} person-days" in inside and "not in their audience" not in inside


def test_a_typo_never_offers_what_the_person_may_not_see(world):
    assert "did you mean" not in world.answer("vaul", OUTSIDER).replace("did you mean `all`", "")
    assert "did you mean `vault`" in world.answer("vaul", INSIDER)


def test_help_and_its_examples_name_only_what_the_person_may_see(world):
    stranger = world.answer("help", EXTERNAL)  # of another organization: sees nothing tracked
    assert "since:PERIOD" in stranger and "`/gad vault" not in stranger and "`/gad web by:year`" not in stranger
    assert "Nothing is tracked yet, so these examples name made-up repositories" in stranger
    guest = world.answer("help", GUEST)  # in #eng: vault, not web
    assert "`/gad vault by:year`" in guest and "`/gad web by:year`" not in guest
    outside = world.answer("help", OUTSIDER)
    assert "`/gad web by:year`" in outside and "`/gad vault" not in outside


def test_when_slack_cannot_say_who_asks_nothing_is_shown(world):
    world.stub.fail_next("users.info", error="internal_error")
    shown = world.answer("web", "U0NEW")
    assert shown.startswith(":warning: Slack could not say who you are just now (internal_error)") and "2GAD" not in shown


# -- public answers, Share -------------------------------------------------------------------------


def test_a_public_answer_goes_only_where_the_channel_may_see_it(world):
    refused = world.answer("vault public", INSIDER, channel="C123")
    assert "Not everyone in this channel may see `vault`, so this answer is not posted there" in refused
    ack, name = world.slash("vault public", user=INSIDER, channel="C0ENG")
    (posted,) = world.stub.wait_for_response(name, count=1, timeout=15)
    assert posted["response_type"] == "in_channel" and f"*2GAD {two_gad(world.vault)} person-days*" in read(posted)
    shared = world.answer("web public", OUTSIDER, channel="C0PART")  # open to everyone, but shared outside
    assert "(it is shared outside the workspace, or Slack could not say) may see `web`" in shared


def test_share_posts_only_where_the_channel_may_see_it(world, stub):
    private = world.ask("vault", user=INSIDER, channel="C123")
    name = world.click_share(private, user=INSIDER)  # clicked in C123 (block_actions_payload's channel)
    (said,) = stub.wait_for_response(name, count=1, timeout=15)
    assert "Not everyone in this channel may see `vault`" in read(said) and said["response_type"] == "ephemeral"
    again = world.ask("vault", user=INSIDER, channel="C0ENG")
    (button,) = [e for b in again["blocks"] if b["type"] == "actions" for e in b["elements"]]
    url = stub.response_url("share-eng")
    payload = block_actions_payload("gad_share", button["value"], user_id=INSIDER, channel_id="C0ENG",
                                    response_url=url)
    assert world._dispatch(*signed_interaction("surfaces-signing-secret", payload)).status == 200
    replaced, shared = stub.wait_for_response("share-eng", count=2, timeout=15)
    assert shared["response_type"] == "in_channel" and "Shared by <@U0ENG>" in read(shared)


# -- the Home tab and its forms ----------------------------------------------------------------------


def test_the_home_tab_lists_only_what_the_person_may_see(world):
    outside, inside, guest = (read(world.open_home(u)) for u in (OUTSIDER, INSIDER, GUEST))
    assert "`web` · 2GAD" in outside and "`vault`" not in outside
    assert "`vault` · 2GAD" in inside
    assert "`web`" not in guest and "`vault` · 2GAD" in guest  # a guest in #eng: vault only
    assert "Tracked repositories (1)" in guest


def test_the_report_form_posts_only_in_a_channel_the_person_is_in_and_that_may_see_it(world, stub):
    modal = press(world, "gad_home_report", user=OUTSIDER)
    ack = submit(world, modal, {"names": ["web"], "where": "C0ENG"}, user=OUTSIDER)
    assert ack["response_action"] == "errors" and ack["errors"]["where"].startswith("You are not in that channel")
    modal = press(world, "gad_home_report", user=INSIDER)
    ack = submit(world, modal, {"names": ["vault"], "where": "C123"}, user=INSIDER)
    assert "Not everyone in this channel may see `vault`" in ack["errors"]["where"]
    assert submit(world, modal, {"names": ["vault"], "where": "C0ENG"}, user=INSIDER) == {}
    posted = stub.wait_for("chat.postMessage", timeout=15)[-1].args
    assert posted["channel"] == "C0ENG" and "Shared by <@U0ENG>" in read(posted)  # who asked, as Share says
    assert f"*2GAD {two_gad(world.vault)} person-days*" in read(posted)


def test_the_name_search_offers_only_what_the_person_may_see(world):
    from tests.slackstub import block_suggestion_payload

    for user, expected in ((OUTSIDER, []), (INSIDER, ["vault"])):
        modal = press(world, "gad_home_report", user=user)
        payload = block_suggestion_payload(modal, "gad_names", "va", block_id="names", user_id=user)
        response = world._dispatch(*signed_interaction("surfaces-signing-secret", payload))
        assert [o["value"] for o in json.loads(response.body)["options"]] == expected


def test_the_subscribe_form_refuses_a_channel_the_person_is_not_in(world):
    modal = press(world, "gad_home_subscribe", user=OUTSIDER)
    ack = submit(world, modal, {"channel": "C0ENG", "names": ["web"], "day": "mon", "time": "09:00"}, user=OUTSIDER)
    assert ack["errors"]["channel"].startswith("You are not in that channel")
    assert subs.get(world.engine.index, "C0ENG") is None


# -- digests ------------------------------------------------------------------------------------------


def test_a_digest_goes_only_where_the_channel_may_see_it_and_drops_what_it_no_longer_may(world, stub):
    assert "No repository or project named `vault` is tracked" in world.answer("subscribe vault", OUTSIDER)
    refused = world.answer("subscribe vault", INSIDER, channel="C123")
    assert "Not everyone in this channel may see `vault`" in refused and subs.get(world.engine.index, "C123") is None
    world.answer("subscribe vault web", INSIDER, channel="C0ENG")
    assert subs.get(world.engine.index, "C0ENG").repos == ("vault", "web")
    due = NOW + timedelta(days=5)  # Tuesday 12:00 UTC: Monday's 09:00 in the subscriber's zone has come
    first = run_due_digests(world.engine, lambda: web_client(world.settings), at=due, clock=lambda: due, sync=False)
    assert [r.state for r in first] == ["posted"]
    assert "`vault`" in read(stub.calls_to("chat.postMessage")[-1].args)
    world.engine.set_access("vault", Audience.parse("admins"))  # an admin closes it
    later = due + timedelta(days=7)
    second = run_due_digests(world.engine, lambda: web_client(world.settings), at=later, clock=lambda: later,
                             sync=False)
    assert [r.state for r in second] == ["posted"]
    shown = read(stub.calls_to("chat.postMessage")[-1].args)
    assert "Left out: this channel may no longer see `vault`" in shown and "*`vault`*" not in shown


# -- /gad access and /gad me ----------------------------------------------------------------------------


def test_access_is_for_admins_and_reads_back(world):
    assert "Only the people gad-bot's operator listed can do that" in world.answer("access vault", INSIDER)
    assert world.answer("access vault", ADMIN).startswith("`vault` (repository) is seen by <#C0ENG>.")
    done = world.answer("access vault <#C0ENG|eng> <!subteam^S0BACK|@backend>", ADMIN)  # as Slack escapes them
    assert done.startswith("Done: `vault` (repository) is seen by <#C0ENG>, <!subteam^S0BACK>.")
    assert world.engine.access("vault").audience.text() == "C0ENG S0BACK"
    world.stub.add_usergroup("S0FRONT", "frontend")
    world.answer("access vault #eng @frontend", ADMIN)  # typed without Slack's escaping: names looked up
    assert world.engine.access("vault").audience.text() == "C0ENG S0FRONT"
    said = world.answer("access vault #nosuch", ADMIN)
    assert "`#nosuch` is not a channel, user group or person" in said
    assert world.engine.access("vault").audience.text() == "C0ENG S0FRONT"  # unchanged


def test_a_user_group_in_the_audience_lets_its_members_see_it(world, stub):
    stub.add_usergroup("S0BACK", "backend", [OUTSIDER])
    world.engine.set_access("vault", Audience.parse("S0BACK"))
    assert f"*2GAD {two_gad(world.vault)} person-days*" in world.answer("vault", OUTSIDER)
    assert "No repository or project named `vault` is tracked" in world.answer("vault", INSIDER)


def test_me_counts_the_askers_own_days_across_what_they_may_see(world):
    # eve@example.com: vault 2026-11-23 and 11-24 (web and api have none of hers): 2 days, 2GAD 4
    eve = {(e, d) for e, d in oracle_pairs(world.vault.path) if e == b"eve@example.com"}
    assert f"*2GAD {2 * len(eve)} person-days*" in world.answer("me", INSIDER) and 2 * len(eve) == 4
    # ann@example.com may not see vault: only web and api count (her 2024-01-02 in vault is not counted twice anyway)
    ann = {(e, d) for b in (world.web, world.api) for e, d in oracle_pairs(b.path) if e == b"ann@example.com"}
    shown = world.answer("me", OUTSIDER)
    assert f"*2GAD {2 * len(ann)} person-days*" in shown and "Counted as you: ann@example.com" in shown
    nobody = world.answer("me", GUEST)  # gus@example.com never committed
    assert nobody.startswith(":warning: The repositories you may see have no commits by gus@example.com; if you "
                             "commit with another address, a `.mailmap` line such as `Your Name &lt;gus@example.com&gt; "
                             "&lt;you@other.example&gt;` in the repository joins them")
    world.engine.set_aliases(GUEST, ["fay@example.com"])  # an admin: gad-bot teams alias U0GUEST fay@example.com
    world.face.members._people.clear()  # (what Slack said is kept a few minutes; the alias is read each time)
    assert "*2GAD 2 person-days*" in world.answer("me", GUEST)  # fay's one day in vault


def test_person_detail_for_admins_only_through_slack(tmp_path, stub):
    world = World(tmp_path, stub, person_detail="admins")
    member = world.answer("web by:person", OUTSIDER)
    assert f"*2GAD {two_gad(world.web)} person-days*" in member and "ann@example.com" not in member
    assert "Figures per person are for admins here (GAD_PERSON_DETAIL=admins)" in member
    assert "ann@example.com" in world.answer("web by:person", ADMIN)
    assert "Figures of one person are for admins here" in world.answer("web author:bob@example.com", OUTSIDER)
    public = world.answer("web by:person public", ADMIN)  # a channel's members are not all admins
    assert "Figures per person stay with admins" in public


def test_an_organizations_news_goes_only_to_channels_that_may_see_it(world, stub):
    """Org news (bot/digests/orgnews.py) names repositories: only channels of the organization's audience hear it,
    and each only of the repositories it may see."""
    from bot.digests.orgnews import announce_org_changes
    from bot.engine.forgeorgs import OrgChange, OrgSyncResult

    world.engine.project_add("acme", ["web", "vault"])
    world.engine.set_access("acme", Audience.parse("C0ENG C0PART"))
    for channel in ("C123", "C0ENG", "C0PART"):  # subscribed before it was restricted
        subs.subscribe(world.engine, channel, Subscribe(("acme",), tz="UTC"), now=NOW)
    news = OrgSyncResult("acme", 2, (OrgChange("acme", "new", "web"), OrgChange("acme", "new", "vault")))
    posted = announce_org_changes(world.engine.index, web_client(world.settings), [news])
    # #general is outside acme's audience; #partners is in it, but may see neither repository (shared outside, it
    # is not `everyone`, and vault is #eng's): nothing it may see changed, so it is told nothing
    assert [channel for channel, _ in posted] == ["C0ENG"]
    (eng,) = (text for _, text in posted)
    assert "`web` is new in acme" in eng and "`vault` is new in acme" in eng  # vault is open to #eng
