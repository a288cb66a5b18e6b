"""The forge organizations the index tracks (tables `forge_orgs`, `forge_org_repos`) as typed rows.

An organization's repositories are ordinary `repos`; these tables remember which forge repository
(by the forge's own id, which survives renames and transfers) each one is, so that the next listing
can tell new, renamed and deleted repositories apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from .index import Index, _iso, parse_time, utcnow

__all__ = ["OrgRow", "OrgRepoRow", "FailedRepo", "OrgIndex", "PENDING", "TRACKED", "GONE", "DROPPED", "FAILED"]

PENDING, TRACKED, GONE, DROPPED, FAILED = "pending", "tracked", "gone", "dropped", "failed"


@dataclass(frozen=True)
class OrgRow:
    id: int
    name: str  # the project's name
    host: str
    kind: str
    owner: str
    url: str
    forks: bool
    guarded: bool
    created_at: datetime | None
    last_listed_at: datetime | None
    last_error: str | None


@dataclass(frozen=True)
class OrgRepoRow:
    org_id: int
    forge_id: str
    full_name: str
    clone_url: str
    repo_id: int | None
    state: str
    archived: bool
    error: str | None
    private: bool = False  # the forge lists it as private (or internal): it starts visible to admins only
    failures: int = 0  # tries to clone (or first index) that failed in a row
    failed_at: datetime | None = None
    next_attempt_at: datetime | None = None  # when the periodic sync tries a failed one again


@dataclass(frozen=True)
class FailedRepo:
    """A repository an organization lists that could not be tracked: `repos`, `status`, `projects` and `sync`
    show it with its reason until a try succeeds or an admin untracks it (issue 32)."""

    org: str  # the organization's (its project's) name
    name: str  # the name it would be tracked under (`untrack NAME` drops it)
    full_name: str  # as the forge lists it
    error: str
    failures: int
    failed_at: datetime | None
    next_attempt_at: datetime | None
    private: bool = False
    source: str = ""  # its clone URL


class OrgIndex:
    """Reads and writes of the organization tables, each write in one transaction."""

    def __init__(self, index: Index):
        self.index = index

    def orgs(self) -> list[OrgRow]:
        return [_org(r) for r in self.index.rows("SELECT * FROM forge_orgs ORDER BY name")]

    def org(self, name: str) -> OrgRow | None:
        rows = self.index.rows("SELECT * FROM forge_orgs WHERE name = ?", (name,))
        return _org(rows[0]) if rows else None

    def org_for(self, host: str, owner: str) -> OrgRow | None:
        rows = self.index.rows("SELECT * FROM forge_orgs WHERE host = ? AND owner = ?", (host.lower(), owner.lower()))
        return _org(rows[0]) if rows else None

    def add_org(self, name: str, host: str, kind: str, owner: str, url: str, forks: bool, guarded: bool) -> OrgRow:
        with self.index.transaction() as db:
            db.execute("INSERT INTO forge_orgs (name, host, kind, owner, url, forks, guarded, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (name, host.lower(), kind, owner.lower(), url, int(forks), int(guarded), _iso(utcnow())))
        return self.org(name)  # type: ignore[return-value]

    def set_forks(self, org_id: int, forks: bool) -> None:
        self.index.execute("UPDATE forge_orgs SET forks = ? WHERE id = ?", (int(forks), org_id))

    def listed(self, org_id: int, error: str | None, at: datetime | None = None) -> None:
        """Note a listing's outcome (the time of the last good one stays when it failed)."""
        if error is None:
            self.index.execute("UPDATE forge_orgs SET last_listed_at = ?, last_error = NULL WHERE id = ?",
                               (_iso(at or utcnow()), org_id))
        else:
            self.index.execute("UPDATE forge_orgs SET last_error = ? WHERE id = ?", (error, org_id))

    def remove_org(self, org_id: int) -> None:
        self.index.execute("DELETE FROM forge_orgs WHERE id = ?", (org_id,))

    def repos(self, org_id: int) -> list[OrgRepoRow]:
        return [_repo(r) for r in self.index.rows(
            "SELECT * FROM forge_org_repos WHERE org_id = ? ORDER BY full_name", (org_id,))]

    def upsert(self, org_id: int, forge_id: str, full_name: str, clone_url: str, archived: bool, state: str,
               private: bool = False) -> None:
        """A listed repository: new rows get `state`; known ones take the listing's name, URL and visibility."""
        self.index.execute(
            "INSERT INTO forge_org_repos (org_id, forge_id, full_name, clone_url, state, archived, private) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (org_id, forge_id) DO UPDATE SET "
            "full_name = excluded.full_name, clone_url = excluded.clone_url, archived = excluded.archived, "
            "private = excluded.private",
            (org_id, forge_id, full_name, clone_url, state, int(archived), int(private)))

    def set_state(self, org_id: int, forge_id: str, state: str, *, repo_id: int | None = None,
                  error: str | None = None) -> None:
        if repo_id is None:
            self.index.execute("UPDATE forge_org_repos SET state = ?, error = ? WHERE org_id = ? AND forge_id = ?",
                               (state, error, org_id, forge_id))
        else:
            self.index.execute("UPDATE forge_org_repos SET state = ?, error = ?, repo_id = ? "
                               "WHERE org_id = ? AND forge_id = ?", (state, error, repo_id, org_id, forge_id))

    def set_failed(self, org_id: int, forge_id: str, error: str, at: datetime, next_attempt: datetime) -> None:
        """A try to track it failed: kept as failed, with its reason, one more failure, the next try's time."""
        self.index.execute("UPDATE forge_org_repos SET state = ?, error = ?, repo_id = NULL, failures = failures + 1, "
                           "failed_at = ?, next_attempt_at = ? WHERE org_id = ? AND forge_id = ?",
                           (FAILED, error, _iso(at), _iso(next_attempt), org_id, forge_id))

    def forget(self, org_id: int, forge_id: str) -> None:
        self.index.execute("DELETE FROM forge_org_repos WHERE org_id = ? AND forge_id = ?", (org_id, forge_id))

    def clear_failures(self, org_id: int, forge_id: str) -> None:
        self.index.execute("UPDATE forge_org_repos SET failures = 0, failed_at = NULL, next_attempt_at = NULL "
                           "WHERE org_id = ? AND forge_id = ?", (org_id, forge_id))

    def failed(self) -> list[FailedRepo]:
        """Every repository of every organization that could not be tracked (and is not dropped), by name."""
        rows = self.index.rows("SELECT r.*, o.name AS org_name FROM forge_org_repos r JOIN forge_orgs o "
                               "ON o.id = r.org_id WHERE r.state = ? ORDER BY r.full_name", (FAILED,))
        return [FailedRepo(row["org_name"], repo_name_for(row["full_name"]), row["full_name"],
                           row["error"] or "it could not be cloned", row["failures"], parse_time(row["failed_at"]),
                           parse_time(row["next_attempt_at"]), bool(row["private"]), row["clone_url"]) for row in rows]

    def drop_failed(self, name: str) -> FailedRepo | None:
        """`untrack NAME` of a repository that could not be tracked: it is left out from now on (None: no such)."""
        for found in self.failed():
            if found.name == name or found.full_name.lower() == name.lower():
                self.index.execute("UPDATE forge_org_repos SET state = ? WHERE state = ? AND full_name = ? AND "
                                   "org_id = (SELECT id FROM forge_orgs WHERE name = ?)",
                                   (DROPPED, FAILED, found.full_name, found.org))
                return found
        return None

    def rename_repo(self, repo_id: int, old: str, new: str, source: str) -> None:
        """A repository renamed or transferred upstream: its name and source follow, history stays; so do the
        subscriptions that name it."""
        with self.index.transaction() as db:
            db.execute("UPDATE repos SET name = ?, source = ? WHERE id = ?", (new, source, repo_id))
            db.execute("UPDATE subscription_repos SET name = ? WHERE name = ?", (new, old))

    def org_of_repo(self, repo_id: int) -> str | None:
        """The organization (its project's name) a tracked repository belongs to, if any."""
        row = self.index.execute("SELECT o.name FROM forge_org_repos r JOIN forge_orgs o ON o.id = r.org_id "
                                 "WHERE r.repo_id = ? LIMIT 1", (repo_id,)).fetchone()
        return row[0] if row else None

    def member_repo_ids(self) -> set[int]:
        """The repositories the periodic sync fetches with their organization (tracked, not gone upstream)."""
        return {r[0] for r in self.index.execute(
            "SELECT repo_id FROM forge_org_repos WHERE state = 'tracked' AND repo_id IS NOT NULL")}

    def subscribed_channels(self, name: str) -> list[str]:
        """The channels whose digest subscription names `name` (a project or repository)."""
        return [r[0] for r in self.index.execute(
            "SELECT DISTINCT s.channel_id FROM subscriptions s JOIN subscription_repos r ON r.subscription_id = s.id "
            "WHERE r.name = ? ORDER BY s.channel_id", (name,))]


def repo_name_for(full_name: str) -> str:
    """The tracked repository's name for a forge's full name: `Acme/Web.Site` -> `acme/web.site`."""
    segments = [re.sub(r"[^\w.\-]+", "-", s.lower()).strip(".-") for s in full_name.split("/")]
    name = "/".join(s for s in segments if s)
    return name if re.fullmatch(r"[\w][\w.\-/]*", name) else "repo"


def _org(row: dict) -> OrgRow:
    return OrgRow(id=row["id"], name=row["name"], host=row["host"], kind=row["kind"], owner=row["owner"],
                  url=row["url"], forks=bool(row["forks"]), guarded=bool(row["guarded"]),
                  created_at=parse_time(row["created_at"]), last_listed_at=parse_time(row["last_listed_at"]),
                  last_error=row["last_error"])


def _repo(row: dict) -> OrgRepoRow:
    return OrgRepoRow(org_id=row["org_id"], forge_id=row["forge_id"], full_name=row["full_name"],
                      clone_url=row["clone_url"], repo_id=row["repo_id"], state=row["state"],
                      archived=bool(row["archived"]), error=row["error"], private=bool(row["private"]),
                      failures=row.get("failures", 0) or 0, failed_at=parse_time(row.get("failed_at")),
                      next_attempt_at=parse_time(row.get("next_attempt_at")))
