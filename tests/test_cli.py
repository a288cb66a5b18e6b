"""The operator's CLI as a real process: install-free (python -m), real repository, real data directory."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitbuild import RepoBuilder, git_env

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, data: Path, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**git_env(), "GAD_DATA_DIR": str(data), "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=120)


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
    result = run("report", str(repo.path), "since:2024-01", "--json", data=data)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    for key in ("person_days", "two_gad", "developers", "commits", "since", "until", "scope", "repos", "rows"):
        assert key in out
    assert (out["person_days"], out["two_gad"], out["developers"], out["commits"]) == (4, 8, 3, 4)
    assert out["since"] == "2024-01-01"
    again = run("report", "proj", "by:month", "--json", data=data)
    assert [(r["key"], r["person_days"]) for r in json.loads(again.stdout)["rows"]] == [
        ("2024-01", 2), ("2024-02", 1), ("2024-03", 1)]


def test_text_report_is_a_readable_table(repo, tmp_path):
    result = run("report", str(repo.path), "by:person", data=tmp_path / "data")
    assert result.returncode == 0, result.stderr
    assert "ann@example.com" in result.stdout and "2GAD" in result.stdout


def test_csv_export(repo, tmp_path):
    result = run("report", str(repo.path), "by:month", "--csv", data=tmp_path / "data")
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("key,") and lines[1].startswith("2024-01,")


def test_track_sync_repos_untrack(repo, tmp_path):
    data = tmp_path / "data"
    tracked = run("track", str(repo.path), "--name", "p", data=data)
    assert tracked.returncode == 0, tracked.stderr
    assert "p: 4 commits indexed" in tracked.stdout
    repo.commit(email="new@example.com", date="2024-04-01")
    synced = run("sync", "p", data=data)
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
    (("track", "/definitely/not/a/repo"), "not a git repository"),
    (("track", "https://user:hunter2@example.com/x.git"), "Credentials"),
])
def test_bad_input_is_one_line_exit_2_no_traceback(tmp_path, args, fragment):
    data = tmp_path / "data"
    result = run(*args, data=data)
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
    assert (out["person_days"], out["developers"], out["commits"]) == (0, 0, 0)


def test_every_cli_command_is_documented():
    from bot.cli import cli

    docs = (ROOT / "README.md").read_text() + (ROOT / "docs" / "operations.md").read_text()
    for name in cli.commands:
        assert re.search(rf"gad-bot {name}\b", docs), f"`gad-bot {name}` is not documented"


def test_every_token_is_documented():
    from bot.query import TOKENS

    readme = (ROOT / "README.md").read_text()
    for token in TOKENS:
        word = token.form.split(":")[0]
        assert f"`{word}:" in readme or f"`{word}`" in readme, f"`{token.form}` is not in the README's token table"


def test_no_leftover_todo_in_the_docs():
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        assert "TODO(" not in path.read_text(), f"{path.name} has a leftover TODO"
