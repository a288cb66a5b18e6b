"""The schema: numbered migrations recorded in the `migrations` table, so an older database opens with a
newer gad-bot untouched by hand.

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

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ConfigError
from .base import IndexFile, _iso, utcnow
from .repos import _inside, stored_mirror_path

if TYPE_CHECKING:
    import sqlite_utils

log = logging.getLogger(__name__)



def _relative_mirror_paths(db: "sqlite_utils.Database", index: IndexFile) -> None:
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


OPEN_BEFORE_AUDIENCES = "open_before_audiences"  # meta: repositories tracked before audiences existed, open to all


def _note_open_before_audiences(db: "sqlite_utils.Database", index: IndexFile) -> None:
    """Migration 17: remember (for doctor) and say once (in the log) how many repositories stay open to everyone."""
    count = db.execute("SELECT count(*) FROM repos").fetchone()[0]
    if count:
        db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                   (OPEN_BEFORE_AUDIENCES, str(count)))
        log.warning("%d repositories tracked before audiences existed stay open to everyone in the workspace, as "
                    "they were; review who may see each with `gad-bot access NAME` (docs/operations.md)", count)


# Each migration is (version, name, statements); a statement is SQL, or a function of the open
# transaction and the index for what SQL cannot say. Never edit a shipped one; append.
MIGRATIONS: list[tuple[int, str, list[str | Callable[["sqlite_utils.Database", IndexFile], None]]]] = [
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
    (17, "audiences", [
        # Who may see a repository, a project (an organization's audience is its project's): `everyone`,
        # `admins`, or Slack ids (bot/engine/audiences.py). What was tracked before stays open to everyone, as
        # it was; `audience_own` = 0 marks a repository that follows its organization's audience.
        "ALTER TABLE repos ADD COLUMN audience TEXT NOT NULL DEFAULT 'everyone'",
        "ALTER TABLE repos ADD COLUMN audience_own INTEGER NOT NULL DEFAULT 1",
        "UPDATE repos SET audience_own = 0 WHERE id IN (SELECT repo_id FROM forge_org_repos WHERE repo_id IS NOT NULL)",
        "ALTER TABLE projects ADD COLUMN audience TEXT NOT NULL DEFAULT 'everyone'",
        # whether the forge lists a repository as private: it starts as `admins` until an admin opens it
        "ALTER TABLE forge_org_repos ADD COLUMN private INTEGER NOT NULL DEFAULT 0",
        # addresses an admin added for a Slack member (`gad-bot teams alias`), beside their profile's
        """CREATE TABLE slack_aliases (
            user_id TEXT NOT NULL,
            email TEXT NOT NULL,
            added_at TEXT NOT NULL,
            PRIMARY KEY (user_id, email)) WITHOUT ROWID""",
        _note_open_before_audiences,
    ]),
    (18, "subscription_teams", [
        # `subscribe REPO team:@group`: a digest of those Slack user groups' people only (handles or ids, spaces)
        "ALTER TABLE subscriptions ADD COLUMN teams TEXT NOT NULL DEFAULT ''",
    ]),
    (19, "org_repo_failures", [
        # A repository of an organization that could not be cloned stays in sight (issue 32): how many tries
        # failed in a row, when the last one did, and when the periodic sync tries again (back-off).
        "ALTER TABLE forge_org_repos ADD COLUMN failures INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE forge_org_repos ADD COLUMN failed_at TEXT",
        "ALTER TABLE forge_org_repos ADD COLUMN next_attempt_at TEXT",
    ]),
    (20, "calibrations", [
        # `gad-bot calibrate ... --save NAME`: a team's measured ratio of logged person-days to 2GAD, kept so that
        # `calibrated:NAME` (or the default one) shows a report's figure beside its calibrated one
        # (bot/engine/calibrations.py reads and writes it).
        """CREATE TABLE calibrations (
            name TEXT PRIMARY KEY,
            ratio REAL NOT NULL,
            low REAL NOT NULL,
            high REAL NOT NULL,
            months INTEGER NOT NULL,
            first_day TEXT NOT NULL,
            last_day TEXT NOT NULL,
            repos TEXT NOT NULL,
            people INTEGER NOT NULL,
            is_default INTEGER NOT NULL DEFAULT 0,
            saved_at TEXT NOT NULL)""",
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


class Schema(IndexFile):
    # -- schema --------------------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply every migration the file lacks, each in its own transaction; return those applied."""
        applied: list[int] = []
        with self._lock:
            # Reads first: a database that is up to date must open without taking the write lock,
            # or every reader would queue behind a long sync transaction.
            has_table = self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone()
            # Up to date means every migration applied, not only the newest: two branches may each add one, and
            # the one merged second can have the lower number (a file at 19 still lacks 18).
            if has_table and self._applied_versions() >= {version for version, _, _ in MIGRATIONS}:
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

    def _applied_versions(self) -> set[int]:
        return {row[0] for row in self.conn.execute("SELECT version FROM migrations")}

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT max(version) FROM migrations").fetchone()
        return row[0] or 0
