"""Suggestions that point the right way, and one repository tracked once (issue 20, part 2).
Histories are built in code; what each message must offer is worked out by hand from them."""

from __future__ import annotations

from datetime import date

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import parse_command
from bot.errors import GadError, QueryError
from tests.gitbuild import RepoBuilder
from tests.test_cli import run

TODAY = date(2026, 12, 4)


@pytest.fixture
def git_like(tmp_path):
    """Default branch master (and a branch IBS), tags v2.4.5, v2.40.0, v2.40.1, v2.45.0, v2.45.4, a builtin/ dir."""
    b = RepoBuilder(tmp_path / "git")
    for i, tag in enumerate(("v2.4.5", "v2.40.0", "v2.40.1", "v2.45.0", "v2.45.4")):
        c = b.commit("master", name="Ann", email="ann@example.com", date=f"2024-0{i + 1}-01T10:00",
                     files={f"builtin/cmd{i}.c": str(i), "README": str(i)})
        b.tag(tag, c)
    b.branch("IBS", c)
    b.repo.set_head("refs/heads/master")
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(b.path), "git", in_place=True)
    return engine, b


def ask(engine, text):
    parsed = parse_command(text, TODAY)
    return engine.compare(parsed, TODAY) if hasattr(parsed, "items") else engine.report(parsed.query, TODAY)


def refused(engine, text) -> str:
    with pytest.raises(QueryError) as caught:
        ask(engine, text)
    return str(caught.value)


def test_a_short_version_offers_its_release_and_both_unknown_names_are_told(git_like):
    engine, _ = git_like
    message = refused(engine, "git range:2.40..2.45")
    # both names told, each offering its own release first (by spelling, v2.4.5 and v2.45.4 came first)
    first, second = message.split(". ", 1)
    assert first.startswith("`git` has no tag, branch or commit `2.40`; nearest: `v2.40.0`, `v2.40.1`")
    assert second.startswith("`git` has no tag, branch or commit `2.45`; nearest: `v2.45.0`, `v2.45.4`")


def test_a_missing_branch_offers_the_default_branch_and_head(git_like):
    engine, _ = git_like
    message = refused(engine, "git branch:main")
    assert "`branch:master` (its default branch)" in message and "`branch:HEAD`" in message
    assert ask(engine, "git branch:master").totals.person_days == 5


def test_a_glob_in_path_is_told_apart_from_a_path():
    with pytest.raises(QueryError) as caught:
        parse_command("git path:builtin/*.c", TODAY)
    assert "is a glob" in str(caught.value) and "`path:builtin`" in str(caught.value)
    with pytest.raises(QueryError) as caught:
        parse_command("git path:!docs/*", TODAY)
    assert "`path:!docs`" in str(caught.value)


def test_a_compare_item_misspelt_is_corrected_in_the_form_typed(git_like):
    engine, _ = git_like
    message = refused(engine, "compare git:bultin git")
    assert "`git:builtin`" in message and "path:" not in message


def test_a_missing_directory_is_said_not_to_exist(tmp_path):
    result = run("report", str(tmp_path / "nowhere"), data=tmp_path / "data")
    assert result.returncode == 2 and "does not exist" in result.stderr and "not a git repository" not in result.stderr


def test_the_same_repository_is_not_tracked_twice(tmp_path):
    b = RepoBuilder(tmp_path / "proj")
    b.commit(name="Ann", email="ann@example.com", date="2024-01-02T10:00", files={"src/a.c": "a"})
    b.repo.checkout_head()  # a work tree with src/ in it, as a developer's checkout
    data = tmp_path / "data"
    assert run("track", str(b.path), "--in-place", "--name", "proj", data=data).returncode == 0
    # `report .` from a subdirectory of the tracked checkout answers for `proj`, tracking nothing new
    inside = run("report", ".", "--json", data=data, cwd=b.path / "src")
    assert inside.returncode == 0, inside.stderr
    assert "now tracking" not in inside.stderr
    assert "proj" in run("repos", data=data).stdout and len(run("repos", "--json", data=data).stdout.split('"name"')) == 2
    again = run("track", str(b.path) + "/", "--in-place", "--name", "other", data=data)
    assert again.returncode == 2 and "tracked already as `proj`" in again.stderr


def test_the_same_url_under_another_name_is_refused(tmp_path):
    b = RepoBuilder(tmp_path / "up")
    b.commit(name="Ann", email="ann@example.com", date="2024-01-02T10:00")
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(f"file://{b.path}", "one")
    for again in (f"file://{b.path}/", str(b.path)):
        with pytest.raises(GadError) as caught:
            engine.track(again, "two")
        assert "tracked already as `one`" in str(caught.value)
    assert [r.name for r in engine.repos()] == ["one"]
