"""The SQLite index: what gad-bot knows about each repository's history, kept in one file.

sqlite-utils lives here. The schema grows by numbered migrations recorded in the
`migrations` table, so an older database opens with a newer gad-bot untouched by hand.

Tables (after migration 1):
    repos         one row per tracked repository (source, mirror path, sync state)
    refs          the ref tips the index last saw, per repository (peeled to commits)
    authors       raw (name, e-mail) identities, as written in commits
    people        person keys: lower-cased, maybe mailmapped, e-mails
    repo_authors  per repository: author -> person with and without the mailmap, bot flags
    commits       one row per commit id, shared by every repository that has it (forks!)
    repo_commits  which commits each repository has, and in which scopes (bits)
    columns       per repository, the numpy arrays a report reads (a cache, rebuilt per sync)
    meta          small key/value facts (e.g. the bot patterns the identities were built with)
    projects, project_repos                       several repositories counted as one (migration 2)
    subscriptions, subscription_repos, deliveries weekly digests and their exactly-once ledger (3)
    paths, commit_paths                           which paths each non-merge commit changed, for path: (4)
    cocomo_cache                                  source line counts per (tree id, counter), for vs:cocomo (5)
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import sqlite_utils

from .errors import ConfigError

BATCH = 20_000


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds") if moment else None


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


# Each migration is (version, name, statements). Never edit a shipped one; append.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "engine", [
        """CREATE TABLE repos (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL,
            mirror_path TEXT NOT NULL,
            in_place INTEGER NOT NULL DEFAULT 0,
            head_ref TEXT,
            mailmap_oid TEXT,
            generation INTEGER NOT NULL DEFAULT 0,
            commits INTEGER NOT NULL DEFAULT 0,
            skipped INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            last_sync_at TEXT,
            last_success_at TEXT,
            last_error TEXT,
            failures INTEGER NOT NULL DEFAULT 0,
            next_attempt_at TEXT)""",
        """CREATE TABLE refs (
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            target BLOB NOT NULL,
            PRIMARY KEY (repo_id, name)) WITHOUT ROWID""",
        """CREATE TABLE authors (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            email TEXT NOT NULL,
            UNIQUE (name, email))""",
        """CREATE TABLE people (
            id INTEGER PRIMARY KEY,
            email TEXT NOT NULL UNIQUE)""",
        """CREATE TABLE repo_authors (
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            author_id INTEGER NOT NULL REFERENCES authors(id),
            person_mm INTEGER NOT NULL,
            person_raw INTEGER NOT NULL,
            bot_mm INTEGER NOT NULL,
            bot_raw INTEGER NOT NULL,
            PRIMARY KEY (repo_id, author_id)) WITHOUT ROWID""",
        """CREATE TABLE commits (
            id INTEGER PRIMARY KEY,
            oid BLOB NOT NULL UNIQUE,
            author_id INTEGER NOT NULL REFERENCES authors(id),
            day INTEGER,
            time INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            parents INTEGER NOT NULL)""",
        """CREATE TABLE repo_commits (
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            commit_id INTEGER NOT NULL REFERENCES commits(id),
            bits INTEGER NOT NULL,
            PRIMARY KEY (repo_id, commit_id)) WITHOUT ROWID""",
        "CREATE INDEX repo_commits_by_commit ON repo_commits(commit_id)",
        """CREATE TABLE columns (
            repo_id INTEGER PRIMARY KEY REFERENCES repos(id) ON DELETE CASCADE,
            generation INTEGER NOT NULL,
            rows INTEGER NOT NULL,
            commit_ids BLOB NOT NULL,
            author_ids BLOB NOT NULL,
            days BLOB NOT NULL,
            bits BLOB NOT NULL)""",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
    ]),
    (2, "projects", [
        """CREATE TABLE projects (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL)""",
        """CREATE TABLE project_repos (
            project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            PRIMARY KEY (project_id, repo_id)) WITHOUT ROWID""",
    ]),
    (3, "subscriptions", [
        # One subscription per channel: one digest per channel per week, covering all its repositories.
        """CREATE TABLE subscriptions (
            id INTEGER PRIMARY KEY,
            channel_id TEXT NOT NULL UNIQUE,
            team_id TEXT,
            weekday INTEGER NOT NULL DEFAULT 0,
            at TEXT NOT NULL DEFAULT '09:00',
            tz TEXT NOT NULL DEFAULT 'UTC',
            people INTEGER NOT NULL DEFAULT 0,
            created_by TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            paused_reason TEXT,
            paused_at TEXT)""",
        """CREATE TABLE subscription_repos (
            subscription_id INTEGER NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            PRIMARY KEY (subscription_id, name)) WITHOUT ROWID""",
        # The delivery ledger: a row is claimed in a transaction before posting, so a digest
        # for (channel, week) is posted at most once, whoever tries.
        """CREATE TABLE deliveries (
            channel_id TEXT NOT NULL,
            period_start TEXT NOT NULL,
            state TEXT NOT NULL,
            claimed_by TEXT,
            claimed_at TEXT,
            posted_at TEXT,
            message_ts TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            PRIMARY KEY (channel_id, period_start)) WITHOUT ROWID""",
    ]),
    (4, "paths", [
        # Which paths each non-merge commit changed against its first parent (for `path:`).
        "CREATE TABLE paths (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE)",
        """CREATE TABLE commit_paths (
            commit_id INTEGER NOT NULL REFERENCES commits(id) ON DELETE CASCADE,
            path_id INTEGER NOT NULL REFERENCES paths(id),
            PRIMARY KEY (path_id, commit_id)) WITHOUT ROWID""",
        "ALTER TABLE commits ADD COLUMN paths_done INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX commits_paths_pending ON commits(paths_done) WHERE paths_done = 0",
    ]),
    (5, "cocomo_cache", [
        """CREATE TABLE cocomo_cache (
            tree_id TEXT NOT NULL,
            counter TEXT NOT NULL,
            sloc INTEGER NOT NULL,
            counted_at TEXT NOT NULL,
            PRIMARY KEY (tree_id, counter)) WITHOUT ROWID""",
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


@dataclass(frozen=True)
class RepoRow:
    id: int
    name: str
    source: str
    mirror_path: Path
    in_place: bool
    head_ref: str | None
    mailmap_oid: str | None
    generation: int
    commits: int
    skipped: int
    created_at: datetime
    last_sync_at: datetime | None
    last_success_at: datetime | None
    last_error: str | None
    failures: int
    next_attempt_at: datetime | None

    @classmethod
    def from_row(cls, row: dict) -> "RepoRow":
        return cls(id=row["id"], name=row["name"], source=row["source"], mirror_path=Path(row["mirror_path"]),
                   in_place=bool(row["in_place"]), head_ref=row["head_ref"], mailmap_oid=row["mailmap_oid"],
                   generation=row["generation"], commits=row["commits"], skipped=row["skipped"],
                   created_at=parse_time(row["created_at"]), last_sync_at=parse_time(row["last_sync_at"]),
                   last_success_at=parse_time(row["last_success_at"]), last_error=row["last_error"],
                   failures=row["failures"], next_attempt_at=parse_time(row["next_attempt_at"]))


def _create_private(path: Path) -> None:
    """Create the database file readable by the service user only (before SQLite creates it 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


class Index:
    """One connection per thread to the index file; writers take one transaction per repository update."""

    def __init__(self, path: Path, *, migrate: bool = True):
        self.path = path
        _create_private(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        # When a set, the ids of the commits whose membership rows an update touched (so the
        # column cache can be patched rather than rebuilt); None: not tracked.
        self.touched: set[int] | None = None
        if migrate:
            self.migrate()

    # -- connections ---------------------------------------------------------
    @property
    def db(self) -> sqlite_utils.Database:
        db = getattr(self._local, "db", None)
        if db is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA busy_timeout = 30000")  # readers and writers wait rather than fail
            conn.execute("PRAGMA journal_mode = WAL")  # readers never block on a sync's transaction
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at checkpoints, never corrupt
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA cache_size = -65536")  # 64 MiB
            db = sqlite_utils.Database(conn)
            self._local.db = db
        return db

    def execute(self, sql: str, params: Iterable = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, tuple(params))

    def rows(self, sql: str, params: Iterable = ()) -> list[dict]:
        return list(self.db.query(sql, tuple(params)))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.conn.close()
            self._local.db = None

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """BEGIN IMMEDIATE ... COMMIT; anything raised rolls the whole update back."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        else:
            db.execute("COMMIT")

    # -- schema --------------------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply every migration the file lacks, each in its own transaction; return those applied."""
        applied: list[int] = []
        with self._lock:
            # Reads first: a database that is up to date must open without taking the write lock,
            # or every reader would queue behind a long sync transaction.
            has_table = self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone()
            if has_table and self.schema_version() == SCHEMA_VERSION:
                return applied
            if not has_table:
                self.db.execute("CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, "
                                "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
            newest = self.schema_version()
            if newest > SCHEMA_VERSION:
                raise ConfigError(f"{self.path} was written by a newer gad-bot (schema {newest}, this one knows "
                                  f"{SCHEMA_VERSION}); upgrade gad-bot, or restore a backup made before the upgrade.")
            for version, name, statements in MIGRATIONS:
                with self.transaction() as db:
                    if db.execute("SELECT 1 FROM migrations WHERE version = ?", (version,)).fetchone():
                        continue
                    for statement in statements:
                        db.execute(statement)
                    db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (version, name, _iso(utcnow())))
                    applied.append(version)
        return applied

    def schema_version(self) -> int:
        row = self.db.execute("SELECT max(version) FROM migrations").fetchone()
        return row[0] or 0

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    # -- repositories --------------------------------------------------------
    def add_repo(self, name: str, source: str, mirror_path: Path, in_place: bool) -> int:
        cursor = self.db.execute(
            "INSERT INTO repos (name, source, mirror_path, in_place, created_at) VALUES (?, ?, ?, ?, ?)",
            (name, source, str(mirror_path), int(in_place), _iso(utcnow())))
        return cursor.lastrowid

    def repo(self, name: str) -> RepoRow | None:
        rows = self.rows("SELECT * FROM repos WHERE name = ?", (name,))
        return RepoRow.from_row(rows[0]) if rows else None

    def repo_by_id(self, repo_id: int) -> RepoRow | None:
        rows = self.rows("SELECT * FROM repos WHERE id = ?", (repo_id,))
        return RepoRow.from_row(rows[0]) if rows else None

    def repos(self) -> list[RepoRow]:
        return [RepoRow.from_row(r) for r in self.rows("SELECT * FROM repos ORDER BY name")]

    def repo_names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM repos ORDER BY name")]

    def remove_repo(self, repo_id: int) -> None:
        """Forget a repository and every row only it referenced, in one transaction."""
        with self.transaction() as db:
            doomed = [r[0] for r in db.execute("SELECT commit_id FROM repo_commits WHERE repo_id = ?", (repo_id,))]
            db.execute("DELETE FROM repo_commits WHERE repo_id = ?", (repo_id,))
            self._collect_commits(doomed)
            db.execute("DELETE FROM repos WHERE id = ?", (repo_id,))

    def record_attempt(self, repo_id: int, error: str | None, at: datetime, next_attempt: datetime | None = None) -> None:
        """Note a sync's outcome: success clears the error and the failure count."""
        if error is None:
            self.db.execute("UPDATE repos SET last_sync_at = ?, last_success_at = ?, last_error = NULL, failures = 0, "
                            "next_attempt_at = NULL WHERE id = ?", (_iso(at), _iso(at), repo_id))
        else:
            self.db.execute("UPDATE repos SET last_sync_at = ?, last_error = ?, failures = failures + 1, "
                            "next_attempt_at = ? WHERE id = ?", (_iso(at), error, _iso(next_attempt), repo_id))

    def set_mirror_path(self, repo_id: int, path: Path) -> None:
        self.db.execute("UPDATE repos SET mirror_path = ? WHERE id = ?", (str(path), repo_id))

    # -- refs ----------------------------------------------------------------
    def stored_tips(self, repo_id: int) -> dict[str, bytes]:
        return {name: target for name, target in
                self.db.execute("SELECT name, target FROM refs WHERE repo_id = ?", (repo_id,))}

    def replace_tips(self, repo_id: int, tips: dict[str, bytes]) -> None:
        self.db.execute("DELETE FROM refs WHERE repo_id = ?", (repo_id,))
        self.db.conn.executemany("INSERT INTO refs VALUES (?, ?, ?)", ((repo_id, n, t) for n, t in tips.items()))

    # -- commits -------------------------------------------------------------
    def author_ids(self) -> dict[tuple[str, str], int]:
        return {(n, e): i for i, n, e in self.db.execute("SELECT id, name, email FROM authors")}

    def insert_commits(self, repo_id: int, rows: Iterable[tuple], author_cache: dict[tuple[str, str], int],
                       progress: Callable[[int], None] | None = None) -> int:
        """Add commits `(oid, name, email, day, time, offset, parents, bits)` to a repository; return how many."""
        conn = self.db.conn
        seen_authors: set[int] = set()
        total = 0
        batch: list[tuple] = []

        def author_id(name: str, email: str) -> int:
            key = (name, email)
            found = author_cache.get(key)
            if found is None:
                conn.execute("INSERT OR IGNORE INTO authors (name, email) VALUES (?, ?)", key)
                found = conn.execute("SELECT id FROM authors WHERE name = ? AND email = ?", key).fetchone()[0]
                author_cache[key] = found
            return found

        # Ids are handed out here, so each row is one plain INSERT; only when other commits exist
        # (forks, or rows left by a fallback re-walk) are the batch's ids looked up first.
        next_id = (conn.execute("SELECT max(id) FROM commits").fetchone()[0] or 0) + 1
        others_exist = next_id > 1

        def flush() -> None:
            nonlocal next_id
            known: dict[bytes, int] = {}
            if others_exist:
                self._stage(r[0] for r in batch)
                known = dict(conn.execute("SELECT s.oid, c.id FROM staged s JOIN commits c ON c.oid = s.oid"))
            fresh, members = [], []
            for r in batch:
                commit_id = known.get(r[0])
                if commit_id is None:
                    commit_id = next_id
                    next_id += 1
                    known[r[0]] = commit_id
                    fresh.append((commit_id, r[0], r[1], r[3], r[4], r[5], r[6]))
                members.append((repo_id, commit_id, r[7]))
            if self.touched is not None:
                self.touched.update(m[1] for m in members)
            conn.executemany("INSERT INTO commits (id, oid, author_id, day, time, offset, parents) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)", fresh)
            conn.executemany("INSERT INTO repo_commits (repo_id, commit_id, bits) VALUES (?, ?, ?) "
                             "ON CONFLICT(repo_id, commit_id) DO UPDATE SET bits = excluded.bits", members)
            batch.clear()

        for oid, name, email, day, time_, offset, parents, bits in rows:
            author = author_id(name, email)
            seen_authors.add(author)
            batch.append((oid, author, None, day, time_, offset, parents, bits))
            if len(batch) >= BATCH:
                total += len(batch)
                flush()
                if progress:
                    progress(total)
        total += len(batch)
        flush()
        if progress:
            progress(total)
        # Placeholder identity rows; the engine's identity refresh fills them in, same transaction.
        self.db.conn.executemany("INSERT OR IGNORE INTO repo_authors VALUES (?, ?, 0, 0, 0, 0)",
                                 ((repo_id, a) for a in seen_authors))
        return total

    def member_oids(self, repo_id: int, lacking_bit: int | None = None) -> set[bytes]:
        """Ids of the repository's commits (only those lacking `lacking_bit`, when given)."""
        sql = "SELECT c.oid FROM repo_commits rc JOIN commits c ON c.id = rc.commit_id WHERE rc.repo_id = ?"
        params: tuple = (repo_id,)
        if lacking_bit is not None:
            sql += " AND (rc.bits & ?) = 0"
            params += (lacking_bit,)
        return {r[0] for r in self.db.execute(sql, params)}

    def member_bits(self, repo_id: int, oids: Iterable[bytes]) -> dict[bytes, int]:
        """The scope bits of those of `oids` the repository already has."""
        if not self._stage(oids):
            return {}
        return dict(self.db.execute("SELECT s.oid, rc.bits FROM staged s JOIN commits c ON c.oid = s.oid "
                                    "JOIN repo_commits rc ON rc.commit_id = c.id AND rc.repo_id = ?", (repo_id,)))

    def _stage(self, oids: Iterable[bytes]) -> int:
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS staged (oid BLOB PRIMARY KEY) WITHOUT ROWID")
        self.db.execute("DELETE FROM staged")
        self.db.conn.executemany("INSERT OR IGNORE INTO staged VALUES (?)", ((o,) for o in oids))
        return self.db.execute("SELECT count(*) FROM staged").fetchone()[0]

    def change_bit(self, repo_id: int, oids: Iterable[bytes], bit: int, on: bool) -> None:
        ids = self.commit_ids_for(oids)
        if self.touched is not None:
            self.touched.update(ids)
        expression = "bits | ?" if on else "bits & ~?"
        self.db.conn.executemany(f"UPDATE repo_commits SET bits = {expression} WHERE repo_id = ? AND commit_id = ?",
                                 ((bit, repo_id, i) for i in ids))

    def remove_members(self, repo_id: int, oids: Iterable[bytes]) -> int:
        ids = self.commit_ids_for(oids)
        if self.touched is not None:
            self.touched.update(ids)
        self.db.conn.executemany("DELETE FROM repo_commits WHERE repo_id = ? AND commit_id = ?", ((repo_id, i) for i in ids))
        self._collect_commits(ids)
        return len(ids)

    def _collect_commits(self, commit_ids: list[int]) -> None:
        """Delete commit rows no repository has any more."""
        self.db.conn.executemany(
            "DELETE FROM commits WHERE id = ? AND NOT EXISTS (SELECT 1 FROM repo_commits WHERE commit_id = ?)",
            ((i, i) for i in commit_ids))

    def commit_ids_for(self, oids: Iterable[bytes]) -> list[int]:
        if not self._stage(oids):
            return []
        return [r[0] for r in self.db.execute("SELECT c.id FROM staged s JOIN commits c ON c.oid = s.oid")]

    # -- identities ----------------------------------------------------------
    def repo_author_identities(self, repo_id: int) -> list[tuple[int, str, str]]:
        return [tuple(r) for r in self.db.execute(
            "SELECT a.id, a.name, a.email FROM repo_authors ra JOIN authors a ON a.id = ra.author_id WHERE ra.repo_id = ?",
            (repo_id,))]

    def person_ids(self, emails: Iterable[str]) -> dict[str, int]:
        emails = set(emails)
        self.db.conn.executemany("INSERT OR IGNORE INTO people (email) VALUES (?)", ((e,) for e in emails))
        found: dict[str, int] = {}
        for email in emails:
            found[email] = self.db.execute("SELECT id FROM people WHERE email = ?", (email,)).fetchone()[0]
        return found

    def set_repo_authors(self, repo_id: int, rows: Iterable[tuple[int, int, int, bool, bool]]) -> None:
        """Replace (author, person_mm, person_raw, bot_mm, bot_raw) for a repository."""
        self.db.conn.executemany(
            "INSERT INTO repo_authors VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(repo_id, author_id) DO UPDATE SET "
            "person_mm = excluded.person_mm, person_raw = excluded.person_raw, bot_mm = excluded.bot_mm, "
            "bot_raw = excluded.bot_raw",
            ((repo_id, a, pm, pr, int(bm), int(br)) for a, pm, pr, bm, br in rows))

    def repo_author_map(self, repo_id: int) -> list[tuple[int, int, int, int, int]]:
        return [tuple(r) for r in self.db.execute(
            "SELECT author_id, person_mm, person_raw, bot_mm, bot_raw FROM repo_authors WHERE repo_id = ?", (repo_id,))]

    def people_matching(self, person_ids: Iterable[int]) -> dict[int, str]:
        ids = list(set(int(i) for i in person_ids))
        found: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT id, email FROM people WHERE id IN ({marks})", chunk).fetchall())
        return found

    # -- the column cache ----------------------------------------------------
    def member_rows(self, repo_id: int) -> sqlite3.Cursor:
        return self.db.execute(
            "SELECT rc.commit_id, c.author_id, coalesce(c.day, -2147483648), rc.bits "
            "FROM repo_commits rc JOIN commits c ON c.id = rc.commit_id WHERE rc.repo_id = ?", (repo_id,))

    def member_rows_for(self, repo_id: int, commit_ids: Iterable[int]) -> list[tuple]:
        """member_rows, for just these commits (those the repository still has)."""
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS staged_ids (id INTEGER PRIMARY KEY)")
        self.db.execute("DELETE FROM staged_ids")
        self.db.conn.executemany("INSERT OR IGNORE INTO staged_ids VALUES (?)", ((int(i),) for i in commit_ids))
        return self.db.execute(
            "SELECT rc.commit_id, c.author_id, coalesce(c.day, -2147483648), rc.bits FROM staged_ids s "
            "JOIN repo_commits rc ON rc.repo_id = ? AND rc.commit_id = s.id JOIN commits c ON c.id = rc.commit_id",
            (repo_id,)).fetchall()

    def store_columns(self, repo_id: int, generation: int, rows: int, blobs: dict[str, bytes]) -> None:
        self.db.execute("INSERT INTO columns VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(repo_id) DO UPDATE SET "
                        "generation = excluded.generation, rows = excluded.rows, commit_ids = excluded.commit_ids, "
                        "author_ids = excluded.author_ids, days = excluded.days, bits = excluded.bits",
                        (repo_id, generation, rows, blobs["commit_ids"], blobs["author_ids"], blobs["days"], blobs["bits"]))

    def load_columns(self, repo_id: int) -> dict | None:
        rows = self.rows("SELECT * FROM columns WHERE repo_id = ?", (repo_id,))
        return rows[0] if rows else None

    def finish_update(self, repo_id: int, *, head_ref: str | None, mailmap_oid: str | None, commits: int,
                      skipped: int) -> int:
        """Bump the repository's generation (readers reload their caches) and store its summary."""
        self.db.execute("UPDATE repos SET generation = generation + 1, head_ref = ?, mailmap_oid = ?, commits = ?, "
                        "skipped = ? WHERE id = ?", (head_ref, mailmap_oid, commits, skipped, repo_id))
        return self.db.execute("SELECT generation FROM repos WHERE id = ?", (repo_id,)).fetchone()[0]

    def generations(self, repo_ids: Iterable[int]) -> dict[int, int]:
        ids = list(repo_ids)
        marks = ",".join("?" * len(ids))
        return dict(self.db.execute(f"SELECT id, generation FROM repos WHERE id IN ({marks})", ids).fetchall()) if ids else {}

    # -- paths ---------------------------------------------------------------
    def pending_path_commits(self, repo_id: int, limit: int, after: int = 0) -> list[tuple[int, bytes, int]]:
        """(id, oid, parents) of this repository's commits whose changed paths are not indexed yet.

        In id order (walk order: neighbours share trees), from the partial index of pending commits,
        resuming `after` an id: a join ordered over all of a million-commit repository's rows cost
        about a second a batch.
        """
        return [tuple(r) for r in self.db.execute(
            "SELECT c.id, c.oid, c.parents FROM commits c INDEXED BY commits_paths_pending "
            "WHERE c.paths_done = 0 AND c.id > ? AND EXISTS "
            "(SELECT 1 FROM repo_commits rc WHERE rc.repo_id = ? AND rc.commit_id = c.id) "
            "ORDER BY c.id LIMIT ?", (after, repo_id, limit))]

    def pending_path_count(self, repo_id: int) -> int:
        return self.db.execute("SELECT count(*) FROM repo_commits rc JOIN commits c ON c.id = rc.commit_id "
                               "WHERE rc.repo_id = ? AND c.paths_done = 0", (repo_id,)).fetchone()[0]

    def store_paths(self, changed: list[tuple[int, list[str]]], path_cache: dict[str, int]) -> None:
        """Record the paths each commit changed and mark the commits done (caller holds the transaction)."""
        conn = self.db.conn
        rows = []
        for commit_id, paths in changed:
            for path in paths:
                path_id = path_cache.get(path)
                if path_id is None:
                    conn.execute("INSERT OR IGNORE INTO paths (path) VALUES (?)", (path,))
                    path_id = conn.execute("SELECT id FROM paths WHERE path = ?", (path,)).fetchone()[0]
                    path_cache[path] = path_id
                rows.append((commit_id, path_id))
        conn.executemany("INSERT OR IGNORE INTO commit_paths (commit_id, path_id) VALUES (?, ?)", rows)
        conn.executemany("UPDATE commits SET paths_done = 1 WHERE id = ?", ((c,) for c, _ in changed))

    def path_ids(self) -> dict[str, int]:
        return {p: i for i, p in self.db.execute("SELECT id, path FROM paths")}

    def commits_touching(self, include: tuple[str, ...], exclude: tuple[str, ...]) -> list[int]:
        """Ids of commits that changed a path under some `include` prefix (any path when none) and not under `exclude`."""

        def under(prefixes: tuple[str, ...]) -> tuple[str, list[str]]:
            # "a/b" matches the file a/b and everything in the directory a/b/ (range scans on the unique index)
            clauses, params = [], []
            for prefix in prefixes:
                clauses.append("(p.path = ? OR (p.path >= ? AND p.path < ?))")
                params += [prefix, prefix + "/", prefix + "0"]  # '0' sorts right after '/'
            return " OR ".join(clauses), params

        where, params = [], []
        if include:
            clause, values = under(include)
            where.append(f"({clause})")
            params += values
        if exclude:
            clause, values = under(exclude)
            where.append(f"NOT ({clause})")
            params += values
        sql = ("SELECT DISTINCT cp.commit_id FROM paths p JOIN commit_paths cp ON cp.path_id = p.id"
               + (" WHERE " + " AND ".join(where) if where else ""))
        return [r[0] for r in self.db.execute(sql, params)]

    # -- projects ------------------------------------------------------------
    def project_repo_ids(self, name: str) -> list[int] | None:
        row = self.db.execute("SELECT id FROM projects WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        return [r[0] for r in self.db.execute("SELECT repo_id FROM project_repos WHERE project_id = ?", (row[0],))]

    def set_project(self, name: str, repo_ids: list[int]) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO projects (name, created_at) VALUES (?, ?)", (name, _iso(utcnow())))
            project_id = db.execute("SELECT id FROM projects WHERE name = ?", (name,)).fetchone()[0]
            db.conn.executemany("INSERT OR IGNORE INTO project_repos VALUES (?, ?)", ((project_id, r) for r in repo_ids))

    def remove_project(self, name: str) -> bool:
        return self.db.execute("DELETE FROM projects WHERE name = ?", (name,)).rowcount > 0

    def projects(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for project, repo in self.db.execute(
                "SELECT p.name, r.name FROM projects p LEFT JOIN project_repos pr ON pr.project_id = p.id "
                "LEFT JOIN repos r ON r.id = pr.repo_id ORDER BY p.name, r.name"):
            found.setdefault(project, [])
            if repo:
                found[project].append(repo)
        return found

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
        return self.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
