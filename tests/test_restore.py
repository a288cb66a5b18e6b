"""`gad-bot restore PATH` (issue 21, part 3): a restore that restores, after a crash left a WAL behind.

The fault first: the old printed steps (copy the backup over index.sqlite) let SQLite replay the
crashed process's WAL over the copy, so the "restored" index holds what the backup did not.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from bot.config import Settings
from bot.service.liveness import ServeLock
from tests.faults import run_cli, tracked_web

# A writer that commits in WAL mode and dies before any checkpoint, as a killed `serve` does.
CRASHING_WRITER = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA wal_autocheckpoint = 0")
db.execute("UPDATE repos SET name = 'after-the-backup'")
os._exit(0)  # no close, no checkpoint: the change lives only in index.sqlite-wal
"""


@pytest.fixture
def crashed(tmp_path):
    """A data directory whose index was backed up, then changed by a process that crashed (WAL left)."""
    data, _ = tracked_web(tmp_path)
    backup = tmp_path / "backups" / "index.sqlite"
    backed = run_cli("backup", str(backup), data=data)
    assert backed.returncode == 0, backed.stderr
    assert f"gad-bot restore {backup}" in backed.stdout  # backup prints the command that restores it
    subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(data / "index.sqlite")], check=True)
    assert (data / "index.sqlite-wal").stat().st_size > 0
    return data, backup


def names(data) -> list[str]:
    listed = run_cli("repos", "--json", data=data)
    assert listed.returncode == 0, listed.stderr
    return [repo["name"] for repo in json.loads(listed.stdout)]


def test_copying_the_backup_over_the_index_replays_the_crashed_wal(crashed, tmp_path):
    """The fault the old restore steps had (reproduced on a copy, so the next test starts clean)."""
    data, backup = crashed
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    shutil.copyfile(backup, copy / "index.sqlite")  # "copy it to index.sqlite", the WAL left beside it
    db = sqlite3.connect(copy / "index.sqlite")
    assert [name for (name,) in db.execute("SELECT name FROM repos")] == ["after-the-backup"]


def test_restore_puts_back_exactly_the_backup_and_keeps_the_old_index(crashed):
    data, backup = crashed
    result = run_cli("restore", str(backup), data=data)
    assert result.returncode == 0, result.stderr
    assert "integrity ok" in result.stdout and "index.sqlite.before-restore" in result.stdout, result.stdout
    assert names(data) == ["web"]  # the backup's, not the crashed WAL's
    # nothing deleted: the replaced index and its WAL are kept aside, and still say what they said
    kept = sqlite3.connect(data / "index.sqlite.before-restore")
    assert [name for (name,) in kept.execute("SELECT name FROM repos")] == ["after-the-backup"]
    assert (data / "index.sqlite").stat().st_mode & 0o777 == 0o600
    report = run_cli("report", "web", data=data)
    assert report.returncode == 0 and "2GAD" in report.stdout, report.stderr


def test_restore_is_refused_while_serve_runs(crashed):
    data, backup = crashed
    before = (data / "index.sqlite").read_bytes()
    lock = ServeLock.acquire(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    try:
        result = run_cli("restore", str(backup), data=data)
    finally:
        lock.release()
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "is running on" in lines[0] and "stop it first" in lines[0], lines
    assert (data / "index.sqlite").read_bytes() == before


@pytest.mark.parametrize("content, why", [(b"not a database at all" * 100, "cannot be read as a SQLite database"),
                                          (None, "is not a file")])
def test_restore_refuses_what_is_not_a_backup_and_changes_nothing(crashed, tmp_path, content, why):
    data, _ = crashed
    bogus = tmp_path / "bogus.sqlite"
    if content is not None:
        bogus.write_bytes(content)
    before = (data / "index.sqlite").read_bytes()
    result = run_cli("restore", str(bogus), data=data)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and why in lines[0] and "gad-bot backup" in lines[0], lines
    assert (data / "index.sqlite").read_bytes() == before


@pytest.mark.parametrize("fault", ["damaged page", "newer schema"])
def test_a_damaged_or_newer_backup_is_refused_before_the_old_index_is_touched(crashed, tmp_path, fault):
    """Issue 32: the old index, its WAL included, stays exactly where it was; nothing is put aside."""
    from tests.faults import damage_table

    data, backup = crashed
    bad = tmp_path / "bad.sqlite"
    shutil.copyfile(backup, bad)
    if fault == "damaged page":
        damage_table(bad, "repos")
        why = "(database disk image is malformed)"  # what the integrity check itself raised
    else:
        db = sqlite3.connect(bad)
        db.execute("INSERT INTO migrations VALUES (999, 'from the future', '2030-01-01T00:00:00+00:00')")
        db.commit()
        db.close()
        why = "is an index of schema 999, newer than this gad-bot's"
    before = {p.name: p.read_bytes() for p in data.iterdir() if p.name.startswith("index.sqlite")}
    result = run_cli("restore", str(bad), data=data)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert why in result.stderr, result.stderr
    after = {p.name: p.read_bytes() for p in data.iterdir() if p.name.startswith("index.sqlite")}
    assert after == before  # no `.before-restore`, no `.restoring`, the WAL not replayed or moved
