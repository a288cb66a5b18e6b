"""The `repos` and `refs` tables: one row per tracked repository (source, mirror path, sync state) and the
ref tips the index last saw."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from collections.abc import Iterable

from ...errors import ConfigError
from .base import IndexFile, _iso, parse_time, utcnow


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
    audience: str = "everyone"  # who may see it, as stored (bot/engine/audiences.py reads it)
    audience_own: bool = True  # False: it follows its organization's audience

    @classmethod
    def from_row(cls, row: dict, data_dir: Path) -> "RepoRow":
        """A stored row; its mirror path resolved against the data directory the index is read in."""
        return cls(id=row["id"], name=row["name"], source=row["source"], mirror_path=data_dir / row["mirror_path"],
                   in_place=bool(row["in_place"]), head_ref=row["head_ref"], mailmap_oid=row["mailmap_oid"],
                   generation=row["generation"], commits=row["commits"], skipped=row["skipped"],
                   created_at=parse_time(row["created_at"]), last_sync_at=parse_time(row["last_sync_at"]),
                   last_success_at=parse_time(row["last_success_at"]), last_error=row["last_error"],
                   failures=row["failures"], next_attempt_at=parse_time(row["next_attempt_at"]),
                   guarded=bool(row["guarded"]), audience=row["audience"], audience_own=bool(row["audience_own"]))

_LAST_REMOVED_REPO_ID = "last_removed_repo_id"  # meta: no repository is given an id at or below it


def _other_refs_key(repo_id: int) -> str:
    return f"other_refs_pending:{repo_id}"


class Repos(IndexFile):
    # -- repositories --------------------------------------------------------
    def add_repo(self, name: str, source: str, mirror_path: Path, in_place: bool, guarded: bool = False,
                 audience: str = "admins", audience_own: bool = True) -> int:
        """A new repository's row; its id was never any other repository's (see remove_repo). Its audience is
        the caller's to decide (bot/engine/tracking.py): unless told, only admins see it."""
        cursor = self.conn.execute(
            "INSERT INTO repos (id, name, source, mirror_path, in_place, created_at, guarded, audience, audience_own) "
            "VALUES (max(coalesce((SELECT max(id) FROM repos), 0), coalesce((SELECT CAST(value AS INTEGER) FROM meta "
            "WHERE key = ?), 0)) + 1, ?, ?, ?, ?, ?, ?, ?, ?)",
            (_LAST_REMOVED_REPO_ID, name, source, stored_mirror_path(mirror_path, self.data_dir, in_place, name),
             int(in_place), _iso(utcnow()), int(guarded), audience, int(audience_own)))
        return cursor.lastrowid

    def set_audience(self, repo_id: int, audience: str, *, own: bool = True) -> None:
        """Who may see the repository (own=False: it follows its organization's audience from now on)."""
        self.conn.execute("UPDATE repos SET audience = ?, audience_own = ? WHERE id = ?", (audience, int(own), repo_id))

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
