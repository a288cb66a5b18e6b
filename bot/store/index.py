"""The SQLite index: what gad-bot knows about each repository's history, kept in one file.

sqlite-utils lives here. `Index` is one object over the file, made of one room per table family
(bot/store/tables/): the file and its connections (base), the schema's migrations (schema), repositories
and refs (repos), history chunks, walks and derived arrays (chunks), identities (people), changed paths
(paths), projects (projects), and what serve remembers of requests (serving). The tables of digests,
kept answers, COCOMO's line counts and forge organizations are read by the modules that own them
(bot/digests/subscriptions.py, bot/store/answers.py, bot/engine/cocomo.py, bot/store/orgindex.py)
through `Index.execute` and `Index.transaction`. Here: the whole file at once (backup, restore,
integrity).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .tables.base import IndexFile, _create_private, _iso, parse_time, utcnow
from .tables.chunks import CHUNK_COLUMNS, DERIVED_COLUMNS, ChunkRow, Chunks, DerivedRow, WalkState
from .tables.paths import Paths
from .tables.people import People
from .tables.projects import Projects
from .tables.repos import RepoRow, Repos, stored_mirror_path
from .tables.schema import MIGRATIONS, SCHEMA_VERSION, Schema
from .tables.serving import Serving

__all__ = ["CHUNK_COLUMNS", "DERIVED_COLUMNS", "MIGRATIONS", "SCHEMA_VERSION", "ChunkRow", "DerivedRow", "Index",
           "RepoRow", "Restored", "WalkState", "parse_time", "restore_index", "stored_mirror_path", "utcnow", "_iso"]


class Index(Schema, Repos, Chunks, People, Paths, Projects, Serving):
    """One connection per thread to the index file; writers take one transaction per repository update."""

    def __init__(self, path: Path, *, migrate: bool = True, data_dir: Path | None = None):
        IndexFile.__init__(self, path, data_dir=data_dir)
        if migrate:
            self.migrate()

    def backup(self, dest: Path, pages_per_step: int = 1024) -> None:
        """A consistent copy of the index while others keep reading and writing (SQLite online backup)."""
        _create_private(dest)
        target = sqlite3.connect(dest)
        try:
            source = sqlite3.connect(self.path, timeout=30)
            try:
                source.backup(target, pages=pages_per_step)  # restarts by itself when a writer changes a page
            finally:
                source.close()
            target.execute("PRAGMA journal_mode = DELETE")  # a single self-contained file
            if target.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                raise OSError("the copy failed its integrity check")
        finally:
            target.close()

    def integrity_ok(self) -> bool:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@dataclass(frozen=True)
class Restored:
    """What `restore_index` did."""

    size: int  # bytes of the restored index
    schema: int  # its schema version as copied (then migrated to this gad-bot's before it was put in place)
    kept: Path | None  # where the index it replaced was moved (None: there was none)


def restore_index(backup: Path, target: Path) -> Restored:
    """Put a backup in place of the index at `target`, so that nothing of the old one is replayed over it.

    The backup is checked first (a SQLite file, a gad-bot index no newer than this code, integrity
    ok) and its copy migrated (mirror paths outside the target's data directory are refused); the old index and its -wal and -shm files are moved aside whole (`<name>.before-restore`,
    nothing is deleted), since SQLite would replay an old WAL over the copy; the copy is written
    beside the target and renamed into place, so a failure midway leaves no half-written index.
    The caller makes sure no `serve` runs (bot/service/liveness.py holds its lock meanwhile).
    """
    def refuse(why: str) -> ConfigError:
        return ConfigError(f"{backup} {why}; give the path of a file written by `gad-bot backup`.")

    if not backup.is_file():
        raise refuse("is not a file")
    try:
        source = sqlite3.connect(f"{backup.resolve().as_uri()}?mode=ro", uri=True)
        try:
            problems = [row[0] for row in source.execute("PRAGMA integrity_check")]
            if problems != ["ok"]:
                # SQLite's first problem may span lines ("*** in database main ***\nOn tree page 3 ..."): one line
                raise refuse(f"fails SQLite's integrity check ({' '.join(problems[0].split())[:200]})")
            has = source.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('migrations', 'repos')")
            if has.fetchone()[0] != 2:
                raise refuse("is a SQLite database but not a gad-bot index")
            schema = source.execute("SELECT max(version) FROM migrations").fetchone()[0] or 0
        finally:
            source.close()
    except sqlite3.DatabaseError as error:
        raise refuse(f"cannot be read as a SQLite database ({error})") from None
    if schema > SCHEMA_VERSION:
        raise ConfigError(f"{backup} is an index of schema {schema}, newer than this gad-bot's {SCHEMA_VERSION}; "
                          "restore it with the gad-bot version that wrote it.")
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    incoming = target.with_name(target.name + ".restoring")
    shutil.copyfile(backup, incoming)
    os.chmod(incoming, 0o600)
    # Migrated here, before it replaces anything: an older backup whose mirror paths name another data
    # directory is refused now (migration 14), not on the next start with the old index already aside.
    try:
        copy = Index(incoming, data_dir=target.parent)
        copy.close()  # the last connection: SQLite checkpoints the WAL into the file and deletes it
    except BaseException:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{incoming}{suffix}").unlink(missing_ok=True)
        raise
    with open(incoming, "rb+") as handle:
        os.fsync(handle.fileno())
    kept = None
    if target.exists():
        kept = target.with_name(target.name + ".before-restore")
        for suffix in ("", "-wal", "-shm"):
            old, aside = Path(f"{target}{suffix}"), Path(f"{kept}{suffix}")
            aside.unlink(missing_ok=True)
            if old.exists():
                os.replace(old, aside)
    os.replace(incoming, target)
    return Restored(target.stat().st_size, schema, kept)


# SQLite 3.40.0 to 3.41.0 wrongly report "NULL value in ..." under `PRAGMA quick_check` for WITHOUT
# ROWID tables whose primary key lists the columns in another order than the table does (commit_paths,
# until migration 6 dropped it; none of today's tables is such, but the next one may be): a healthy
# index fails. `integrity_check` is right on every version; it is slower,
# so it is used where quick_check cannot be trusted, and as the second opinion before anyone is told
# their index is damaged. Seen on 3.40.1, the SQLite of Python 3.11 on Debian 12 and python:3.11-slim.
QUICK_CHECK_WRONG = ((3, 40, 0), (3, 41, 0))


def integrity_pragma(version: tuple[int, int, int] | None = None) -> str:
    """The integrity check to trust on this SQLite: quick_check, or integrity_check where quick_check is wrong."""
    import sqlite3

    version = version or sqlite3.sqlite_version_info
    low, high = QUICK_CHECK_WRONG
    return "integrity_check" if low <= tuple(version) <= high else "quick_check"


def integrity_problems(index: Index, pragma: str) -> list[str]:
    """What SQLite's check finds wrong in the index file ([] when nothing)."""
    rows = [r[0] for r in index.db.execute(f"PRAGMA {pragma}").fetchall()]
    return [] if rows == ["ok"] else rows
