"""The operator's CLI: real repository, real data directory. The first tests run it as a real process,
install-free (python -m); the rest run the same commands in this process (tests/inprocess.py says why)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.gitbuild import RepoBuilder, git_env
from tests.inprocess import gad_bot

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, data: Path, cwd: Path | None = None, env: dict | None = None, process: bool = False
        ) -> subprocess.CompletedProcess:
    """`gad-bot ARGS` on the data directory `data`: in this process (tests/inprocess.py), or as a process of its
    own with process=True, for a test of what only a process shows."""
    full_env = {**git_env(), "GAD_DATA_DIR": str(data), "PYTHONPATH": str(ROOT), **(env or {})}
    return gad_bot(list(args), full_env, cwd or ROOT, process=process)


@pytest.fixture
def repo(tmp_path):
    b = RepoBuilder(tmp_path / "proj")
    b.commit(name="Ann", email="ann@example.com", date="2024-01-02T10:00", offset=60)
    b.commit(name="Bob", email="bob@example.com", date="2024-01-02T23:30", offset=-300)
    b.commit(name="Ann", email="ann@example.com", date="2024-02-05")
    b.commit("dev", name="Cy", email="cy@example.com", date="2024-03-01")
    return b


def test_report_on_a_path_tracks_it_in_place_and_prints_json(repo, tmp_path):
    data = tmp_path / "data"
    result = run("report", str(repo.path), "since:2024-01", "--json", data=data, process=True)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    for key in ("active_days", "two_gad", "developers", "commits", "since", "until", "scope", "repos", "rows"):
        assert key in out
    assert (out["active_days"], out["two_gad"], out["developers"], out["commits"]) == (4, 8, 3, 4)
    assert out["since"] == "2024-01-01"
    again = run("report", "proj", "by:month", "--json", data=data, process=True)
    assert [(r["key"], r["active_days"]) for r in json.loads(again.stdout)["rows"]] == [
        ("2024-01", 2), ("2024-02", 1), ("2024-03", 1)]


def test_text_report_is_a_readable_table(repo, tmp_path):
    result = run("report", str(repo.path), "by:person", data=tmp_path / "data")
    assert result.returncode == 0, result.stderr
    assert "ann@example.com" in result.stdout and "2GAD" in result.stdout


def test_csv_export(repo, tmp_path):
    result = run("report", str(repo.path), "by:month", "--csv", data=tmp_path / "data")
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("month,active_days,") and lines[1].startswith("2024-01,")


def test_track_sync_repos_untrack(repo, tmp_path):
    data = tmp_path / "data"
    tracked = run("track", str(repo.path), "--name", "p", data=data, process=True)
    assert tracked.returncode == 0, tracked.stderr
    assert "p: 4 commits indexed" in tracked.stdout
    repo.commit(email="new@example.com", date="2024-04-01")
    synced = run("sync", "p", data=data, process=True)
    assert "+1 new" in synced.stdout
    listing = json.loads(run("repos", "--json", data=data).stdout)
    assert listing[0]["name"] == "p" and listing[0]["commits"] == 5 and listing[0]["last_error"] is None
    assert run("untrack", "p", data=data).returncode == 0
    assert json.loads(run("repos", "--json", data=data).stdout) == []


@pytest.mark.parametrize("args, fragment", [
    (("report", "proj", "since:2024-13"), "not a period"),
    (("report", "proj", "since:2024-06", "until:2024-01"), "starts after"),
    (("report", "proj", "colour:red"), "not a token"),
    (("report", "nothing-here"), "No repository or project named"),
    (("track", "/definitely/not/a/repo"), "does not exist"),
    (("track", "https://user:hunter2@example.com/x.git"), "Credentials"),
])
def test_bad_input_is_one_line_exit_2_no_traceback(tmp_path, args, fragment):
    data = tmp_path / "data"
    result = run(*args, data=data, process=True)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr and "hunter2" not in result.stderr
    assert result.stdout == ""


def test_a_typo_writes_nothing(tmp_path):
    data = tmp_path / "data"
    run("report", "proj", "since:2024-13", data=data)
    assert not data.exists()


def test_empty_period_reports_zeros(repo, tmp_path):
    out = json.loads(run("report", str(repo.path), "since:2030", "--json", data=tmp_path / "d").stdout)
    assert (out["active_days"], out["developers"], out["commits"]) == (0, 0, 0)


def test_every_cli_command_is_documented():
    from bot.faces.cli import cli

    docs = (ROOT / "README.md").read_text() + (ROOT / "docs" / "operations.md").read_text()
    for name in cli.commands:
        assert re.search(rf"gad-bot {name}\b", docs), f"`gad-bot {name}` is not documented"


def test_every_token_is_documented():
    from bot.engine.query import TOKENS

    readme = (ROOT / "README.md").read_text()
    for token in TOKENS:
        word = token.form.split(":")[0]
        assert f"`{word}:" in readme or f"`{word}`" in readme, f"`{token.form}` is not in the README's token table"


def test_no_leftover_todo_in_the_docs():
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        assert "TODO(" not in path.read_text(), f"{path.name} has a leftover TODO"


# -- the CLI teaches its grammar, in its own words (issue 12, items 9 and 12) ---------------------


def test_help_and_report_help_list_every_token_with_an_example(tmp_path):
    from bot.engine.query import TOKENS

    for args in (("help",), ("report", "help"), ("report", "--help")):
        result = run(*args, data=tmp_path / "data")
        assert result.returncode == 0, (args, result.stderr)
        flat = " ".join(result.stdout.split())
        for token in TOKENS:
            assert token.form in result.stdout and f"e.g. {token.example}" in flat, (args, token.form)
        assert "/gad help" not in result.stdout and "type `repos`" not in result.stdout
    assert "gad-bot report gstreamer/gstreamer since:2024-01" in run("help", data=tmp_path / "data").stdout
    assert not (tmp_path / "data").exists()  # help writes nothing


@pytest.mark.parametrize("args, line", [
    (("report", "since:2024"), "gad-bot: Name at least one repository, e.g. `gstreamer/gstreamer since:2024-01`; "
                               "`gad-bot repos` lists them."),
    (("report", "web", "colour:red"), "gad-bot: `colour:` is not a token gad-bot knows; use one of `since:`, `until:`, "
                                      "`branch:`, `refs:`, `range:`, `author:`, `org:`, `team:`, `path:`, `by:`, `tags:`, `prereleases:`, "
                                      "`releases:`, `mailmap:`, `bots:`, `top:`, `coauthors:`, `vs:`, `fte:`, `calibrated:`, `cocomo:`, "
                                      "`format:` (`gad-bot help` has examples)."),
    (("report", "web", "sinse:2024"), "gad-bot: `sinse:` is not a token gad-bot knows; did you mean `since:`, as in "
                                      "`since:2024-01`?"),
    (("report", "nothing-here"), "gad-bot: No repository or project named `nothing-here` is tracked; nothing is "
                                 "tracked yet; track one first with `gad-bot track URL`."),
    (("report", "subscribe", "web"), "gad-bot: `subscribe` is not a tracked repository or project; "
                                     "did you mean the command `/gad subscribe` in Slack?"),
])
def test_messages_in_a_terminal_name_terminal_commands(tmp_path, args, line):
    result = run(*args, data=tmp_path / "data")
    assert result.returncode == 2 and result.stderr.strip() == line


def test_report_on_a_path_says_it_is_now_tracked_and_how_to_forget_it(repo, tmp_path):
    data = tmp_path / "data"
    first = run("report", ".", "since:2024-01", data=data, cwd=repo.path)
    assert first.returncode == 0, first.stderr
    assert first.stderr == (f"gad-bot: now tracking {repo.path} as `proj` (read in place, nothing copied); later "
                            "reports can name it `proj`, and `gad-bot untrack proj` forgets it.\n")
    assert "proj: 2GAD 8 person-days, since 2024-01-01" in first.stdout
    again = run("report", ".", data=data, cwd=repo.path)
    assert again.stderr == ""  # said once, when it was registered


def test_by_person_table_has_no_developers_column(repo, tmp_path):
    out = run("report", str(repo.path), "by:person", data=tmp_path / "data").stdout
    # ann: 01-02 and 02-05 (2 days, 2 commits); bob 01-02; cy 03-01 (on dev)
    assert re.search(r"^person\s+2GAD\s+active days\s+commits$", out, re.M)
    assert re.search(r"^ann@example.com\s+4\s+2\s+2$", out, re.M)
    assert re.search(r"^total\s+8\s+4\s+4$", out, re.M)


def test_the_trend_stops_where_the_history_does(repo, tmp_path):
    # the last commit is cy's on 2024-03-01; asked for the whole of 2024, the trend ends with March
    result = run("report", str(repo.path), "since:2024-01", "until:2024-12", data=tmp_path / "data")
    assert "Trend: 2GAD per month, 2024-01 to 2024-03, peak 4 in 2024-01" in result.stdout
    assert "the history ends on 2024-03-01 (its newest commit); the trend stops there" in result.stdout
    out = json.loads(run("report", "proj", "since:2024-01", "until:2024-12", "--json", data=tmp_path / "data").stdout)
    assert [t["key"] for t in out["trend"]] == ["2024-01", "2024-02", "2024-03"] and out["last_day"] == "2024-03-01"
