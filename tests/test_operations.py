"""Operating gad-bot: doctor against a loopback Slack, migrations from the first schema, backups, re-clones."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from bot.config import Settings
from bot.faces.doctor import NEEDED_SCOPES, run_checks
from bot.engine.engine import Engine
from bot.store.index import MIGRATIONS, SCHEMA_VERSION, Index
from bot.engine.query import parse_query
from bot.slackapi import web_client
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub


@pytest.fixture
def stub():
    with SlackStub(scopes=list(NEEDED_SCOPES)) as running:
        yield running


def doctor(tmp_path, stub, token, **env):
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": token,
                                  "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": "x" * 32, **env})
    engine = Engine.open(settings)
    return run_checks(settings, engine, lambda: web_client(settings))


def failing(checks):
    return [c for c in checks if not c.ok and not c.warning]


def test_doctor_all_good(tmp_path, stub):
    checks = doctor(tmp_path, stub, stub.good_token)
    assert failing(checks) == []
    assert any("bot token valid" in c.line() for c in checks)


def test_doctor_checks_the_git_command(tmp_path, stub, monkeypatch):
    import subprocess

    from bot.store import history

    version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[2]
    checks = doctor(tmp_path, stub, stub.good_token)
    assert f"[ok  ] git {version} reads histories" in [c.line() for c in checks]
    monkeypatch.setattr(history, "_GIT", str(tmp_path / "no-git-here"))
    bad = failing(doctor(tmp_path, stub, stub.good_token))
    assert [c.line() for c in bad] == ["[FAIL] the `git` command is not installed (gad-bot reads histories with it) -- "
                                       "install git (e.g. `apt-get install git`) on this host"]


def test_doctor_bad_token_says_how_to_fix(tmp_path, stub):
    checks = doctor(tmp_path, stub, "xoxb-wrong")
    bad = failing(checks)
    assert len(bad) == 1 and "invalid_auth" in bad[0].line() and "reinstall" in bad[0].line()
    assert "xoxb-wrong" not in "\n".join(c.line() for c in checks)


def test_doctor_missing_scope(tmp_path, stub):
    stub.scopes = ["commands", "chat:write"]
    bad = failing(doctor(tmp_path, stub, stub.good_token))
    assert len(bad) == 1 and "files:write" in bad[0].line() and "users:read" in bad[0].line()


def test_doctor_wants_the_link_scopes_while_unfurls_are_on(tmp_path, stub):
    stub.scopes = [s for s in NEEDED_SCOPES if s != "links:write"]
    (bad,) = failing(doctor(tmp_path, stub, stub.good_token))
    assert bad.line().startswith("[FAIL] missing bot scopes: links:write -- ")
    assert "or set GAD_UNFURLS=off" in bad.line()
    assert failing(doctor(tmp_path, stub, stub.good_token, GAD_UNFURLS="off")) == []


def test_doctor_flags_a_broken_mirror(tmp_path, stub, upstream):
    import shutil

    upstream.commit()
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    engine = Engine.open(settings)
    engine.track(str(upstream.path), "up")
    shutil.rmtree(engine.repo("up").mirror_path)
    bad = failing(doctor(tmp_path, stub, stub.good_token))
    assert any("gad-bot sync --reclone up" in c.line() for c in bad)


def test_manifest_asks_for_exactly_the_scopes_doctor_needs():
    import yaml
    from pathlib import Path

    manifest = yaml.safe_load((Path(__file__).parent.parent / "manifest.yml").read_text())
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == set(NEEDED_SCOPES)


def test_first_schema_upgrades_in_place_keeping_data(tmp_path, upstream):
    """A database made by the first release (migration 1 only) opens with this one, untouched by hand."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for statement in MIGRATIONS[0][2]:
        conn.execute(statement)
    conn.execute("INSERT INTO migrations VALUES (1, 'engine', '2026-01-01T00:00:00+00:00')")
    conn.execute("INSERT INTO repos (name, source, mirror_path, created_at) VALUES ('old', '/x', ?, '2026-01-01')",
                 (str(tmp_path / 'mirrors' / 'old'),))
    conn.commit()
    conn.close()
    index = Index(path)
    assert index.schema_version() == SCHEMA_VERSION
    assert [r.name for r in index.repos()] == ["old"]
    assert {r["version"] for r in index.rows("SELECT version FROM migrations")} == set(range(1, SCHEMA_VERSION + 1))


def test_backup_while_a_sync_writes_is_consistent(tmp_path, settings, upstream):
    for day in range(1, 29):
        upstream.commit(email=f"p{day % 5}@example.com", date=f"2024-02-{day:02d}")
    engine = Engine.open(settings)
    engine.track(str(upstream.path), "up")
    for day in range(1, 29):
        upstream.commit(email=f"q{day % 3}@example.com", date=f"2024-03-{day:02d}")
    writer = threading.Thread(target=lambda: engine.sync(["up"]))
    writer.start()
    copies = []
    for n in range(5):
        target = tmp_path / f"copy{n}.sqlite"
        engine.index.backup(target)
        copies.append(target)
    writer.join()
    for target in copies:
        copy = Engine(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / f"restored-{target.stem}")}), Index(target))
        figures = copy.report(parse_query(["up"], TODAY)).totals.person_days
        assert figures in (28, 56)  # before or after the sync, never in between
        assert copy.index.integrity_ok()


def test_backup_cli_refuses_to_overwrite(tmp_path, upstream):
    from tests.test_cli import run

    upstream.commit()
    data = tmp_path / "data"
    run("track", str(upstream.path), "--name", "up", data=data)
    target = tmp_path / "b.sqlite"
    assert run("backup", str(target), data=data).returncode == 0
    again = run("backup", str(target), data=data)
    assert again.returncode == 2 and "--force" in again.stderr


def test_reclone_keeps_projects_and_figures(tmp_path, settings):
    origin = RepoBuilder(tmp_path / "origin", bare=True)
    origin.commit(email="a@example.com", date="2024-01-01")
    origin.commit(email="b@example.com", date="2024-01-02")
    engine = Engine.open(settings)
    engine.track(str(origin.path), "up")
    engine.project_add("suite", ["up"])
    mirror = engine.repo("up").mirror_path
    damaged = [p for p in (mirror / "objects").glob("*/*") if p.parent.name not in ("info",)]
    assert damaged
    for path in damaged:
        data = path.read_bytes()
        path.unlink()  # a new file, not the hard-linked one: the origin stays intact
        path.write_bytes(data[:len(data) // 2])  # truncated: the mirror is damaged
    origin.commit(email="c@example.com", date="2024-01-03")  # the next sync must read the old history
    # a separate process, as in production (libgit2 keeps packs it opened in this one)
    from tests.test_cli import run

    data = settings.data_dir
    failed = run("sync", "up", data=data)
    assert failed.returncode == 1 and "reclone" in failed.stdout
    assert engine.repo("up").last_error and engine.report(parse_query(["suite"], TODAY)).totals.person_days == 2
    fixed = run("sync", "--reclone", "up", data=data)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert engine.repo("up").last_error is None
    assert engine.report(parse_query(["suite"], TODAY)).totals.person_days == 3


# -- doctor after a real track, and on a damaged index (issue 12, item 2) -------------------------


def test_doctor_passes_right_after_tracking_with_paths(tmp_path, stub):
    """`gad-bot track` (which indexes changed paths into the WITHOUT ROWID commit_paths) then `gad-bot doctor`."""
    from tests.faults import run_cli

    upstream = RepoBuilder(tmp_path / "web")
    upstream.commit(files={"src/a.c": "int a;\n"}, date="2024-01-02")
    upstream.commit(email="bob@example.com", files={"docs/b.md": "b\n"}, date="2024-01-03")
    data = tmp_path / "data"
    tracked = run_cli("track", str(upstream.path), "--name", "web", data=data)
    assert tracked.returncode == 0, tracked.stderr
    assert "web: changed paths of 2 commits indexed" in tracked.stdout
    env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": "x" * 32}
    result = run_cli("doctor", data=data, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"[ok  ] index passes SQLite's {'integrity_check' if sqlite3.sqlite_version_info[:2] in ((3, 40), (3, 41)) else 'quick_check'}" in result.stdout
    assert "[ok  ] web: 2 commits, synced" in result.stdout
    assert result.stdout.rstrip().endswith("everything needed is in place")


@pytest.mark.parametrize("version, pragma", [((3, 39, 4), "quick_check"), ((3, 40, 0), "integrity_check"),
                                             ((3, 40, 1), "integrity_check"), ((3, 41, 0), "integrity_check"),
                                             ((3, 41, 1), "quick_check"), ((3, 45, 1), "quick_check")])
def test_the_integrity_check_trusted_on_each_sqlite(version, pragma):
    from bot.store.index import integrity_pragma

    assert integrity_pragma(version) == pragma


def test_doctor_on_a_damaged_index_never_advises_throwing_it_away(tmp_path, stub, upstream):
    upstream.commit(files={"src/a.c": "int a;\n"})
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    engine = Engine.open(settings)
    engine.track(str(upstream.path), "up")
    engine.index.close()
    # Damage an index b-tree for real: the unique index on repository names loses its entries.
    db = sqlite3.connect(settings.index_path)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = 'repos'").fetchone()[0]
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with open(settings.index_path, "r+b") as f:  # zero the index's root page: its entries are gone
        f.seek((root - 1) * page_size)
        f.write(b"\x0a" + b"\x00" * (page_size - 1))
    bad = failing(doctor(tmp_path, stub, stub.good_token))
    (line,) = [c.line() for c in bad if "index failed" in c.line()]
    assert "integrity_check" in line
    assert "copy" in line and "somewhere safe" in line and "gad-bot backup" in line
    assert "move index.sqlite away" not in line and "track again" not in line
