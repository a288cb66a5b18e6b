"""Teams from Slack (issue 34; METRIC.md rule 8): `team:@group`, `by:team`, `gad-bot teams`, through the engine, the
real Slack path (a loopback Slack whose users, profiles and groups answer consistently) and the CLI. Expected figures
come from git (tests/gitbuild.oracle_pairs) restricted to the groups' people by hand."""

from __future__ import annotations

import pytest

from bot.engine.engine import Engine
from bot.engine.query import parse_query
from bot.engine.teams import NO_TEAM, Team, TeamMember, Teams
from bot.errors import QueryError
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, oracle_pairs

# ann commits as ann@home.example, which web's .mailmap maps to ann@corp.example (her Slack profile's address)
MAILMAP = "Ann <ann@corp.example> <ann@home.example>\n"
HISTORY = [("ann@home.example", "2026-11-02"), ("ann@corp.example", "2026-11-03"), ("bob@corp.example", "2026-11-03"),
           ("cy@corp.example", "2026-11-04"), ("dan@corp.example", "2026-11-05"), ("bob@corp.example", "2026-11-05")]

TEAMS = Teams((
    Team("S0BACK", "backend", (TeamMember("U0ANN", ("ann@corp.example",), "Ann"),
                               TeamMember("U0BOB", ("bob@corp.example",), "Bob"))),
    Team("S0FRONT", "frontend", (TeamMember("U0BOB", ("bob@corp.example",), "Bob"),
                                 TeamMember("U0CY", ("cy@corp.example",), "Cy"))),
    Team("S0NEW", "newcomers", (TeamMember("U0ZED", ("zed@corp.example",), "Zed"),)),
))


@pytest.fixture
def web(tmp_path, engine):
    builder = RepoBuilder(tmp_path / "web")
    builder.commit(name="Ann", email="ann@home.example", date="2026-11-01", files={".mailmap": MAILMAP})
    for email, day in HISTORY:
        builder.commit(name=email.split("@")[0].title(), email=email, date=day)
    engine.track(str(builder.path), "web")
    return builder


def pairs_of(builder, *people: str) -> set:
    """git's (person, day) pairs (mailmap applied), restricted to these people by hand."""
    return {(e, d) for e, d in oracle_pairs(builder.path) if e.decode() in people}


def test_team_counts_only_its_peoples_days(engine, web):
    report = engine.report(parse_query(["web", "team:@backend"], TODAY), TODAY, teams=TEAMS)
    expected = pairs_of(web, "ann@corp.example", "bob@corp.example")
    # ann: 11-01, 11-02 (home address, mailmapped), 11-03; bob: 11-03, 11-05 -> 5 pairs
    assert report.totals.two_gad == 2 * len(expected) == 10 and report.totals.developers == 2


def test_several_teams_are_a_union(engine, web):
    report = engine.report(parse_query(["web", "team:@backend", "team:frontend"], TODAY), TODAY, teams=TEAMS)
    assert report.totals.two_gad == 2 * len(pairs_of(web, "ann@corp.example", "bob@corp.example", "cy@corp.example"))


def test_by_team_counts_a_person_in_both_rows_and_once_in_the_total(engine, web):
    report = engine.report(parse_query(["web", "by:team"], TODAY), TODAY, teams=TEAMS)
    rows = {r.key: (r.totals.two_gad, r.totals.developers, r.totals.commits) for r in report.rows}
    assert rows == {
        "@backend": (2 * len(pairs_of(web, "ann@corp.example", "bob@corp.example")), 2, 5),  # ann 3, bob 2
        "@frontend": (2 * len(pairs_of(web, "bob@corp.example", "cy@corp.example")), 2, 3),
        NO_TEAM: (2 * len(pairs_of(web, "dan@corp.example")), 1, 1),
    }
    assert report.totals.two_gad == 2 * len(oracle_pairs(web.path))  # bob once
    assert "A person in two groups counts in both rows and once in the total." in report.notes
    assert any(n.startswith("1 member matched no committer here: Zed (@newcomers).") for n in report.notes)


def test_by_team_leaves_out_members_with_no_day_in_the_period(engine, web):
    """ann is matched (backend) but has no day from 2026-11-04 on: backend is bob's alone there."""
    report = engine.report(parse_query(["web", "by:team", "since:2026-11-04"], TODAY), TODAY, teams=TEAMS)
    rows = {r.key: (r.totals.two_gad, r.totals.developers, r.totals.commits) for r in report.rows}

    def since(*people):
        return {(e, d) for e, d in oracle_pairs(web.path, since="2026-11-04") if e.decode() in people}

    assert rows == {"@backend": (2 * len(since("ann@corp.example", "bob@corp.example")), 1, 1),  # bob 11-05
                    "@frontend": (2 * len(since("bob@corp.example", "cy@corp.example")), 2, 2),  # cy 11-04, bob 11-05
                    NO_TEAM: (2 * len(since("dan@corp.example")), 1, 1)}
    assert rows["@backend"][0] == 2 and rows["@frontend"][0] == 4


def test_by_team_with_co_authors_counts_a_shared_commit_once_per_team(engine, tmp_path):
    """coauthors:on: ann's commit with cy as co-author is a day of each; backend (ann, bob) and frontend (bob, cy)
    each count it once among their commits, dan (in no team) alone. Worked out by hand:
      2026-11-02 ann, co-author cy   2026-11-03 bob, co-author ann   2026-11-04 dan
      backend: ann 11-02, 11-03; bob 11-03 -> 3 days, 2 developers, 2 commits
      frontend: bob 11-03; cy 11-02 -> 2 days, 2 developers, 2 commits; in no team: dan -> 1 day, 1, 1"""
    builder = RepoBuilder(tmp_path / "pairs")
    builder.commit(name="Ann", email="ann@corp.example", date="2026-11-02",
                   message="a change\n\nCo-authored-by: Cy <cy@corp.example>\n")
    builder.commit(name="Bob", email="bob@corp.example", date="2026-11-03",
                   message="a change\n\nCo-authored-by: Ann <ann@corp.example>\n")
    builder.commit(name="Dan", email="dan@corp.example", date="2026-11-04")
    engine.track(str(builder.path), "pairs")
    report = engine.report(parse_query(["pairs", "by:team", "coauthors:on"], TODAY), TODAY, teams=TEAMS)
    rows = {r.key: (r.totals.person_days, r.totals.developers, r.totals.commits) for r in report.rows}
    assert rows == {"@backend": (3, 2, 2), "@frontend": (2, 2, 2), NO_TEAM: (1, 1, 1)}
    assert report.totals.person_days == 5  # ann 2, bob 1, cy 1, dan 1


def test_the_unmatched_note_names_five_and_counts_the_rest():
    from bot.engine.teams import Matched, unmatched_note

    def member(n):
        return TeamMember(f"U{n}", (f"m{n}@corp.example",), f"M{n}")

    one = Team("S1", "one", tuple(member(n) for n in range(4)))
    two = Team("S2", "two", tuple(member(n) for n in range(4, 7)))
    matched = [Matched(one, frozenset(), one.members, ()), Matched(two, frozenset(), two.members, ())]
    assert unmatched_note(matched).startswith(
        "7 members matched no committer here: M0 (@one), M1 (@one), M2 (@one), M3 (@one), M4 (@two) and 2 more. ")
    assert unmatched_note([Matched(one, frozenset(), (), ())]) is None


def test_an_unknown_group_is_one_sentence_naming_the_groups(engine, web):
    with pytest.raises(QueryError) as wrong:
        engine.report(parse_query(["web", "team:@backnd"], TODAY), TODAY, teams=TEAMS)
    assert str(wrong.value) == "There is no user group `@backnd` in this workspace; did you mean `team:@backend`?"
    with pytest.raises(QueryError) as none:
        engine.report(parse_query(["web", "team:@newcomers"], TODAY), TODAY, teams=TEAMS)
    assert str(none.value).startswith("No member of `@newcomers` committed in these repositories")


def test_without_slack_a_team_question_says_what_it_needs(engine, web):
    with pytest.raises(QueryError) as refused:
        engine.report(parse_query(["web", "team:@backend"], TODAY), TODAY)
    assert "read Slack's user groups" in str(refused.value)


@pytest.mark.parametrize("word, kept", [("@backend", "backend"), ("Backend", "backend"), ("S0123", "S0123")])
def test_team_words_slack_sends(word, kept):
    assert parse_query(["web", f"team:{word}"], TODAY).teams == (kept,)


def test_a_team_word_that_is_no_group_name_is_refused():
    with pytest.raises(QueryError) as refused:
        parse_query(["web", "team:@<script>"], TODAY)
    assert "is not a Slack user group" in str(refused.value)


# -- through Slack and the CLI ----------------------------------------------------------------------------------


def test_team_and_by_team_through_slack(tmp_path):
    from tests.slackstub import SlackStub
    from tests.test_surfaces import Bot, read

    with SlackStub() as stub:
        for user, email in (("U0ANN", "ann@example.com"), ("U0BOB", "bob@example.com"), ("U0DI", "di@example.com")):
            stub.add_user(user, email=email, channels=["C123"])
        stub.add_usergroup("S0BACK", "backend", ["U0ANN", "U0DI"])
        bot = Bot(tmp_path, stub)  # web: ann and bob; api: ann and di (tests/test_surfaces.py)
        # Slack sends a picked group as <!subteam^S0BACK|@backend>, decoded to @backend
        ack, name = bot.slash("web api team:<!subteam^S0BACK|@backend> since:2026-11-23", user="U0BOB")
        answer = read(stub.wait_for_response(name, count=1, timeout=15)[-1])
        ann_di = {(e, d) for b in (bot.web, bot.api) for e, d in oracle_pairs(b.path)
                  if e in (b"ann@example.com", b"di@example.com") and d >= b"2026-11-23"}
        assert f"*2GAD {2 * len(ann_di)} person-days*" in answer and len(ann_di) == 4
        table = read(bot.ask("web by:team since:2026-11-23", user="U0BOB"))
        since = [(e, d) for e, d in oracle_pairs(bot.web.path) if d >= b"2026-11-23"]
        ann = len([1 for e, _ in since if e == b"ann@example.com"])  # 11-23, 11-24, 11-30
        bob = len([1 for e, _ in since if e == b"bob@example.com"])  # 11-24 (11-22 is before)
        assert (ann, bob) == (3, 1)
        assert f"`@backend` — 2GAD {2 * ann} · 1 developer · 4 commits" in table  # ann's 4 commits since 11-23
        assert f"`{NO_TEAM}` — 2GAD {2 * bob} · 1 developer · 1 commit" in table
        assert "1 member matched no committer here: User-U0Di (@backend)." in table  # di commits in api only


def test_slack_unable_to_list_groups_fails_only_team_questions(tmp_path):
    """usergroups.list answers an error: a question naming a team gets one sentence, one naming none its figure."""
    from tests.slackstub import SlackStub
    from tests.test_surfaces import Bot, read

    with SlackStub() as stub:
        stub.add_user("U0BOB", email="bob@example.com", channels=["C123"])
        stub.add_usergroup("S0BACK", "backend", ["U0BOB"])
        bot = Bot(tmp_path, stub)
        stub.fail_next("usergroups.list", error="internal_error", times=20)
        refused = read(bot.ask("web team:@backend", user="U0BOB"))
        assert refused == (":warning: Slack could not list the user groups just now (internal_error); try `team:` "
                           "again in a minute (a question naming no team works meanwhile).")
        answered = bot.ask("web since:2024-01 until:2024-01", user="U0BOB")
        assert answered["text"] == "web: 2GAD 4 person-days, 2024-01-01 to 2024-01-31"  # worked out in test_surfaces
        assert len(stub.calls_to("usergroups.list")) >= 1  # the team question did ask, and was told no


def test_the_cli_reads_the_same_groups_and_lists_them(tmp_path, web):
    from tests.faults import run_cli
    from tests.slackstub import SlackStub

    with SlackStub() as stub:
        stub.add_user("U0ANN", email="ann@corp.example", name="ann")
        stub.add_user("U0ZED", email="zed@corp.example", name="zed")
        stub.add_usergroup("S0BACK", "backend", ["U0ANN", "U0ZED"])
        env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url}
        data = tmp_path / "data"
        report = run_cli("report", "web", "team:@backend", "--json", data=data, **env)
        listed = run_cli("teams", data=data, **env)
        alias = run_cli("teams", "alias", "U0ZED", "zed@home.example", data=data, **env)
    import json

    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["active_days"] == len(pairs_of(web, "ann@corp.example")) == 3
    assert listed.returncode == 0, listed.stderr
    assert "@backend (2 members)" in listed.stdout
    assert "  Ann (U0ANN) <ann@corp.example>: matched: ann@corp.example" in listed.stdout
    assert "  Zed (U0ZED) <zed@corp.example>: unmatched: no commit by these addresses" in listed.stdout
    assert alias.stdout == "U0ZED commits as: zed@home.example\n"
    no_token = run_cli("report", "web", "team:@backend", data=data)
    assert no_token.returncode == 2 and "set SLACK_BOT_TOKEN" in no_token.stderr


def test_a_teams_weekly_digest_counts_its_people(tmp_path):
    """`/gad subscribe web team:@backend` through Slack, then the scheduler's run: the digest posted counts only the
    group's people (as Slack lists them when it is posted); figures from git by hand."""
    from datetime import timedelta

    from bot.digests import subscriptions as subs
    from bot.digests.digest import run_due_digests
    from bot.service.members import Members
    from bot.slackapi import web_client
    from tests.slackstub import SlackStub
    from tests.test_surfaces import NOW, Bot, read

    with SlackStub() as stub:
        stub.add_user("U0ANN", email="ann@example.com", channels=["C123"])
        stub.add_user("U0BOB", email="bob@example.com", channels=["C123"])
        stub.add_usergroup("S0BACK", "backend", ["U0ANN"])
        bot = Bot(tmp_path, stub)
        bot.web.commit(name="Bob", email="bob@example.com", date="2026-12-01")  # bob, of no group, in that week too
        bot.engine.sync(["web"])
        said = read(bot.ask("subscribe web team:@backend", user="U0BOB"))
        assert "counts only the people of `@backend`" in said
        assert subs.get(bot.engine.index, "C123").teams == ("backend",)
        wrong = read(bot.ask("subscribe web team:@frontend", user="U0BOB"))
        assert "There is no user group `@frontend` in this workspace" in wrong
        assert subs.get(bot.engine.index, "C123").teams == ("backend",)  # unchanged
        due = NOW + timedelta(days=5)  # the week of 2026-11-30 (Monday 09:00 in the subscriber's zone has come)
        results = run_due_digests(bot.engine, lambda: web_client(bot.settings), at=due, clock=lambda: due,
                                  sync=False, teams=Members(bot.settings, bot.engine.index, web_client(bot.settings)).teams)
        assert [r.state for r in results] == ["posted"], results
        posted = read(stub.calls_to("chat.postMessage")[-1].args)
    week = [(e, d) for e, d in oracle_pairs(bot.web.path) if b"2026-11-30" <= d <= b"2026-12-06"]
    ann = [p for p in week if p[0] == b"ann@example.com"]
    assert "Weekly 2GAD digest of @backend" in posted
    assert f"2GAD {2 * len(ann)} person-days" in posted and len(ann) == 1 and len(week) == 2  # bob's not counted


def test_the_home_tab_shows_the_persons_own_teams(tmp_path):
    from tests.slackstub import SlackStub
    from tests.test_surfaces import Bot, read

    with SlackStub() as stub:
        stub.add_user("U0ANN", email="ann@example.com", channels=["C123"])
        stub.add_user("U0BOB", email="bob@example.com", channels=["C123"])
        stub.add_usergroup("S0BACK", "backend", ["U0ANN"])
        stub.add_usergroup("S0FRONT", "frontend", ["U0BOB"])
        bot = Bot(tmp_path, stub)
        shown = read(bot.open_home("U0ANN"))
        bob = read(bot.open_home("U0BOB"))
    # the last full week before 2026-12-03 is 2026-W48 (11-23..11-29): ann in web 11-23 and 11-24 (api: none of hers)
    week = {(e, d) for b in (bot.web, bot.api) for e, d in oracle_pairs(b.path)
            if b"2026-11-23" <= d <= b"2026-11-29" and e == b"ann@example.com"}
    assert f"`@backend` · 2GAD {2 * len(week)} person-days in 2026-W48 · 1 developer" in shown and len(week) == 2
    assert "@frontend" not in shown and "`@frontend` · 2GAD 2 person-days in 2026-W48" in bob  # bob's 11-24


def test_compare_items_of_teams(engine, web):
    from bot.engine.query import parse_command

    command = parse_command("compare web@team:backend web@team:@frontend", TODAY)
    assert [i.label for i in command.items] == ["web@team:backend", "web@team:frontend"]
    rows = engine.compare(command, TODAY, teams=TEAMS).rows
    assert [(r.item, r.totals.two_gad) for r in rows] == [
        ("web@team:backend", 2 * len(pairs_of(web, "ann@corp.example", "bob@corp.example"))),
        ("web@team:frontend", 2 * len(pairs_of(web, "bob@corp.example", "cy@corp.example")))]
