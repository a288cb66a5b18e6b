"""`gad-bot restore PATH` refuses a bad backup before it moves anything (bot/store/index.py: restore_index).

tests/test_restore.py covers a file that is no SQLite at all and a path that is no file. Here, the backups an
operator may really hold: one damaged on disk (SQLite's integrity check fails), another program's SQLite database,
and an index written by a newer gad-bot. Each is refused in one sentence naming what is wrong, and the data
directory is as it was, byte for byte: the index, the WAL a crashed process left beside it, nothing set aside,
nothing half-copied. A restore that went ahead would leave the person with a damaged or empty index and their own
moved aside.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from bot.store.index import SCHEMA_VERSION
from tests.faults import run_cli
from tests.test_restore import crashed, names  # noqa: F401  (crashed: a fixture)


def index_files(data: Path) -> dict[str, bytes]:
    """Every file of the data directory whose name starts with the index's: name -> bytes."""
    return {p.name: p.read_bytes() for p in sorted(data.iterdir()) if p.name.startswith("index.sqlite")}


def damaged(backup: Path, out: Path) -> Path:
    """The backup with one page of its commit columns overwritten, as a bad disk would (it still opens)."""
    shutil.copyfile(backup, out)
    db = sqlite3.connect(out)
    page = db.execute("PRAGMA page_size").fetchone()[0]
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'repos'").fetchone()
    db.close()
    with open(out, "r+b") as handle:
        handle.seek((root - 1) * page + 8)  # past the page header's first bytes: the cell pointers and cells
        handle.write(b"\xa5" * (page - 8))
    return out


def another_programs(backup: Path, out: Path) -> Path:
    db = sqlite3.connect(out)
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    db.execute("INSERT INTO notes (text) VALUES ('groceries')")
    db.commit()
    db.close()
    return out


def newer(backup: Path, out: Path) -> Path:
    shutil.copyfile(backup, out)
    db = sqlite3.connect(out)
    db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (SCHEMA_VERSION + 1, "from the future", "2030-01-01"))
    db.commit()
    db.close()
    return out


@pytest.mark.parametrize("make, why", [
    (damaged, "SQLite"),  # "fails SQLite's integrity check (...)" or "cannot be read as a SQLite database (...)"
    (another_programs, "is a SQLite database but not a gad-bot index"),
    (newer, f"is an index of schema {SCHEMA_VERSION + 1}, newer than this gad-bot's {SCHEMA_VERSION}"),
])
def test_a_bad_backup_is_refused_before_anything_moves(crashed, tmp_path, make, why):
    data, backup = crashed
    bad = make(backup, tmp_path / f"{make.__name__}.sqlite")
    before = index_files(data)
    assert set(before) >= {"index.sqlite", "index.sqlite-wal"}  # the crashed writer's WAL is there to lose
    result = run_cli("restore", str(bad), data=data)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(bad) in lines[0] and why in lines[0], lines
    assert index_files(data) == before
    assert names(data) == ["after-the-backup"]  # the index in place, its WAL replayed as before the refusal
