"""The command line as people type it: a query quoted whole, options in the shell's habit (`--since 2024`),
two formats at once, and projects made from the shell. Expected figures are worked out by hand below."""

from __future__ import annotations

import json
import shutil
from datetime import date

import pytest

from bot.engine.query import parse_query, query_words
from bot.errors import QueryError
from tests.gitbuild import RepoBuilder
from tests.test_cli import run

TODAY = date(2026, 12, 4)


@pytest.fixture(scope="module")
def tracked_once(tmp_path_factory):
    """web: Ann 2024-01-02, Bob 2024-01-02, Ann 2024-02-05, Cy 2024-03-01; api: Ann 2024-01-02, Di 2024-02-10;
    both tracked in place through the CLI, once for the module."""
    tmp_path = tmp_path_factory.mktemp("cli-forms")
    web = RepoBuilder(tmp_path / "web")
    web.commit(name="Ann", email="ann@example.com", date="2024-01-02T10:00")
    web.commit(name="Bob", email="bob@example.com", date="2024-01-02T11:00")
    web.commit(name="Ann", email="ann@example.com", date="2024-02-05T10:00")
    web.commit(name="Cy", email="cy@example.com", date="2024-03-01T10:00")
    api = RepoBuilder(tmp_path / "api")
    api.commit(name="Ann", email="ann@example.com", date="2024-01-02T15:00")
    api.commit(name="Di", email="di@example.com", date="2024-02-10T10:00")
    data = tmp_path / "data"
    for repo in (web, api):
        assert run("track", str(repo.path), "--in-place", data=data).returncode == 0
    return data


@pytest.fixture
def tracked(tracked_once, tmp_path):
    """Each test's own copy of the data directory (the repositories, read in place, are only read)."""
    data = tmp_path / "data"
    shutil.copytree(tracked_once, data)
    return data


def test_a_query_quoted_as_one_argument_is_the_same_query(tracked):
    # since 2024-02: Ann 02-05 and Cy 03-01 in web -> 2 active days, 2 developers, 2 commits
    whole = run("report", "web since:2024-02", "--json", data=tracked)
    assert whole.returncode == 0, whole.stderr
    apart = run("report", "web", "since:2024-02", "--json", data=tracked)
    assert [(d["active_days"], d["developers"], d["commits"], d["since"]) for d in map(json.loads, (whole.stdout, apart.stdout))] \
        == [(2, 2, 2, "2024-02-01")] * 2


@pytest.mark.parametrize("typed, hint", [
    (["web", "since", "2024"], "since:2024"),
    (["web", "since=2024"], "since:2024"),
    (["web", "--since", "2024"], "since:2024"),
    (["web", "--since=2024-03"], "since:2024-03"),
    (["web", "by", "month"], "by:month"),
    (["web", "--path=src"], "path:src"),
])
def test_a_token_written_the_shells_way_gets_a_hint_at_the_colon_form(typed, hint):
    with pytest.raises(QueryError) as caught:
        parse_query(typed, TODAY)
    assert f"`{hint}`" in str(caught.value) and "colon" in str(caught.value)


def test_a_repository_named_like_a_key_still_works_alone_or_before_a_token():
    assert parse_query(["since"], TODAY).repos == ("since",)
    assert parse_query(["since", "by:month"], TODAY).repos == ("since",)


def test_query_words_splits_a_quoted_query_but_keeps_a_path_with_spaces_whole():
    assert query_words(["openssh since:2024 by:month"]) == ["openssh", "since:2024", "by:month"]
    assert query_words(["/home/me/my repo"]) == ["/home/me/my repo"]
    assert query_words(["/home/me/proj since:2024"]) == ["/home/me/proj", "since:2024"]
    assert query_words(["web", "since:2024"]) == ["web", "since:2024"]


def test_the_cli_hints_at_the_colon_form(tracked):
    result = run("report", "web", "--since", "2024", data=tracked)
    assert result.returncode == 2 and "`since:2024`" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [["report", "web"], ["compare", "web", "api"], ["orgs", "web"]])
def test_json_and_csv_together_are_refused_in_one_sentence(tracked, command):
    for extra in (["--json", "--csv"], ["--json", "format:csv"]):
        result = run(*command, *extra, data=tracked)
        assert result.returncode == 2 and result.stdout == ""
        assert "two formats at once" in result.stderr and result.stderr.count("\n") == 1


def test_projects_are_made_listed_and_removed_from_the_shell(tracked):
    assert "No projects yet" in run("projects", data=tracked).stdout
    added = run("project", "add", "suite", "web", "api", data=tracked)
    assert added.returncode == 0, added.stderr
    assert "`suite` now counts api and web as one" in added.stdout  # members in name order
    assert run("project", "list", data=tracked).stdout.strip() == "1 project: suite (api and web)"
    # the union over January: Ann 01-02 (in both: one active day) and Bob 01-02 -> 2 active days
    doc = json.loads(run("report", "suite", "since:2024-01", "until:2024-01", "--json", data=tracked).stdout)
    assert (doc["active_days"], doc["repos"], doc["filters"]["repositories_asked"]) == (2, ["web", "api"], ["suite"])
    assert doc["headline"].startswith("suite (web and api): 2GAD 4 person-days")
    wrong = run("project", "add", "suite", data=tracked)
    assert wrong.returncode == 2 and "project add NAME REPO..." in wrong.stderr
    assert run("project", "remove", "suite", data=tracked).returncode == 0
    assert "No projects yet" in run("projects", data=tracked).stdout
