"""The SQLite index: what gad-bot knows about each repository's history, kept in one file.

sqlite-utils lives here. The schema grows by numbered migrations recorded in the
`migrations` table, so an older database opens with a newer gad-bot untouched by hand.

Tables (as of migration 6):
    repos         one row per tracked repository (source, mirror path relative to the data directory
                  since migration 14, sync state)
    refs          the ref tips the index last saw, per repository (peeled to commits)
    authors       raw (name, e-mail) identities, as written in commits
    people        person keys: lower-cased, maybe mailmapped, e-mails
    repo_authors  per repository: author -> person with and without the mailmap, bot flags
    commit_chunks per repository, its commits in append-only chunks of arrays (ids, authors, days,
                  parents; changed paths once indexed), in the order git walked them
    walks         an unfinished walk's frontier, so an interrupted first index resumes where it stopped
    derived       per repository, what the end of a walk derives: scope bits, parents as rows, sort orders
    paths         every changed path seen, once, with an id (for path:)
    meta          small key/value facts (e.g. the bot patterns the identities were built with)
    projects, project_repos                       several repositories counted as one (migration 2)
    subscriptions, subscription_repos, deliveries weekly digests and their exactly-once ledger (3)
    cocomo_cache                                  source line counts per (tree id, counter), for vs:cocomo (5)
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    import sqlite_utils



def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds") if moment else None


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _relative_mirror_paths(db: "sqlite_utils.Database", index: "Index") -> None:
    """Migration 14: each mirror's path relative to the data directory (see `stored_mirror_path`)."""
    rows = db.execute("SELECT id, name, mirror_path FROM repos WHERE in_place = 0").fetchall()
    for repo_id, name, stored in rows:
        path = Path(stored)
        # Absolute paths, or (with a relative GAD_DATA_DIR) paths relative to the directory gad-bot
        # was started in; a relative path that is neither is already relative to the data directory.
        written = Path(os.path.abspath(path))
        if not path.is_absolute() and _inside(written, index.data_dir) is None and ".." not in path.parts:
            continue
        db.execute("UPDATE repos SET mirror_path = ? WHERE id = ?",
                   (stored_mirror_path(written, index.data_dir, False, name), repo_id))


# Each migration is (version, name, statements); a statement is SQL, or a function of the open
# transaction and the index for what SQL cannot say. Never edit a shipped one; append.
MIGRATIONS: list[tuple[int, str, list[str | Callable[["sqlite_utils.Database", "Index"], None]]]] = [
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
    (6, "columnar", [
        # Commits move from one SQL row each to append-only chunks of arrays (issue 10): a first index
        # then costs what `git log` costs. Every repository is indexed again by its next sync (the
        # mirrors hold everything; projects, subscriptions and the delivery ledger are kept).
        "DROP INDEX IF EXISTS commits_paths_pending",
        "DROP TABLE IF EXISTS commit_paths",
        "DROP TABLE IF EXISTS paths",
        "DROP TABLE IF EXISTS repo_commits",
        "DROP TABLE IF EXISTS commits",
        "DROP TABLE IF EXISTS columns",
        "DELETE FROM refs",
        "UPDATE repos SET generation = 0, commits = 0, skipped = 0",
        # One row per chunk of up to CHUNK commits in walk order; a repository's rows are its chunks
        # in `seq` order. Changed paths (for `path:`) are filled in per chunk, later.
        """CREATE TABLE commit_chunks (
            id INTEGER PRIMARY KEY,
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            rows INTEGER NOT NULL,
            oids BLOB NOT NULL,
            author_ids BLOB NOT NULL,
            days BLOB NOT NULL,
            parent_counts BLOB NOT NULL,
            parent_oids BLOB NOT NULL,
            path_offsets BLOB,
            path_ids BLOB,
            UNIQUE (repo_id, seq))""",
        # An unfinished walk (a first index, or a large sync): where to resume after a crash.
        """CREATE TABLE walks (
            repo_id INTEGER PRIMARY KEY REFERENCES repos(id) ON DELETE CASCADE,
            pending TEXT NOT NULL,
            exclude TEXT NOT NULL,
            estimate INTEGER,
            started_at TEXT NOT NULL)""",
        # What a report reads besides the chunks, derived at the end of each walk: scope bits per row,
        # parents as row numbers, and the orders that make lookups and distinct counts single passes.
        """CREATE TABLE derived (
            repo_id INTEGER PRIMARY KEY REFERENCES repos(id) ON DELETE CASCADE,
            generation INTEGER NOT NULL,
            chunks INTEGER NOT NULL,
            rows INTEGER NOT NULL,
            bits BLOB NOT NULL,
            parent_rows BLOB NOT NULL,
            key_order BLOB NOT NULL,
            report_order BLOB NOT NULL)""",
        "CREATE TABLE paths (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE)",
    ]),
    (7, "guarded_sources", [
        # 1: the source was typed in Slack, so every fetch's connections are checked against the
        # source policy (bot/store/egress.py). Rows from before this migration cannot say who typed them:
        # every network URL is guarded (an operator's internal host is tracked again from the CLI).
        "ALTER TABLE repos ADD COLUMN guarded INTEGER NOT NULL DEFAULT 0",
        "UPDATE repos SET guarded = 1 WHERE in_place = 0 AND (source LIKE 'https://%' OR source LIKE 'ssh://%')",
    ]),
    (8, "webhook_deliveries", [
        # Every forge webhook accepted, by its delivery id (X-GitHub-Delivery, X-Gitlab-Event-UUID,
        # X-Gitea-Delivery): a second request with the same id is a replay and is refused. The forges'
        # signatures cover no timestamp, so the id is the only thing that names a delivery. Also
        # where `doctor` reads when the last webhook of each host arrived.
        """CREATE TABLE webhook_deliveries (
            delivery TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            received_at TEXT NOT NULL)""",
        "CREATE INDEX webhook_deliveries_host ON webhook_deliveries (host, received_at)",
    ]),
    (9, "forge_orgs", [
        # A forge organization (GitHub org or user, GitLab group with its subgroups, Gitea/Forgejo org)
        # tracked as a whole: its repositories are ordinary repos, its project (`name`) counts them as one.
        """CREATE TABLE forge_orgs (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            host TEXT NOT NULL,
            kind TEXT NOT NULL,
            owner TEXT NOT NULL,
            url TEXT NOT NULL,
            forks INTEGER NOT NULL DEFAULT 0,
            guarded INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            last_listed_at TEXT,
            last_error TEXT,
            UNIQUE (host, owner))""",
        # One row per repository the forge listed, matched by the forge's own id (names change).
        # state: pending (to track), tracked, gone (deleted upstream: still counted), dropped
        # (untracked by an admin: not tracked again), failed (cloning or indexing failed: tried again).
        """CREATE TABLE forge_org_repos (
            org_id INTEGER NOT NULL REFERENCES forge_orgs(id) ON DELETE CASCADE,
            forge_id TEXT NOT NULL,
            full_name TEXT NOT NULL,
            clone_url TEXT NOT NULL,
            repo_id INTEGER REFERENCES repos(id) ON DELETE SET NULL,
            state TEXT NOT NULL,
            archived INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            PRIMARY KEY (org_id, forge_id)) WITHOUT ROWID""",
        "CREATE INDEX forge_org_repos_repo ON forge_org_repos (repo_id)",
    ]),
    (10, "kept_answers", [
        # A private Slack answer as the person saw it, so its Share button posts exactly that
        # (bot/store/answers.py); `shared_at` set once, by whichever process takes the click first.
        """CREATE TABLE kept_answers (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            query TEXT NOT NULL,
            text TEXT NOT NULL,
            blocks TEXT NOT NULL,
            data_as_of TEXT,
            generations TEXT NOT NULL,
            created_at TEXT NOT NULL,
            shared_at TEXT,
            shared_by TEXT)""",
        "CREATE INDEX kept_answers_created ON kept_answers (created_at)",
    ]),
    (11, "slack_requests", [
        # The signature of every Slack request accepted over HTTP, until its timestamp leaves the
        # five-minute window: the same signed bytes posted again are a replay, after a restart too.
        """CREATE TABLE slack_requests (
            signature TEXT PRIMARY KEY,
            until INTEGER NOT NULL) WITHOUT ROWID""",
        "CREATE INDEX slack_requests_until ON slack_requests (until)",
    ]),
    (12, "coauthors", [
        # `Co-authored-by:` trailers (METRIC.md rule 7), read during the walk: per chunk, the rows that
        # name co-authors and the author id of each (int32 each, b"" when none). NULL: a chunk stored
        # before trailers were read; the next sync reads them for it (Indexer.fill_coauthors).
        "ALTER TABLE commit_chunks ADD COLUMN coauthor_rows BLOB",
        "ALTER TABLE commit_chunks ADD COLUMN coauthor_ids BLOB",
        # Automated co-authors (AI assistants, CI accounts; bot/metric.py is_automated_coauthor), with and
        # without the mailmap, like the bot flags; filled in by the identity refresh.
        "ALTER TABLE repo_authors ADD COLUMN automated_mm INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE repo_authors ADD COLUMN automated_raw INTEGER NOT NULL DEFAULT 0",
    ]),
    (13, "kept_answer_files", [
        # The CSV file a kept `format:csv` answer came with (its name and text), so that Share posts
        # the file too, not only the blocks; NULL for an answer without one.
        "ALTER TABLE kept_answers ADD COLUMN csv_name TEXT",
        "ALTER TABLE kept_answers ADD COLUMN csv TEXT",
    ]),
    (14, "relative_mirror_paths", [
        # Mirrors are named relative to the data directory: an index restored into another data
        # directory (a restore drill) then reads and writes that directory's mirrors, under its
        # locks, never the ones of the directory it was backed up from (issue 21).
        _relative_mirror_paths,
    ]),
    (15, "webhook_bodies", [
        # The SHA-256 of every forge webhook body accepted, per host, for an hour: the forges sign the body
        # only, so a captured body posted again under a new delivery id is told apart by its bytes. Rows go
        # once out of the hour, so the table holds at most an hour of deliveries.
        """CREATE TABLE webhook_bodies (
            host TEXT NOT NULL,
            digest TEXT NOT NULL,
            received_at TEXT NOT NULL,
            PRIMARY KEY (host, digest)) WITHOUT ROWID""",
        "CREATE INDEX webhook_bodies_received ON webhook_bodies (received_at)",
    ]),
    (16, "webhook_bodies_repository", [
        # The tracked repository a body was for ('' when none): a body is a duplicate of its body accepted last
        # only, since a GitLab push body holds no time and the same push again after another one (A->B, B->A,
        # A->B) is new.
        "ALTER TABLE webhook_bodies ADD COLUMN repository TEXT NOT NULL DEFAULT ''",
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def _inside(path: Path, data_dir: Path) -> Path | None:
    """`path` (absolute) relative to `data_dir` when inside it, by name or once symbolic links are followed."""
    for directory in (data_dir.absolute(), data_dir.resolve()):
        for candidate in (path, path.resolve()):
            if candidate.is_relative_to(directory) and candidate != directory:
                return candidate.relative_to(directory)
    return None


def stored_mirror_path(path: Path, data_dir: Path, in_place: bool, name: str) -> str:
    """How the index stores a repository's mirror path: relative to the data directory, so that the index
    works wherever the data directory is (moved, or restored elsewhere), and never names another one's
    mirrors. An in-place repository's path is the operator's own repository, outside it: kept absolute."""
    if in_place:
        return str(path)
    path = Path(os.path.abspath(path))
    inside = _inside(path, data_dir)
    if inside is not None:
        return str(inside)
    made_in = path.parent.parent if path.parent.name == "mirrors" else path.parent
    raise ConfigError(f"The mirror of `{name}` is {path}, outside the data directory {data_dir}, and gad-bot writes "
                      f"only mirrors of its own data directory; open this index once in the data directory it was "
                      f"made in (GAD_DATA_DIR={made_in}), so that its mirror paths are stored relative to it, then "
                      f"back it up and restore it here again.")


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
    guarded: bool = False  # typed in Slack: fetches go through the source policy

    @classmethod
    def from_row(cls, row: dict, data_dir: Path) -> "RepoRow":
        """A stored row; its mirror path resolved against the data directory the index is read in."""
        return cls(id=row["id"], name=row["name"], source=row["source"], mirror_path=data_dir / row["mirror_path"],
                   in_place=bool(row["in_place"]), head_ref=row["head_ref"], mailmap_oid=row["mailmap_oid"],
                   generation=row["generation"], commits=row["commits"], skipped=row["skipped"],
                   created_at=parse_time(row["created_at"]), last_sync_at=parse_time(row["last_sync_at"]),
                   last_success_at=parse_time(row["last_success_at"]), last_error=row["last_error"],
                   failures=row["failures"], next_attempt_at=parse_time(row["next_attempt_at"]),
                   guarded=bool(row["guarded"]))


CHUNK_COLUMNS = ("oids", "author_ids", "days", "parent_counts", "parent_oids", "path_offsets", "path_ids",
                 "coauthor_rows", "coauthor_ids")
DERIVED_COLUMNS = ("bits", "parent_rows", "key_order", "report_order")


@dataclass(frozen=True)
class ChunkRow:
    """One stored chunk of commits (arrays as bytes: bot/store/store.py gives them their numpy types)."""

    seq: int
    rows: int
    oids: bytes | None = None  # rows x 20 raw ids
    author_ids: bytes | None = None  # int32, ids in `authors`
    days: bytes | None = None  # int32 epoch days, BAD_DAY for impossible dates
    parent_counts: bytes | None = None  # uint8
    parent_oids: bytes | None = None  # sum(parent_counts) x 20
    path_offsets: bytes | None = None  # int32, rows + 1; None until the chunk's paths are indexed
    path_ids: bytes | None = None  # int32 ids in `paths`
    coauthor_rows: bytes | None = None  # int32 rows (ascending) naming a co-author, once per co-author
    coauthor_ids: bytes | None = None  # int32 ids in `authors`, one per entry of coauthor_rows


@dataclass(frozen=True)
class DerivedRow:
    """What the end of a walk derived from a repository's first `chunks` chunks (`rows` commits)."""

    generation: int
    chunks: int
    rows: int
    bits: bytes | None = None  # uint8 scope bits per row; 0: no longer reachable
    parent_rows: bytes | None = None  # int32 parents as rows, in row order (CSR with the parent counts)
    key_order: bytes | None = None  # int32 rows sorted by commit key
    report_order: bytes | None = None  # int32 rows sorted by (mailmapped person, day)


@dataclass(frozen=True)
class WalkState:
    """An unfinished walk: the commits still to visit (hex), the tips whose history is already indexed."""

    pending: list[str]
    exclude: list[str]
    estimate: int | None
    started_at: datetime | None


_LAST_REMOVED_REPO_ID = "last_removed_repo_id"  # meta: no repository is given an id at or below it


def _other_refs_key(repo_id: int) -> str:
    return f"other_refs_pending:{repo_id}"


def _create_private(path: Path) -> None:
    """Create the database file readable by the service user only (before SQLite creates it 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


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
    The caller makes sure no `serve` runs (bot/faces/liveness.py holds its lock meanwhile).
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
                raise refuse(f"fails SQLite's integrity check ({problems[0][:200]})")
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


def _use_wal(conn: sqlite3.Connection, patience: float = 30.0) -> None:
    """Switch the file to WAL (it stays so). On a new file, several processes opening it at once (serve's workers
    at start) race for the switch, and SQLite answers the losers "database is locked" at once, without waiting
    on busy_timeout: they try again until the winner is done."""
    deadline = time.monotonic() + patience
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Index:
    """One connection per thread to the index file; writers take one transaction per repository update."""

    def __init__(self, path: Path, *, migrate: bool = True, data_dir: Path | None = None):
        self.path = path
        # What mirror paths are relative to: the directory the index file lies in (Settings.index_path),
        # unless told otherwise (a restore migrates the incoming copy before it is renamed into place).
        self.data_dir = data_dir or path.parent
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
    def conn(self) -> sqlite3.Connection:
        """This thread's connection; every query of this module goes through it."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA busy_timeout = 30000")  # readers and writers wait rather than fail
            _use_wal(conn)  # readers never block on a sync's transaction
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at checkpoints, never corrupt
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA cache_size = -65536")  # 64 MiB
            self._local.conn = conn
        return conn

    @property
    def db(self) -> "sqlite_utils.Database":
        """The same connection as a sqlite-utils Database, for the writers that use its helpers.

        Imported on first use: sqlite-utils (and click, dateutil, pluggy behind it) cost 70-170 ms of
        start-up that `gad-bot report`, which only reads, does not need (measured with -X importtime).
        """
        db = getattr(self._local, "db", None)
        if db is None:
            import sqlite_utils

            db = sqlite_utils.Database(self.conn)
            self._local.db = db
        return db

    def execute(self, sql: str, params: Iterable = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, tuple(params))

    def rows(self, sql: str, params: Iterable = ()) -> list[dict]:
        cursor = self.conn.execute(sql, tuple(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            self._local.db = None

    @contextmanager
    def transaction(self) -> Iterator["sqlite_utils.Database"]:
        """BEGIN IMMEDIATE ... COMMIT; anything raised rolls the whole update back."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one committed state (WAL: a read transaction), unless already in a transaction."""
        conn = self.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")

    # -- schema --------------------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply every migration the file lacks, each in its own transaction; return those applied."""
        applied: list[int] = []
        with self._lock:
            # Reads first: a database that is up to date must open without taking the write lock,
            # or every reader would queue behind a long sync transaction.
            has_table = self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone()
            if has_table and self.schema_version() == SCHEMA_VERSION:
                return applied
            if not has_table:
                self.conn.execute("CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, "
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
                        if callable(statement):
                            statement(db, self)
                        else:
                            db.execute(statement)
                    db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (version, name, _iso(utcnow())))
                    applied.append(version)
        return applied

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT max(version) FROM migrations").fetchone()
        return row[0] or 0

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    # -- webhook deliveries ------------------------------------------------------
    def record_delivery(self, delivery: str, host: str, at: datetime, keep: timedelta) -> bool:
        """Remember a webhook delivery id; False when it was already there (a replay). Ids older than `keep` go."""
        return self._remember_once("webhook_deliveries", (delivery, host), at, keep)

    def delivery_seen(self, delivery: str, since: datetime) -> bool:
        """Whether a webhook delivery id was recorded at `since` or later (nothing is recorded)."""
        return self.conn.execute("SELECT 1 FROM webhook_deliveries WHERE delivery = ? AND received_at >= ?",
                                 (delivery, _iso(since))).fetchone() is not None

    def record_webhook_body(self, host: str, digest: str, at: datetime, keep: timedelta, repository: str = "") -> str:
        """Remember the digest of a webhook body `host` sent: '' (a duplicate) when it is there already (the same
        body again, under another delivery id), 'new' when it was not, 'again' when it was but is taken anew.
        Digests older than `keep` go. With `repository` (the tracked repository the body is for), a body is a
        duplicate of the last one accepted for its repository only, since a push's body need not name its time
        (GitLab's: A->B, B->A, then A->B again repeats the first body, and is a new push): a body that another
        one for its repository followed is taken 'again', and its row made the latest (no second row)."""
        # to the microsecond: which body came last for a repository, even of several sent within one second
        received = at.astimezone(timezone.utc).isoformat(timespec="microseconds")
        with self.transaction() as db:
            db.execute("DELETE FROM webhook_bodies WHERE received_at < ?", (_iso(at - keep),))
            seen = db.execute("SELECT received_at FROM webhook_bodies WHERE host = ? AND digest = ?",
                              (host, digest)).fetchone()
            if seen is None:
                db.execute("INSERT INTO webhook_bodies (host, digest, received_at, repository) VALUES (?, ?, ?, ?)",
                           (host, digest, received, repository))
                return "new"
            followed = repository and db.execute(
                "SELECT 1 FROM webhook_bodies WHERE host = ? AND repository = ? AND digest != ? AND received_at > ?",
                (host, repository, digest, seen[0])).fetchone()
            if not followed:
                return ""
            db.execute("UPDATE webhook_bodies SET received_at = ?, repository = ? WHERE host = ? AND digest = ?",
                       (received, repository, host, digest))
            return "again"

    def _remember_once(self, table: str, key: tuple[str, str], at: datetime, keep: timedelta) -> bool:
        """Insert `key` received `at` into `table` (key columns, then received_at) unless it is there; rows
        received before `at - keep` are forgotten first. True when it was new."""
        with self.transaction() as db:
            db.execute(f"DELETE FROM {table} WHERE received_at < ?", (_iso(at - keep),))
            cursor = db.execute(f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?)", (*key, _iso(at)))
            return cursor.rowcount == 1

    def record_slack_request(self, signature: str, until: int, now: float) -> bool:
        """Remember a Slack request's signature until `until` (epoch seconds); False when it was
        already there (a replay). Signatures whose time has passed are forgotten first."""
        with self.transaction() as db:
            db.execute("DELETE FROM slack_requests WHERE until < ?", (int(now),))
            cursor = db.execute("INSERT OR IGNORE INTO slack_requests VALUES (?, ?)", (signature, until))
            return cursor.rowcount == 1

    def last_deliveries(self) -> dict[str, datetime]:
        """When the last webhook of each forge host was accepted."""
        rows = self.conn.execute("SELECT host, max(received_at) FROM webhook_deliveries GROUP BY host").fetchall()
        return {host: parse_time(when) for host, when in rows}

    # -- repositories --------------------------------------------------------
    def add_repo(self, name: str, source: str, mirror_path: Path, in_place: bool, guarded: bool = False) -> int:
        """A new repository's row; its id was never any other repository's (see remove_repo)."""
        cursor = self.conn.execute(
            "INSERT INTO repos (id, name, source, mirror_path, in_place, created_at, guarded) VALUES "
            "(max(coalesce((SELECT max(id) FROM repos), 0), coalesce((SELECT CAST(value AS INTEGER) FROM meta "
            "WHERE key = ?), 0)) + 1, ?, ?, ?, ?, ?, ?)",
            (_LAST_REMOVED_REPO_ID, name, source, stored_mirror_path(mirror_path, self.data_dir, in_place, name),
             int(in_place), _iso(utcnow()), int(guarded)))
        return cursor.lastrowid

    def repo_row(self, row: dict) -> RepoRow:
        """A `repos` row as read by any query (`SELECT * FROM repos`, or joined), its mirror path resolved here."""
        return RepoRow.from_row(row, self.data_dir)

    def repo(self, name: str) -> RepoRow | None:
        rows = self.rows("SELECT * FROM repos WHERE name = ?", (name,))
        return self.repo_row(rows[0]) if rows else None

    def repo_by_id(self, repo_id: int) -> RepoRow | None:
        rows = self.rows("SELECT * FROM repos WHERE id = ?", (repo_id,))
        return self.repo_row(rows[0]) if rows else None

    def repos(self) -> list[RepoRow]:
        return [self.repo_row(r) for r in self.rows("SELECT * FROM repos ORDER BY name")]

    def repo_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM repos ORDER BY name")]

    def remove_repo(self, repo_id: int) -> None:
        """Forget a repository and everything stored for it, in one transaction (cascades)."""
        with self.transaction() as db:
            db.execute("DELETE FROM repos WHERE id = ?", (repo_id,))
            db.execute("DELETE FROM meta WHERE key = ?", (_other_refs_key(repo_id),))
            # SQLite would give this id to the next row inserted; the processes' caches (serve's columns, the
            # Home tab's weeks) key a repository by id and generation, so a repository tracked next, as often
            # synced, would be answered with this one's history. The highest id removed is kept instead.
            db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                       "value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                       (_LAST_REMOVED_REPO_ID, str(repo_id)))

    def other_refs_pending(self, repo_id: int) -> bool:
        """Whether the refs outside branches and tags of a first index are still to be walked."""
        return self.get_meta(_other_refs_key(repo_id)) == "1"

    def set_other_refs_pending(self, repo_id: int, pending: bool) -> None:
        if pending:
            self.set_meta(_other_refs_key(repo_id), "1")
        else:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (_other_refs_key(repo_id),))

    def record_attempt(self, repo_id: int, error: str | None, at: datetime, next_attempt: datetime | None = None) -> None:
        """Note a sync's outcome: success clears the error and the failure count."""
        if error is None:
            self.conn.execute("UPDATE repos SET last_sync_at = ?, last_success_at = ?, last_error = NULL, failures = 0, "
                            "next_attempt_at = NULL WHERE id = ?", (_iso(at), _iso(at), repo_id))
        else:
            self.conn.execute("UPDATE repos SET last_sync_at = ?, last_error = ?, failures = failures + 1, "
                            "next_attempt_at = ? WHERE id = ?", (_iso(at), error, _iso(next_attempt), repo_id))

    def set_mirror_path(self, repo_id: int, path: Path) -> None:
        repo = self.repo_by_id(repo_id)
        self.conn.execute("UPDATE repos SET mirror_path = ? WHERE id = ?",
                          (stored_mirror_path(path, self.data_dir, repo.in_place, repo.name), repo_id))

    # -- refs ----------------------------------------------------------------
    def stored_tips(self, repo_id: int) -> dict[str, bytes]:
        return {name: target for name, target in
                self.conn.execute("SELECT name, target FROM refs WHERE repo_id = ?", (repo_id,))}

    def replace_tips(self, repo_id: int, tips: dict[str, bytes]) -> None:
        self.conn.execute("DELETE FROM refs WHERE repo_id = ?", (repo_id,))
        self.conn.executemany("INSERT INTO refs VALUES (?, ?, ?)", ((repo_id, n, t) for n, t in tips.items()))

    # -- commit chunks -------------------------------------------------------
    def chunk_count(self, repo_id: int) -> int:
        return self.conn.execute("SELECT count(*) FROM commit_chunks WHERE repo_id = ?", (repo_id,)).fetchone()[0]

    def append_chunk(self, repo_id: int, chunk: ChunkRow) -> None:
        """Add a chunk after the repository's last one (caller holds the transaction)."""
        self.conn.execute(
            "INSERT INTO commit_chunks (repo_id, seq, rows, oids, author_ids, days, parent_counts, parent_oids, "
            "path_offsets, path_ids, coauthor_rows, coauthor_ids) VALUES (?, (SELECT coalesce(max(seq), -1) + 1 "
            "FROM commit_chunks WHERE repo_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (repo_id, repo_id, chunk.rows, chunk.oids, chunk.author_ids, chunk.days, chunk.parent_counts,
             chunk.parent_oids, chunk.path_offsets, chunk.path_ids, chunk.coauthor_rows, chunk.coauthor_ids))

    def replace_chunks(self, repo_id: int, chunks: Iterable[ChunkRow]) -> None:
        """Rewrite a repository's chunks (compaction; caller holds the transaction)."""
        self.conn.execute("DELETE FROM commit_chunks WHERE repo_id = ?", (repo_id,))
        for chunk in chunks:
            self.append_chunk(repo_id, chunk)

    def chunks(self, repo_id: int, *, first: int = 0, limit: int | None = None,
               columns: tuple[str, ...] = CHUNK_COLUMNS) -> list[ChunkRow]:
        """The repository's chunks in order, from the `first`-th, at most `limit` of them, with only `columns`."""
        wanted = [c for c in CHUNK_COLUMNS if c in columns]
        selected = ", ".join(["seq", "rows", *wanted])
        rows = self.conn.execute(f"SELECT {selected} FROM commit_chunks WHERE repo_id = ? ORDER BY seq "
                               f"LIMIT ? OFFSET ?", (repo_id, -1 if limit is None else limit, first)).fetchall()
        return [ChunkRow(seq=r[0], rows=r[1], **dict(zip(wanted, r[2:]))) for r in rows]

    def chunk(self, repo_id: int, seq: int, columns: tuple[str, ...] = CHUNK_COLUMNS) -> ChunkRow:
        wanted = [c for c in CHUNK_COLUMNS if c in columns]
        row = self.conn.execute(f"SELECT seq, rows{''.join(', ' + c for c in wanted)} FROM commit_chunks "
                              "WHERE repo_id = ? AND seq = ?", (repo_id, seq)).fetchone()
        return ChunkRow(seq=row[0], rows=row[1], **dict(zip(wanted, row[2:])))

    def chunks_lacking_paths(self, repo_id: int) -> list[tuple[int, int]]:
        """(seq, rows) of the chunks whose changed paths are not indexed yet."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT seq, rows FROM commit_chunks WHERE repo_id = ? AND path_offsets IS NULL ORDER BY seq", (repo_id,))]

    def chunk_path_state(self, repo_id: int, chunks: int) -> tuple[int, int]:
        """(commits whose paths are indexed, commits) over the repository's first `chunks` chunks."""
        row = self.conn.execute(
            "SELECT coalesce(sum(CASE WHEN path_offsets IS NULL THEN 0 ELSE rows END), 0), coalesce(sum(rows), 0) "
            "FROM (SELECT rows, path_offsets FROM commit_chunks WHERE repo_id = ? ORDER BY seq LIMIT ?)",
            (repo_id, chunks)).fetchone()
        return int(row[0]), int(row[1])

    def store_chunk_paths(self, repo_id: int, seq: int, offsets: bytes, path_ids: bytes) -> None:
        self.conn.execute("UPDATE commit_chunks SET path_offsets = ?, path_ids = ? WHERE repo_id = ? AND seq = ?",
                        (offsets, path_ids, repo_id, seq))

    def chunks_lacking_coauthors(self, repo_id: int, *, paths_done: bool = False) -> list[int]:
        """Seqs of the chunks whose co-author trailers are not read yet (paths_done: only those whose changed
        paths are, which the paths phase will not read again)."""
        also = " AND path_offsets IS NOT NULL" if paths_done else ""
        return [r[0] for r in self.conn.execute(
            f"SELECT seq FROM commit_chunks WHERE repo_id = ? AND coauthor_rows IS NULL{also} ORDER BY seq", (repo_id,))]

    def store_chunk_coauthors(self, repo_id: int, seq: int, rows: bytes, author_ids: bytes) -> None:
        self.conn.execute("UPDATE commit_chunks SET coauthor_rows = ?, coauthor_ids = ? WHERE repo_id = ? AND seq = ?",
                          (rows, author_ids, repo_id, seq))

    # -- walks ---------------------------------------------------------------
    def walk(self, repo_id: int) -> WalkState | None:
        row = self.conn.execute("SELECT pending, exclude, estimate, started_at FROM walks WHERE repo_id = ?",
                              (repo_id,)).fetchone()
        if row is None:
            return None
        return WalkState(pending=[h for h in row[0].split() if h], exclude=[h for h in row[1].split() if h],
                         estimate=row[2], started_at=parse_time(row[3]))

    def save_walk(self, repo_id: int, pending: Iterable[str], exclude: Iterable[str], estimate: int | None) -> None:
        self.conn.execute("INSERT INTO walks VALUES (?, ?, ?, ?, ?) ON CONFLICT(repo_id) DO UPDATE SET "
                        "pending = excluded.pending, exclude = excluded.exclude, estimate = excluded.estimate",
                        (repo_id, "\n".join(pending), "\n".join(exclude), estimate, _iso(utcnow())))

    def end_walk(self, repo_id: int) -> None:
        self.conn.execute("DELETE FROM walks WHERE repo_id = ?", (repo_id,))

    # -- derived arrays --------------------------------------------------------
    def set_derived_generation(self, repo_id: int, generation: int) -> None:
        """The derived arrays stand as they are for a new generation (only what readers load beside them changed)."""
        self.conn.execute("UPDATE derived SET generation = ? WHERE repo_id = ?", (generation, repo_id))

    def store_derived(self, repo_id: int, derived: DerivedRow) -> None:
        self.conn.execute(
            "INSERT INTO derived VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(repo_id) DO UPDATE SET "
            "generation = excluded.generation, chunks = excluded.chunks, rows = excluded.rows, bits = excluded.bits, "
            "parent_rows = excluded.parent_rows, key_order = excluded.key_order, report_order = excluded.report_order",
            (repo_id, derived.generation, derived.chunks, derived.rows, derived.bits, derived.parent_rows,
             derived.key_order, derived.report_order))

    def derived(self, repo_id: int, columns: tuple[str, ...] = DERIVED_COLUMNS) -> DerivedRow | None:
        wanted = [c for c in DERIVED_COLUMNS if c in columns]
        row = self.conn.execute(f"SELECT generation, chunks, rows{''.join(', ' + c for c in wanted)} FROM derived "
                              "WHERE repo_id = ?", (repo_id,)).fetchone()
        if row is None:
            return None
        return DerivedRow(generation=row[0], chunks=row[1], rows=row[2], **dict(zip(wanted, row[3:])))

    def note_authors(self, repo_id: int, author_ids: Iterable[int]) -> None:
        """Placeholder identity rows for authors new to the repository; the identity refresh fills them in."""
        self.conn.executemany("INSERT OR IGNORE INTO repo_authors VALUES (?, ?, 0, 0, 0, 0, 0, 0)",
                                 ((repo_id, int(a)) for a in author_ids))

    def has_placeholder_authors(self, repo_id: int) -> bool:
        """Whether some identity of the repository still waits for the identity refresh (person 0: none yet)."""
        return self.conn.execute("SELECT 1 FROM repo_authors WHERE repo_id = ? AND person_mm = 0 LIMIT 1",
                                 (repo_id,)).fetchone() is not None

    def author_ids_for(self, identities: list[tuple[str, str]], cache: dict[tuple[str, str], int]) -> list[int]:
        """Ids of raw (name, e-mail) identities, adding the new ones (caller holds the transaction)."""
        missing = [i for i in dict.fromkeys(identities) if i not in cache]
        if missing:
            self.conn.executemany("INSERT OR IGNORE INTO authors (name, email) VALUES (?, ?)", missing)
            for start in range(0, len(missing), 400):
                part = missing[start:start + 400]
                clause = " OR ".join(["(name = ? AND email = ?)"] * len(part))
                for author_id, name, email in self.conn.execute(
                        f"SELECT id, name, email FROM authors WHERE {clause}", [v for pair in part for v in pair]):
                    cache[(name, email)] = author_id
        return [cache[i] for i in identities]

    def author_ids(self) -> dict[tuple[str, str], int]:
        return {(n, e): i for i, n, e in self.conn.execute("SELECT id, name, email FROM authors")}

    # -- identities ----------------------------------------------------------
    def repo_author_identities(self, repo_id: int) -> list[tuple[int, str, str]]:
        return [tuple(r) for r in self.conn.execute(
            "SELECT a.id, a.name, a.email FROM repo_authors ra JOIN authors a ON a.id = ra.author_id WHERE ra.repo_id = ?",
            (repo_id,))]

    def person_ids(self, emails: Iterable[str]) -> dict[str, int]:
        emails = set(emails)
        self.conn.executemany("INSERT OR IGNORE INTO people (email) VALUES (?)", ((e,) for e in emails))
        found: dict[str, int] = {}
        ordered = sorted(emails)
        for start in range(0, len(ordered), 500):
            part = ordered[start:start + 500]
            marks = ",".join("?" * len(part))
            found.update({e: i for i, e in self.conn.execute(f"SELECT id, email FROM people WHERE email IN ({marks})", part)})
        return found

    def set_repo_authors(self, repo_id: int, rows: Iterable[tuple[int, int, int, bool, bool, bool, bool]]) -> None:
        """Replace (author, person_mm, person_raw, bot_mm, bot_raw, automated_mm, automated_raw) for a repository."""
        self.conn.executemany(
            "INSERT INTO repo_authors VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(repo_id, author_id) DO UPDATE SET "
            "person_mm = excluded.person_mm, person_raw = excluded.person_raw, bot_mm = excluded.bot_mm, "
            "bot_raw = excluded.bot_raw, automated_mm = excluded.automated_mm, automated_raw = excluded.automated_raw",
            ((repo_id, a, pm, pr, int(bm), int(br), int(am), int(ar)) for a, pm, pr, bm, br, am, ar in rows))

    def repo_author_map(self, repo_id: int) -> list[tuple[int, int, int, int, int, int, int]]:
        """(author, person_mm, person_raw, bot_mm, bot_raw, automated_mm, automated_raw) of a repository."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT author_id, person_mm, person_raw, bot_mm, bot_raw, automated_mm, automated_raw FROM repo_authors "
            "WHERE repo_id = ?", (repo_id,))]

    def people_matching(self, person_ids: Iterable[int]) -> dict[int, str]:
        ids = list(set(int(i) for i in person_ids))
        found: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.conn.execute(f"SELECT id, email FROM people WHERE id IN ({marks})", chunk).fetchall())
        return found

    def finish_update(self, repo_id: int, *, head_ref: str | None, mailmap_oid: str | None, commits: int,
                      skipped: int) -> int:
        """Bump the repository's generation (readers reload their caches) and store its summary."""
        self.conn.execute("UPDATE repos SET generation = generation + 1, head_ref = ?, mailmap_oid = ?, commits = ?, "
                        "skipped = ? WHERE id = ?", (head_ref, mailmap_oid, commits, skipped, repo_id))
        return self.conn.execute("SELECT generation FROM repos WHERE id = ?", (repo_id,)).fetchone()[0]

    def generations(self, repo_ids: Iterable[int]) -> dict[int, int]:
        ids = list(repo_ids)
        marks = ",".join("?" * len(ids))
        return dict(self.conn.execute(f"SELECT id, generation FROM repos WHERE id IN ({marks})", ids).fetchall()) if ids else {}

    # -- paths ---------------------------------------------------------------
    def path_ids(self, paths: Iterable[str], cache: dict[str, int]) -> None:
        """Make sure every path has an id in `cache`, adding new paths (caller holds the transaction)."""
        missing = [p for p in dict.fromkeys(paths) if p not in cache]
        if not missing:
            return
        self.conn.executemany("INSERT OR IGNORE INTO paths (path) VALUES (?)", ((p,) for p in missing))
        for start in range(0, len(missing), 500):
            part = missing[start:start + 500]
            marks = ",".join("?" * len(part))
            cache.update({p: i for i, p in self.conn.execute(f"SELECT id, path FROM paths WHERE path IN ({marks})", part)})

    def all_path_ids(self) -> dict[str, int]:
        return {p: i for i, p in self.conn.execute("SELECT id, path FROM paths")}

    def max_path_id(self) -> int:
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM paths").fetchone()[0]

    def path_ids_under(self, prefixes: tuple[str, ...]) -> list[int]:
        """Ids of the paths equal to a prefix or inside it as a directory (`a/b` matches `a/b` and `a/b/...`)."""
        found: list[int] = []
        for prefix in prefixes:
            # range scans on the unique index: '0' sorts right after '/'
            found += [r[0] for r in self.conn.execute(
                "SELECT id FROM paths WHERE path = ? OR (path >= ? AND path < ?)", (prefix, prefix + "/", prefix + "0"))]
        return found

    # -- projects ------------------------------------------------------------
    def set_project(self, name: str, repo_ids: list[int]) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO projects (name, created_at) VALUES (?, ?)", (name, _iso(utcnow())))
            project_id = db.execute("SELECT id FROM projects WHERE name = ?", (name,)).fetchone()[0]
            db.conn.executemany("INSERT OR IGNORE INTO project_repos VALUES (?, ?)", ((project_id, r) for r in repo_ids))

    def project_repo_rows(self, name: str) -> tuple[list[str], list[tuple]] | None:
        """A project's `repos` rows, by id, as column names and each row's values (None: no such project).
        Values, not RepoRows: the engine builds one (repo_row) only for a row that changed since it last read it."""
        if self.conn.execute("SELECT 1 FROM projects WHERE name = ?", (name,)).fetchone() is None:
            return None
        cursor = self.conn.execute("SELECT r.* FROM projects p JOIN project_repos pr ON pr.project_id = p.id "
                                   "JOIN repos r ON r.id = pr.repo_id WHERE p.name = ? ORDER BY r.id", (name,))
        return [d[0] for d in cursor.description], cursor.fetchall()

    def remove_project(self, name: str) -> bool:
        return self.conn.execute("DELETE FROM projects WHERE name = ?", (name,)).rowcount > 0

    def projects(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for project, repo in self.conn.execute(
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
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
