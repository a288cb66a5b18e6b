"""bot/engine/query.py: every command form, every token, every mistake a person can make."""

from __future__ import annotations

import re
from datetime import date, time, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import GadError, QueryError
from bot.engine.periods import PERIOD_FORMS
from bot.engine.query import (BREAKDOWNS, EXAMPLES, Compare, GRAMMAR, WEEKDAYS, Help, ListProjects, ListRepos, ListSubscriptions,
                       PreviewDigest, ProjectAdd, ProjectRemove, Query, Scope, ShowReport, Subscribe, Sync, Track,
                       Unsubscribe, Untrack, is_source, parse_command, parse_query, straighten)

TODAY = date(2024, 6, 15)
TIME_EXAMPLES = "e.g. `time:09:00`, `time:9am` or `time:17h30`"


def parse(text: str):
    return parse_command(text, TODAY)


def report(**fields) -> ShowReport:
    fields.setdefault("repos", ("gst",))
    return ShowReport(Query(**fields))


def error(text: str) -> str:
    with pytest.raises(QueryError) as info:
        parse(text)
    message = str(info.value)
    assert message.strip() and len(message.splitlines()) == 1, repr(message)
    return message


# --- commands ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("", Help()),
    ("   ", Help()),
    ("\n\t ", Help()),
    ("help", Help()),
    ("HELP", Help()),
    ("help track", Help("track")),
    ("help Subscribe extra words", Help("subscribe")),
    ("-h", Help()),
    ("--help", Help()),
    ("?", Help()),
    ("repos", ListRepos()),
    ("Repos", ListRepos()),
    ("report gst", report()),
    ("report gst since:2024", report(since=date(2024, 1, 1))),
    ("REPORT help", report(repos=("help",))),  # after `report`, every word is a repository or token
    ("track https://github.com/o/n", Track("https://github.com/o/n")),
    ("track https://github.com/o/n as:mine", Track("https://github.com/o/n", "mine")),
    ("track https://github.com/o/n AS:owner/name", Track("https://github.com/o/n", "owner/name")),
    ("track git@github.com:o/n.git", Track("git@github.com:o/n.git")),
    ("track /srv/git/x.git as:x", Track("/srv/git/x.git", "x")),
    ("track anything-at-all", Track("anything-at-all")),  # the source is checked by bot/store/sources.py, not here
    ("untrack gst", Untrack("gst")),
    ("untrack owner/name", Untrack("owner/name")),
    ("sync", Sync(())),
    ("sync a b", Sync(("a", "b"))),
    ("sync a a", Sync(("a", "a"))),
    ("subscribe gst", Subscribe(("gst",))),
    ("subscribe a b a", Subscribe(("a", "b"))),
    ("subscribe gst day:mon time:09:00 tz:Europe/London people:on",
     Subscribe(("gst",), "mon", time(9, 0), "Europe/London", True)),
    ("subscribe gst DAY:Friday TIME:7:05 TZ:UTC PEOPLE:off", Subscribe(("gst",), "fri", time(7, 5), "UTC", False)),
    ("subscribe gst day:thurs", Subscribe(("gst",), "thu")),
    ("subscribe gst day:TUE", Subscribe(("gst",), "tue")),
    ("subscribe gst time:23:59", Subscribe(("gst",), at=time(23, 59))),
    ("subscribe gst time:0:00", Subscribe(("gst",), at=time(0, 0))),
    # times as people type them
    ("subscribe gst time:9am", Subscribe(("gst",), at=time(9, 0))),
    ("subscribe gst time:9", Subscribe(("gst",), at=time(9, 0))),  # a bare number is an hour
    ("subscribe gst time:17", Subscribe(("gst",), at=time(17, 0))),
    ("subscribe gst time:17h30", Subscribe(("gst",), at=time(17, 30))),
    ("subscribe gst time:17h", Subscribe(("gst",), at=time(17, 0))),
    ("subscribe gst time:5:30pm", Subscribe(("gst",), at=time(17, 30))),
    ("subscribe gst time:12pm", Subscribe(("gst",), at=time(12, 0))),
    ("subscribe gst time:12am", Subscribe(("gst",), at=time(0, 0))),
    ("subscribe gst time:0930", Subscribe(("gst",), at=time(9, 30))),
    ("subscribe gst time:9.30", Subscribe(("gst",), at=time(9, 30))),
    ("subscribe gst tz:America/Argentina/Buenos_Aires", Subscribe(("gst",), tz="America/Argentina/Buenos_Aires")),
    ("subscribe gst people:yes", Subscribe(("gst",), people=True)),
    ("subscribe gst people:FALSE", Subscribe(("gst",), people=False)),
    ("unsubscribe gst", Unsubscribe(("gst",))),
    ("unsubscribe all", Unsubscribe(("all",))),
    ("unsubscribe a b", Unsubscribe(("a", "b"))),
    ("subscriptions", ListSubscriptions(1)),
    ("subscriptions 1", ListSubscriptions(1)),
    ("subscriptions 12", ListSubscriptions(12)),
    ("digest", PreviewDigest()),
    ("projects", ListProjects()),
    ("project list", ListProjects()),
    ("project LIST", ListProjects()),
    ("project add web api ui", ProjectAdd("web", ("api", "ui"))),
    ("project ADD web api api ui", ProjectAdd("web", ("api", "ui"))),
    ("project add web owner/name", ProjectAdd("web", ("owner/name",))),
    ("project remove web", ProjectRemove("web")),
    ("project Remove web", ProjectRemove("web")),
])
def test_commands(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text, message", [
    ("report", "Name at least one repository, e.g. `gstreamer/gstreamer since:2024-01`; `/gad repos` lists them."),
    ("track", "Say what to track, e.g. `track https://github.com/owner/name`."),
    ("track https://github.com/o/n extra",
     "`extra` is not understood after the URL; to name the repository use `as:NAME`."),
    ("track https://github.com/o/n as:", "`as:` is not understood after the URL; to name the repository use `as:NAME`."),
    ("track https://github.com/o/n as:a as:b", "`as:` is given twice; keep one of `as:a` and `as:b`."),
    ("track https://github.com/o/n as:bad!name",
     "`bad!name` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("untrack", "Name one repository to untrack, e.g. `untrack myrepo`."),
    ("untrack a b", "Name one repository to untrack, e.g. `untrack myrepo`."),
    ("untrack -rf", "`-rf` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("sync a $b", "`$b` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("unsubscribe", "Name the repositories to unsubscribe from, or `all`, e.g. `unsubscribe myrepo`."),
    ("unsubscribe a;b", "`a;b` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("subscriptions 0", "`subscriptions` takes an optional page number, e.g. `subscriptions 2`."),
    ("subscriptions -1", "`subscriptions` takes an optional page number, e.g. `subscriptions 2`."),
    ("subscriptions two", "`subscriptions` takes an optional page number, e.g. `subscriptions 2`."),
    ("subscriptions 1 2", "`subscriptions` takes an optional page number, e.g. `subscriptions 2`."),
    ("subscriptions \u00b2", "`subscriptions` takes an optional page number, e.g. `subscriptions 2`."),  # superscript 2
    ("subscriptions " + "9" * 5000, "`subscriptions` takes an optional page number, e.g. `subscriptions 2`."),
    ("project", "Use `project add NAME REPO...`, `project remove NAME` or `projects`."),
    ("project add web", "Use `project add NAME REPO...`, `project remove NAME` or `projects`."),
    ("project remove", "Use `project add NAME REPO...`, `project remove NAME` or `projects`."),
    ("project remove a b", "Use `project add NAME REPO...`, `project remove NAME` or `projects`."),
    ("project list x", "Use `project add NAME REPO...`, `project remove NAME` or `projects`."),
    ("project rename a b", "Use `project add NAME REPO...`, `project remove NAME` or `projects`."),
    ("project add bad! a", "`bad!` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("project add web a b? ", "`b?` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
])
def test_command_errors(text, message):
    assert error(text) == message


# --- subscribe settings ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("subscribe", "Name the repositories to subscribe to, e.g. `/gad subscribe myrepo day:mon time:9am`."),
    ("subscribe day:mon", "Name the repositories to subscribe to, e.g. `/gad subscribe myrepo day:mon time:9am`."),
    ("subscribe gst day:funday", "`day:funday` is not a weekday; use one of "
     + ", ".join(f"`day:{d}`" for d in WEEKDAYS) + "."),
    ("subscribe gst day:mo", "`day:mo` is not a weekday; use one of `day:mon`, `day:tue`, `day:wed`, `day:thu`, "
     "`day:fri`, `day:sat`, `day:sun`."),
    ("subscribe gst day:monkey", "`day:monkey` is not a weekday; use one of `day:mon`, `day:tue`, `day:wed`, "
     "`day:thu`, `day:fri`, `day:sat`, `day:sun`."),
    ("subscribe gst day:", "`day:` is not a weekday; use one of `day:mon`, `day:tue`, `day:wed`, `day:thu`, "
     "`day:fri`, `day:sat`, `day:sun`."),
    ("subscribe gst time:24:00", "`time:24:00` is not a time of day; use " + TIME_EXAMPLES + "."),
    ("subscribe gst time:09:60", "`time:09:60` is not a time of day; use " + TIME_EXAMPLES + "."),
    ("subscribe gst time:mon", "`time:mon` is not a time of day; use " + TIME_EXAMPLES + "."),
    ("subscribe gst time:25", "`time:25` is not a time of day; use " + TIME_EXAMPLES + "."),
    ("subscribe gst time:2024-01-01", "`time:2024-01-01` is not a time of day; use " + TIME_EXAMPLES + "."),
    ("subscribe gst time:9:00:30", "`time:9:00:30` is not a time of day; use " + TIME_EXAMPLES + "."),
    ("subscribe gst dya:mon", "`dya:` is not a subscription setting; did you mean `day:`?"),
    ("subscribe gst time:", "`time:` is not a time of day; use " + TIME_EXAMPLES + "."),
    ("subscribe gst tz:Mars/Olympus_Mons",
     "`tz:Mars/Olympus_Mons` is not a time zone; use an IANA name such as `tz:Europe/London` or `tz:UTC`."),
    ("subscribe gst tz:../../etc/passwd",
     "`tz:../../etc/passwd` is not a time zone; use an IANA name such as `tz:Europe/London` or `tz:UTC`."),
    ("subscribe gst tz:", "`tz:` is not a time zone; use an IANA name such as `tz:Europe/London` or `tz:UTC`."),
    ("subscribe gst people:maybe", "`people:maybe` is not understood; use `people:on` or `people:off`."),
    ("subscribe gst weekly:yes", "`weekly:` is not a subscription setting; use `day:`, `time:`, `tz:`, `people:` or `team:`."),
    ("subscribe gst since:2024", "`since:` is not a subscription setting; use `day:`, `time:`, `tz:`, `people:` or `team:`."),
    ("subscribe gst day:mon day:tue", "`day:` is given twice; keep one of `day:mon` and `day:tue`."),
    ("subscribe gst time:09:00 time:10:00", "`time:` is given twice; keep one of `time:09:00` and `time:10:00`."),
    ("subscribe gst tz:UTC tz:UTC", "`tz:` is given twice; keep one of `tz:UTC` and `tz:UTC`."),
    ("subscribe gst people:on people:off", "`people:` is given twice; keep one of `people:on` and `people:off`."),
    ("subscribe bad!", "`bad!` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
])
def test_subscribe_errors(text, message):
    assert error(text) == message


# --- report tokens ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("gst", report()),
    ("gst gst", report()),
    ("web api web", report(repos=("web", "api"))),
    ("owner/name", report(repos=("owner/name",))),
    ("my_repo.v2-x", report(repos=("my_repo.v2-x",))),
    ("https://github.com/o/n", report(repos=("https://github.com/o/n",))),  # sources count as repositories
    ("git@github.com:o/n.git since:2024", report(repos=("git@github.com:o/n.git",), since=date(2024, 1, 1))),
    ("./checkout", report(repos=("./checkout",))),
    (".", report(repos=(".",))),
    # periods
    ("gst since:2024", report(since=date(2024, 1, 1))),
    ("gst until:2024", report(until=date(2024, 12, 31))),
    ("gst since:2024-03 until:2024-06", report(since=date(2024, 3, 1), until=date(2024, 6, 30))),
    ("gst until:2024-02", report(until=date(2024, 2, 29))),
    ("gst since:2024-02-29 until:2024-02-29", report(since=date(2024, 2, 29), until=date(2024, 2, 29))),
    ("gst since:2024-Q2", report(since=date(2024, 4, 1))),
    ("gst until:2024-q2", report(until=date(2024, 6, 30))),
    ("gst since:30d", report(since=TODAY - timedelta(days=29))),
    ("gst since:12w", report(since=TODAY - timedelta(weeks=12) + timedelta(days=1))),
    ("gst since:6m", report(since=date(2023, 12, 16))),
    ("gst since:1y", report(since=date(2023, 6, 16))),
    ("gst until:30d", report(until=TODAY - timedelta(days=30))),
    ("gst since:1y until:30d", report(since=date(2023, 6, 16), until=date(2024, 5, 16))),
    ("gst SINCE:2024 Until:2024", report(since=date(2024, 1, 1), until=date(2024, 12, 31))),
    # scope
    ("gst branch:main", report(scope=Scope("branch", "main"))),
    ("gst branch:release/1.24", report(scope=Scope("branch", "release/1.24"))),
    ("gst branch:HEAD", report(scope=Scope("branch", "HEAD"))),
    ("gst branch:head", report(scope=Scope("branch", "HEAD"))),
    ("gst refs:all", report(scope=Scope("all"))),
    ("gst REFS:ALL", report(scope=Scope("all"))),
    # people and paths
    ("gst author:*@Example.COM", report(authors=("*@example.com",))),
    ("gst author:a@x.org author:b@y.org", report(authors=("a@x.org", "b@y.org"))),
    ("gst path:src/net/", report(paths=("src/net",))),
    ("gst path:/src/net", report(paths=("src/net",))),
    ("gst path:src path:docs", report(paths=("src", "docs"))),
    ("gst path:!docs", report(exclude_paths=("docs",))),
    ("gst path:!docs/ path:!!po", report(exclude_paths=("docs", "po"))),
    ("gst path:src path:!src/tests", report(paths=("src",), exclude_paths=("src/tests",))),
    ('gst "path:My Docs"', report(paths=("My Docs",))),
    # breakdowns and switches
    *[(f"gst by:{b}", report(by=b)) for b in BREAKDOWNS],
    ("gst by:Month", report(by="month")),
    ("gst mailmap:off", report(mailmap=False)),
    ("gst mailmap:on", report(mailmap=True)),
    ("gst mailmap:NO", report(mailmap=False)),
    ("gst bots:on", report(bots=True)),
    ("gst bots:yes", report(bots=True)),
    ("gst bots:false", report(bots=False)),
    ("gst vs:cocomo", report(vs_cocomo=True)),
    ("gst vs:COCOMO", report(vs_cocomo=True)),
    ("gst format:csv", report(format="csv")),
    ("gst format:CSV", report(format="csv")),
    ("gst public", report(public=True)),
    ("gst PUBLIC", report(public=True)),
    ("gst public public", report(public=True)),
    # tokens before repositories, everything at once
    ("since:2024 by:year gst", report(since=date(2024, 1, 1), by="year")),
    ("web api since:2024-Q1 until:2024-Q2 by:person branch:HEAD author:*@gnome.org path:src path:!po "
     "mailmap:off bots:on vs:cocomo format:csv public",
     report(repos=("web", "api"), since=date(2024, 1, 1), until=date(2024, 6, 30), by="person",
            scope=Scope("branch", "HEAD"), authors=("*@gnome.org",), paths=("src",), exclude_paths=("po",),
            mailmap=False, bots=True, vs_cocomo=True, format="csv", public=True)),
])
def test_report_tokens(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("text, expected", [
    # Slack's smart punctuation is straightened before parsing
    ("gst author:\u201c*@example.com\u201d", report(authors=("*@example.com",))),
    ("gst author:\u2018*@example.com\u2019", report(authors=("*@example.com",))),
    ("gst \u201cpath:My Docs\u201d", report(paths=("My Docs",))),
    ("gst \u201epath:My Docs\u201f", report(paths=("My Docs",))),
    ("gst since:2024\u201301", report(since=date(2024, 1, 1))),  # en dash
    ("gst since:2024\u201401", report(since=date(2024, 1, 1))),  # em dash
    ("gst\u00a0since:2024", report(since=date(2024, 1, 1))),  # no-break space separates words
    ("track https://github.com/o/n as:\u2018mine\u2019", Track("https://github.com/o/n", "mine")),
])
def test_curly_quotes_and_dashes(text, expected):
    assert parse(text) == expected


def test_straighten():
    assert straighten("\u2018a\u2019 \u201cb\u201d \u201ac\u201b \u201ed\u201f 1\u20132\u20143\u00a0x") == \
        "'a' \"b\" 'c' \"d\" 1-2-3 x"
    assert straighten("plain 'text' \"here\"") == "plain 'text' \"here\""


ONE_OF_KEYS = ("`since:`, `until:`, `branch:`, `refs:`, `range:`, `author:`, `org:`, `team:`, `path:`, `by:`, `tags:`, "
               "`prereleases:`, `releases:`, `mailmap:`, `bots:`, `top:`, `coauthors:`, `vs:`, `fte:`, `calibrated:`, "
               "`cocomo:`, `format:` (`/gad help` has examples).")
NOT_A_PERIOD = f"is not a period; use {PERIOD_FORMS}."


@pytest.mark.parametrize("text, message", [
    # unknown tokens
    ("gst foo:bar", "`foo:` is not a token gad-bot knows; use one of " + ONE_OF_KEYS),
    ("gst day:mon", "`day:` is not a token gad-bot knows; use one of " + ONE_OF_KEYS),
    ("gst :x", "`:` is not a token gad-bot knows; use one of " + ONE_OF_KEYS),
    ("gst as:x", "`as:` is not a token gad-bot knows; did you mean `tags:`, as in `tags:v*`?"),  # the nearest key
    # empty values
    ("gst since:", "`since:` needs a value, e.g. `since:2024-01`."),
    ("gst until:", "`until:` needs a value, e.g. `until:2024-06`."),
    ("gst branch:", "`branch:` needs a value, e.g. `branch:main`."),
    ("gst refs:", "`refs:` needs a value, e.g. `refs:all`."),
    ("gst author:", "`author:` needs a value, e.g. `author:*@example.com`."),
    ("gst path:", "`path:` needs a value, e.g. `path:src/net`."),
    ("gst by:", "`by:` needs a value, e.g. `by:month`."),
    ("gst mailmap:", "`mailmap:` needs a value, e.g. `mailmap:off`."),
    ("gst bots:", "`bots:` needs a value, e.g. `bots:on`."),
    ("gst vs:", "`vs:` needs a value, e.g. `vs:cocomo`."),
    ("gst format:", "`format:` needs a value, e.g. `format:csv`."),
    # bad periods
    ("gst since:2024-13", "`since:2024-13` " + NOT_A_PERIOD),
    ("gst until:2024-13", "`until:2024-13` " + NOT_A_PERIOD),
    ("gst since:2024-00", "`since:2024-00` " + NOT_A_PERIOD),
    ("gst since:2023-02-29", "`since:2023-02-29` " + NOT_A_PERIOD),
    ("gst since:2024-1", "`since:2024-1` " + NOT_A_PERIOD),
    ("gst since:2024-Q5", "`since:2024-Q5` " + NOT_A_PERIOD),
    ("gst since:0d", "`since:0d` " + NOT_A_PERIOD),
    ("gst since:yesterday", "`since:yesterday` " + NOT_A_PERIOD),
    ("gst since:2025y", "`since:2025y` " + NOT_A_PERIOD),  # reaches before the year 1
    ("gst until:9999y", "`until:9999y` " + NOT_A_PERIOD),
    ("gst since:0000-Q1", "`since:0000-Q1` " + NOT_A_PERIOD),
    # since after until
    ("gst since:2024-06 until:2024-01",
     "`since:2024-06` starts after `until:2024-01` ends; swap them or widen the period."),
    ("gst since:2024-06-02 until:2024-06-01",
     "`since:2024-06-02` starts after `until:2024-06-01` ends; swap them or widen the period."),
    ("gst since:30d until:30d", "`since:30d` starts after `until:30d` ends; swap them or widen the period."),
    # duplicates
    ("gst since:2024 since:2023", "`since:` is given twice; keep one of `since:2024` and `since:2023`."),
    ("gst until:2024 UNTIL:2024", "`until:` is given twice; keep one of `until:2024` and `until:2024`."),
    ("gst by:week by:month", "`by:` is given twice; keep one of `by:week` and `by:month`."),
    ("gst mailmap:on mailmap:off", "`mailmap:` is given twice; keep one of `mailmap:on` and `mailmap:off`."),
    ("gst bots:on bots:off", "`bots:` is given twice; keep one of `bots:on` and `bots:off`."),
    ("gst vs:cocomo vs:cocomo", "`vs:` is given twice; keep one of `vs:cocomo` and `vs:cocomo`."),
    ("gst format:csv format:csv", "`format:` is given twice; keep one of `format:csv` and `format:csv`."),
    ("gst branch:main refs:all",
     "Give one scope: `branch:main` and `refs:all` disagree; use `branch:NAME` or `refs:all`, not both."),
    ("gst branch:a branch:b",
     "Give one scope: `branch:a` and `branch:b` disagree; use `branch:NAME` or `refs:all`, not both."),
    # bad values
    ("gst refs:heads", "`refs:heads` is not understood; use `refs:all` (every ref) or `branch:NAME` (one branch)."),
    ("gst branch:-x", "`branch:-x` is not a branch name; use e.g. `branch:main` or `branch:HEAD`."),
    ("gst branch:a..b", "`branch:a..b` is not a branch name; use e.g. `branch:main` or `branch:HEAD`."),
    ("gst branch:main~1", "`branch:main~1` is not a branch name; use e.g. `branch:main` or `branch:HEAD`."),
    ("gst branch:main^", "`branch:main^` is not a branch name; use e.g. `branch:main` or `branch:HEAD`."),
    ("gst branch:a:b", "`branch:a:b` is not a branch name; use e.g. `branch:main` or `branch:HEAD`."),
    ("gst branch:*", "`branch:*` is not a branch name; use e.g. `branch:main` or `branch:HEAD`."),
    ('gst "branch:a b"', "`branch:a b` is not a branch name; use e.g. `branch:main` or `branch:HEAD`."),
    ("gst by:day", "`by:day` is not a breakdown; use one of `by:week`, `by:month`, `by:quarter`, `by:year`, "
     "`by:person`, `by:repo`, `by:org`, `by:team`, `by:release`."),
    ("gst mailmap:maybe", "`mailmap:maybe` is not understood; use `mailmap:on` or `mailmap:off`."),
    ("gst bots:2", "`bots:2` is not understood; use `bots:on` or `bots:off`."),
    ("gst vs:fpa", "`vs:fpa` is not a model gad-bot compares with; use `vs:cocomo` or `vs:fte`."),
    ("gst format:xlsx", "`format:xlsx` is not a format gad-bot writes; use `format:csv`."),
    ("gst path:/", "`path:/` is not a path inside the repository; use e.g. `path:src/net`."),
    # near misses: the nearest token or value
    ("gst sinse:2024", "`sinse:` is not a token gad-bot knows; did you mean `since:`, as in `since:2024-01`?"),
    ("gst Untill:2024", "`untill:` is not a token gad-bot knows; did you mean `until:`, as in `until:2024-06`?"),
    ("gst auther:x@y", "`auther:` is not a token gad-bot knows; did you mean `author:`, as in `author:*@example.com`?"),
    ("gst by:mnth", "`by:mnth` is not a breakdown; did you mean `by:month`?"),
    ("gst by:people", "`by:people` is not a breakdown; did you mean `by:person`?"),
    ("gst path:!", "`path:!` is not a path inside the repository; use e.g. `path:src/net`."),
    ("gst path:../etc", "`path:../etc` is not a path inside the repository; use e.g. `path:src/net`."),
    ("gst path:src/../..", "`path:src/../..` is not a path inside the repository; use e.g. `path:src/net`."),
    # repositories
    ("since:2024", "Name at least one repository, e.g. `gstreamer/gstreamer since:2024-01`; `/gad repos` lists them."),
    ("public", "Name at least one repository, e.g. `gstreamer/gstreamer since:2024-01`; `/gad repos` lists them."),
    ("gst;rm", "`gst;rm` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("-x", "`-x` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("_ok .hidden", "`.hidden` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    ("\U0001f600", "`\U0001f600` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),
    # text that cannot be split
    ('gst "since:2024', "A quote is not closed; close it or leave the quotes out."),
    ("gst 'path:x", "A quote is not closed; close it or leave the quotes out."),
    ("gst \u201cpath:x", "A quote is not closed; close it or leave the quotes out."),  # a lone curly quote
    ("gst \\", "`\\` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`."),  # no escape
    ("gst\x00", "The command contains a NUL character; type it again without it."),
    ('gst "a\nb"', "The command contains a line break, tab or invisible character inside a word; "
     "type it again on one line without it."),
    ('"gst\n"', "The command contains a line break, tab or invisible character inside a word; "
     "type it again on one line without it."),
    ("gst since:2024\u2028", "The command contains a line break, tab or invisible character inside a word; "
     "type it again on one line without it."),
    ("gst\x0bsince:2024", "The command contains a line break, tab or invisible character inside a word; "
     "type it again on one line without it."),
    ("gst\u200b", "The command contains a line break, tab or invisible character inside a word; "
     "type it again on one line without it."),
])
def test_report_errors(text, message):
    assert error(text) == message


def test_parse_query_directly():
    assert parse_query(["gst", "by:year"], TODAY) == Query(repos=("gst",), by="year")
    with pytest.raises(QueryError):
        parse_query([], TODAY)


def test_query_error_is_a_gad_error():
    with pytest.raises(GadError):
        parse("gst by:day")


@pytest.mark.parametrize("word, expected", [
    ("https://github.com/o/n", True),
    ("http://x/y", True),
    ("ssh://git@h/x", True),
    ("git://h/x", True),
    ("file:///srv/x", True),
    ("/srv/x", True),
    ("./x", True),
    ("../x", True),
    ("~/x", True),
    (".", True),
    ("..", True),
    ("git@github.com:o/n", True),
    ("gst", False),
    ("owner/name", False),
    ("since:2024", False),
    ("a@b", False),
])
def test_is_source(word, expected):
    assert is_source(word) is expected


# --- words for footnotes ---------------------------------------------------------------------------

@pytest.mark.parametrize("scope, words, token", [
    (Scope(), "all branches and tags", "default"),
    (Scope("branch", "HEAD"), "the default branch", "branch:HEAD"),
    (Scope("branch", "main"), "branch `main`", "branch:main"),
    (Scope("all"), "every ref", "refs:all"),
])
def test_scope_words(scope, words, token):
    assert scope.words() == words
    assert scope.token() == token


@pytest.mark.parametrize("text, words", [
    ("gst", "all branches and tags, author dates, mailmap applied, bots left out"),
    ("gst mailmap:off bots:on refs:all", "every ref, author dates, mailmap off, bots kept"),
    ("gst branch:HEAD author:a@x author:*@y path:src path:lib path:!docs",
     "the default branch, author dates, mailmap applied, bots left out, authors `a@x` or `*@y`, "
     "paths `src`, `lib`, excluding `docs`"),
])
def test_query_words(text, words):
    assert parse(text).query.words() == words


def test_grammar_mentions_every_token_and_command():
    for key in ("since:", "until:", "branch:", "refs:all", "author:", "path:", "by:", "mailmap:off", "bots:on",
                "vs:cocomo", "format:csv", "public", *BREAKDOWNS):
        assert key in GRAMMAR, key
    for command in ("help", "repos", "track URL", "untrack", "sync", "subscribe", "unsubscribe", "subscriptions",
                    "digest", "project add", "project remove", "projects"):
        assert command in GRAMMAR, command
    assert PERIOD_FORMS in GRAMMAR


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_parse(example):
    assert isinstance(parse(example), (ShowReport, Subscribe, Compare))


def test_today_is_injected():
    assert parse_command("gst since:1d", date(2020, 2, 29)) == report(since=date(2020, 2, 29))
    assert parse_command("gst until:1y", date(2020, 2, 29)) == report(until=date(2019, 2, 28))


# --- property: anything typed gives a Command or a one-line QueryError ---------------------------

COMMAND_TYPES = (Help, ListRepos, ShowReport, Track, Untrack, Sync, Subscribe, Unsubscribe, ListSubscriptions,
                 PreviewDigest, ProjectAdd, ProjectRemove, ListProjects)

HEADS = st.sampled_from(["", "help", "repos", "report", "track", "untrack", "sync", "subscribe", "unsubscribe",
                         "subscriptions", "digest", "projects", "project", "project add", "project remove", "gst"])
KEYS = st.sampled_from(["since", "until", "branch", "refs", "author", "path", "by", "mailmap", "bots", "vs", "format",
                        "day", "time", "tz", "people", "as", "public", "SINCE", "x", ""])
VALUES = st.one_of(
    st.sampled_from(["2024", "2024-13", "2024-02-29", "2023-02-29", "2024-Q2", "30d", "0d", "9999y", "2025y", "9999",
                     "9999-12", "0000-Q1", "all", "HEAD", "main", "-x", "a..b", "on", "off", "maybe", "cocomo", "csv",
                     "month", "!docs", "../x", "/", "!", "mon", "monkey", "09:00", "24:00", "Europe/London",
                     "../../etc/passwd", "\u00b2", "\u0663\u0660d", "\U0001f600", "\u202eevil", "\u05e9\u05dc\u05d5\u05dd",
                     "\x00", "\n", "\u2028", "\x85", "\x1c", "\ud800", "'", '"', "\u201c", "\\", "9" * 5000]),
    st.text(max_size=12),
)
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u3000", "\u2028", " '", "' ", ' "', '" ', "\u201c",
                              "\u201d"])


@st.composite
def commands(draw) -> str:
    """Text built from the grammar's own pieces, glued with hostile separators."""
    parts = [draw(HEADS)]
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            parts.append(draw(KEYS) + ":" + draw(VALUES))
        else:
            parts.append(draw(st.sampled_from(["gst", "owner/name", "https://github.com/o/n", "all", "1", "web"]))
                         if draw(st.booleans()) else draw(VALUES))
    return "".join(part + draw(SEPARATORS) for part in parts)


HUGE = st.sampled_from(["x" * 10_000, "gst " + "since:2024 " * 1000, "\U0001f600" * 10_000, "\u202e" * 10_000,
                        "\u05e9" * 10_000, "'" * 9_999, "a:" * 5_000, "\x00" * 10_000, "project add " + "a " * 4_990])


def check(text: str) -> None:
    try:
        command = parse_command(text, TODAY)
    except QueryError as e:
        message = str(e)
        assert message.strip(), repr(text)
        assert len(message.splitlines()) == 1, repr(message)
    else:
        assert isinstance(command, COMMAND_TYPES)
        if isinstance(command, ShowReport):
            query = command.query
            assert query.repos
            assert all(re.fullmatch(r"[\w][\w.\-/]*", r) or is_source(r) for r in query.repos)
            assert query.since is None or query.until is None or query.since <= query.until
            assert query.by is None or query.by in BREAKDOWNS


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(st.text(), st.text(alphabet=st.characters(codec="utf-8"), max_size=200), commands(), HUGE))
def test_property_any_text_parses_or_raises_one_line_query_error(text):
    check(text)


@pytest.mark.parametrize("text", [
    "\x00", "gst\x00since:2024", "\U0001f600", "gst \U0001f600", "\u202egst", "\u05e9\u05dc\u05d5\u05dd since:2024",
    "x" * 10_000, "gst " * 2_500, "since:" * 2_000, "\ufeffgst", "gst\r\nsince:2024", "gst \x85 x",
])
def test_hostile_text(text):
    check(text)
