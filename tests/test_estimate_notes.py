"""Notes that say when a figure may mislead, and the wording fixes of issue 33 part 4.

The history (repository `site`, default branch main; every figure below from git or worked out by hand):

    main:  Ann Lee <ann@work.example>  2024-01-02, 01-03, 01-04, 01-05
           Ann Lee <ann@home.example>  2024-01-04 (the same day as her work address), 01-08
           Bob Marsh <bob@example.com> 2024-01-02, 01-09 (src/x/a.c), 01-10 23:30 at UTC-5 (UTC says 01-11), with
                                       a `Co-authored-by: Eve Park <eve@example.com>` trailer
           Cy <cy@example.com>         2024-01-03, 01-04, 01-05 (three people with 3 active days: a tie)
           Dee <dee@example.com>       2024-01-03, 01-04, 01-05
    docs:  Documentation Generation <docs@example.com> 2024-02-01 .. 2024-02-05 (5 days), a branch off main

    GAD (default scope) = Ann 5 (01-02, 03, 04, 05 at work; 04, 08 at home: 6 pairs as two people) ...
    worked out per test below.
"""

from __future__ import annotations

import subprocess

import pytest

from bot.config import Settings
from bot.engine.audiences import Viewer
from bot.engine.engine import Engine
from bot.engine.query import parse_command
from bot.render.blocks import blocks_to_text, report_blocks
from bot.render.text import render_text
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, git_env
from tests.test_cli import run
from tests.test_estimation import figures, git_records


def build_site(path) -> RepoBuilder:
    b = RepoBuilder(path)
    for day in ("2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"):
        b.commit(name="Ann Lee", email="ann@work.example", date=day)
    b.commit(name="Ann Lee", email="ann@home.example", date="2024-01-04T20:00")
    b.commit(name="Ann Lee", email="ann@home.example", date="2024-01-08")
    b.commit(name="Bob Marsh", email="bob@example.com", date="2024-01-02T15:00")
    b.commit(name="Bob Marsh", email="bob@example.com", date="2024-01-09", files={"src/x/a.c": "a"})
    for name in ("Cy", "Dee"):
        for day in ("2024-01-03", "2024-01-04", "2024-01-05"):
            b.commit(name=name, email=f"{name.lower()}@example.com", date=day + "T16:00")
    b.commit(name="Bob Marsh", email="bob@example.com", date="2024-01-10T23:30", offset=-300,
             message="Pair on the parser\n\nCo-authored-by: Eve Park <eve@example.com>\n")
    b.branch("docs", b.tip("main"))
    for n in range(1, 6):
        b.commit("docs", name="Documentation Generation", email="docs@example.com", date=f"2024-02-0{n}")
    return b


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("notes") / "site")


def open_engine(data, **env) -> Engine:
    return Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data), **env}))


@pytest.fixture(scope="module")
def engine(site, tmp_path_factory):
    engine = open_engine(tmp_path_factory.mktemp("notes-data"))
    engine.track(str(site.path), "site")
    return engine


def ask(engine: Engine, text: str, viewer: Viewer | None = None):
    query = parse_command(text, TODAY).query
    return engine.report(query, TODAY) if viewer is None else engine.report(query, TODAY, viewer)


def notes_of(report) -> str:
    return " ".join(" ".join(report.notes).split())


ALL = ("--branches", "--tags")


def test_the_history_as_git_counts_it(site):
    # Ann 6 pairs (two addresses), Bob 3 (01-02, 01-09, 01-10), Cy 3, Dee 3, docs 5 = 20 active days
    assert figures(git_records(site, *ALL)) == (20, 6, 20)


def test_a_tool_like_account_with_a_large_share_is_named_with_how_to_leave_it_out(engine, site, tmp_path):
    report = ask(engine, "site")
    # 5 of 20 active days: 25.0 %
    assert ("`Documentation Generation` (docs@example.com) holds 25.0 % of the active days and is named like a tool, "
            "not a person; if it is one, the operator leaves it out with a bots pattern "
            "(GAD_BOT_PATTERNS=docs@example.com; bots:on counts it again).") in notes_of(report)
    left_out = open_engine(tmp_path / "data", GAD_BOT_PATTERNS="docs@example.com")
    left_out.track(str(site.path), "site")
    kept = [r for r in git_records(site, *ALL) if r[0] != "docs@example.com"]
    report = ask(left_out, "site")
    assert report.totals.person_days == figures(kept)[0] == 15
    assert "named like a tool" not in notes_of(report)


def test_a_large_share_from_outside_the_default_branch_is_said(engine, site):
    report = ask(engine, "site")
    head = figures(git_records(site, "HEAD"))[0]  # 15: the docs branch's 5 days are not on main
    assert ("25.0 % of the active days (5) come only from commits outside the default branch (other branches and "
            f"tags, which the default scope counts); branch:HEAD counts {2 * head} person-days.") in notes_of(report)
    assert "outside the default branch" not in notes_of(ask(engine, "site branch:HEAD"))
    assert "outside the default branch" not in notes_of(ask(engine, "site until:2024-01-31"))  # none in January


def test_one_name_under_several_e_mails_gets_the_mailmap_line_that_joins_them(engine, site, tmp_path):
    report = ask(engine, "site")
    line = "Ann Lee <ann@work.example> <ann@home.example>"  # the busier address first
    assert (f"`Ann Lee` commits as ann@work.example, ann@home.example: the mailmap line `{line}` joins them "
            "(2 person-days counted twice)") in notes_of(report)
    assert "Joined, the figure would lose up to 2 person-days." in notes_of(report)
    # what git says with that line: one person-day less (01-04), so 2 person-days
    mailmap = tmp_path / "mailmap"
    mailmap.write_text(line + "\n")
    out = subprocess.run(["git", "-c", f"mailmap.file={mailmap}", "log", "--use-mailmap", *ALL,
                          "--format=%aE %ad", "--date=short"], cwd=site.path, env=git_env(), check=True,
                         capture_output=True, text=True).stdout
    joined = len({tuple(l.lower().split()) for l in out.splitlines()})
    assert report.totals.person_days - joined == 1


def test_person_level_notes_go_only_to_who_may_read_people(site, tmp_path):
    engine = open_engine(tmp_path / "data", GAD_PERSON_DETAIL="admins")
    engine.track(str(site.path), "site")
    member = Viewer("U1", member=True)
    text = notes_of(ask(engine, "site", member))
    assert "@" not in text  # no e-mail of anyone
    assert "An account named like a tool, not a person, holds 25.0 % of the active days; an admin can see which" in text
    assert "1 name commits under several e-mails and counts as several people" in text
    assert "docs@example.com" in notes_of(ask(engine, "site", Viewer("U9", admin=True, member=True)))


def test_top_n_inside_a_tie_is_flagged(engine, site):
    # by:person: docs 5, Ann (work) 4, Bob 3, Cy 3, Dee 3, Ann (home) 2: top:3 keeps one of three people with 3
    report = ask(engine, "site by:person top:3")
    assert [r.totals.person_days for r in report.rows] == [5, 4, 3]
    assert ("top:3 cuts through a tie: 3 people have 3 active days, and 2 of them are left out only by the order's "
            "tie-break (most commits, then name); top:5 shows them all.") in notes_of(report)
    assert "cuts through a tie" not in notes_of(ask(engine, "site by:person top:5"))


def test_slack_top_over_25_rows_says_where_the_rest_are(engine):
    from dataclasses import replace

    from bot.metric import Row, Totals

    report = ask(engine, "site by:person top:3")
    many = tuple(Row(f"dev{i:02}@example.com", Totals(30 - i, 1, 30 - i)) for i in range(30))
    _, blocks = report_blocks(replace(report, rows=many, more_rows=12, notes=()), "site by:person top:30")
    shown = blocks_to_text(blocks)
    assert "Top 30 contributors by active days (the first 25 here; `format:csv` lists all 30)" in shown
    assert ("… and 5 more of the top 30 (use `format:csv` for all), and 12 more people (top:30 shows the first 30)"
            in shown)


def test_widening_switches_are_not_said_with_only(engine):
    report = ask(engine, "site refs:all bots:on path:src")
    assert report_head(report).endswith("only path:src, with refs:all and bots:on")


def report_head(report) -> str:
    return " ".join(render_text(report, width=200).split("\n\n")[0].split())


def test_range_to_b_says_what_git_log_b_lists(engine):
    text = " ".join(render_text(ask(engine, "site range:..main")).split())
    assert "range ..main (what git log main lists)" in text and "git log ..main" not in text


@pytest.mark.parametrize("typed", ["path:./src/x", "path:src\\x", "path:src/x/", "path:.\\src\\x"])
def test_paths_as_shells_write_them_are_the_repositorys(engine, site, typed):
    report = ask(engine, f"site {typed}")
    assert report.paths == ("src/x",)
    assert report.totals.person_days == figures(git_records(site, *ALL, paths=("src/x",), no_merges=True))[0] == 1


def test_coauthors_on_an_until_day(engine, site):
    # Bob's commit of 2024-01-10 23:30 at UTC-5 is his 01-10 (UTC: 01-11): Eve co-authored it on that day
    until = ask(engine, "site coauthors:on until:2024-01-10")
    without = ask(engine, "site until:2024-01-10")
    assert until.totals.person_days == figures(git_records(site, *ALL), until="2024-01-10")[0] + 1 == 16
    assert until.totals.developers == without.totals.developers + 1  # Eve
    before = ask(engine, "site coauthors:on until:2024-01-09")
    assert before.totals.person_days == figures(git_records(site, *ALL), until="2024-01-09")[0] == 14


@pytest.fixture
def from_url(site, tmp_path):
    """`site` as if it had been tracked from a forge's URL (its source rewritten in the index)."""
    engine = open_engine(tmp_path / "data")
    engine.track(str(site.path), "site")
    with engine.index.transaction() as db:
        db.execute("UPDATE repos SET source = ? WHERE name = 'site'", ("https://git.example.org/team/site.git",))
    return engine


@pytest.mark.parametrize("form", ["https://git.example.org/team/site", "https://git.example.org/team/site/",
                                  "https://git.example.org/team/site/tree/main/src",
                                  "http://www.Git.Example.org/Team/Site.git", "git@git.example.org:team/site.git"])
def test_the_url_of_a_tracked_repository_names_it(from_url, form):
    report = ask(from_url, f"{form} since:2024")
    assert report.repos == ("site",) and report.totals.person_days == 20
    assert from_url.find_by_source(form).name == "site"


@pytest.mark.parametrize("other", ["https://git.example.org/team/site-two", "https://git.example.org/team/site/sub/x",
                                   "https://other.example.org/team/site"])
def test_another_url_is_not_the_tracked_one(from_url, other):
    assert from_url.find_by_source(other) is None


def test_a_report_on_the_url_names_the_tracked_one_and_fetches_nothing(tmp_path, site):
    data = tmp_path / "data"
    assert run("track", str(site.path), "--name", "site", data=data).returncode == 0
    again = run("report", str(site.path) + "/", data=data)
    assert again.returncode == 0, again.stderr
    assert "now tracking" not in again.stderr and again.stdout.startswith("site: 2GAD")


def test_orgs_csv_carries_the_period_and_filters_and_its_table_fits_80_columns(tmp_path, site):
    import csv
    import io

    data = tmp_path / "data"
    assert run("track", str(site.path), "--name", "site", data=data).returncode == 0
    done = run("orgs", "site", "since:2024-01", "until:2024-01", "bots:on", "--csv", data=data)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert {(r["repositories_asked"], r["since"], r["until"], r["scope"], r["filters"]) for r in rows} == {
        ("site", "2024-01-01", "2024-01-31", "default", "bots:on")}
    # January by git: example.com (Bob, Cy, Dee: 3 + 3 + 3 active days), work.example 4, home.example 2
    by_domain = {r["domain"]: int(r["active_days"]) for r in rows}
    assert by_domain == {"example.com": 9, "work.example": 4, "home.example": 2}
    text = run("orgs", "site", data=data).stdout
    assert max(map(len, text.splitlines())) <= 80
    report = run("report", "site", "by:org", data=data).stdout
    assert max(map(len, report.splitlines())) <= 80
