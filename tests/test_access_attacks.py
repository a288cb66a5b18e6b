"""Attacks on who may see what (issues 31 and 34), each through its face's real path: signed requests -> Bolt -> the
engine on a real index -> the Web API calls a loopback Slack receives (tests/slackstub.py). An outsider (a member
outside `vault`'s audience, #eng), a guest and a member of another organization try to learn anything of `vault`:
its name, figures, people, or that it exists. A name they may not see must read, word for word, as a name that was
never tracked. The world is tests/test_access_faces.py's."""

from __future__ import annotations

from bot.digests import subscriptions as subs
from tests.test_access_faces import (EXTERNAL, GUEST, INSIDER, OUTSIDER, World, stub, two_gad,  # noqa: F401
                                     untracked_words, world)
from tests.test_home import press, submit


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
