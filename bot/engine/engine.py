"""The engine every face asks: track, sync, untrack, list, report.

mirrors (git) -> index (SQLite) -> columns/metric -> Report. `Engine` is a small facade over parts
with one job each, which a face never needs to tell apart:

    catalog     names people type -> repositories and projects           bot/engine/catalog.py
    tracking    track / sync / untrack / reclone, mirrors' health          bot/engine/tracking.py
    organizations  a forge owner's repositories kept in step               bot/engine/forgeorgs.py
    snapshots   columns per generation, the graph, masks, caches           bot/engine/snapshots.py
    reporting   report / compare / domains, releases, COCOMO heads         bot/engine/reporting.py

The engine holds no per-request state; the snapshots cache each repository's columns in memory,
keyed by the repository's generation, so a report is a few numpy passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import columns as col
from ..config import Settings
from ..errors import QueryError
from ..metric import Report
from ..store.index import Index, RepoRow
from .audiences import OPERATOR, Audience, Viewer
from .catalog import Access, Catalog
from .query import Compare, Query, RefRange
from .reporting import Reporting
from .snapshots import Snapshots
from .teams import Teams
from .tracking import Progress, SyncResult, Tracking

if TYPE_CHECKING:
    from ..store.forges import OwnerRef
    from ..store.indexer import Indexer
    from ..store.mirrors.clones import MirrorStore
    from ..store.mirrors.mirror import Mirror
    from ..store.sources import SourcePolicy
    from .forgeorgs import OrgProgressFn, OrgSyncResult, OrgTracker, OrgTrackResult

__all__ = ["Engine", "Progress", "SyncResult"]


class Engine:
    """One object for the faces; each call is handed to the part whose job it is."""

    def __init__(self, settings: Settings, index: Index | None = None):
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.index = index or Index(settings.index_path)
        self.catalog = Catalog(self.index)
        self.snapshots = Snapshots(settings, self.index)
        self.tracking = Tracking(settings, self.index, self.catalog, forget=self._forget)
        self.reporting = Reporting(settings, self.index, self.catalog, self.snapshots)
        self._forge_orgs: OrgTracker | None = None
        self.tracking.refresh_bot_patterns()

    @classmethod
    def open(cls, settings: Settings) -> "Engine":
        return cls(settings)

    def _forget(self, repo_id: int) -> None:
        """What readers keep of an untracked repository goes with it."""
        self.snapshots.forget(repo_id)
        self.catalog.forget(repo_id)

    # -- names: repositories and projects (catalog) ----------------------------
    def repos(self, viewer: Viewer = OPERATOR) -> list[RepoRow]:
        """The tracked repositories `viewer` may see (the operator, the default, sees all)."""
        return self.catalog.repos(viewer)

    def repo(self, name: str, viewer: Viewer = OPERATOR) -> RepoRow:
        return self.catalog.repo(name, viewer)

    def known_names(self, viewer: Viewer = OPERATOR) -> list[str]:
        return self.catalog.known_names(viewer)

    def resolve(self, names: Iterable[str], viewer: Viewer = OPERATOR) -> list[RepoRow]:
        """Tracked repositories for the names a user typed (projects expand to their repositories)."""
        return self.catalog.resolve(names, viewer)

    def sees(self, viewer: Viewer, repo: RepoRow) -> bool:
        """Whether `viewer` (a person, or a channel an answer would be posted in) may see `repo`."""
        return self.catalog.sees(viewer, repo)

    def aliases(self, user: str) -> list[str]:
        """The addresses an admin added for a Slack member, beside their profile's (`gad-bot teams alias`)."""
        return self.index.slack_aliases(user)

    def set_aliases(self, user: str, addresses: Iterable[str], *, remove: bool = False) -> None:
        """Add (or remove) addresses a Slack member commits with; each must look like an e-mail address."""
        from ..metric import person_key

        wanted = [person_key(a.strip()) for a in addresses]
        bad = [a for a in wanted if "@" not in a or len(a) > 320 or any(c.isspace() for c in a)]
        if bad:
            raise QueryError(f"`{bad[0][:100]}` is not an e-mail address; give the address as git records it, "
                             "e.g. ana@home.example.")
        self.index.set_slack_aliases(user, wanted, remove=remove)

    def access(self, name: str) -> Access:
        """Who may see a repository, project or organization (admins read it)."""
        return self.catalog.access_of(name)

    def set_access(self, name: str, audience: Audience) -> Access:
        """Set who may see a repository, project or organization (admins only: the faces check)."""
        return self.catalog.set_access(name, audience)

    def project_add(self, name: str, repos: Iterable[str]) -> list[str]:
        """Create a project (or add repositories to it); return its repositories."""
        return self.catalog.project_add(name, repos)

    def project_remove(self, name: str) -> None:
        self.catalog.project_remove(name)

    def projects(self, viewer: Viewer = OPERATOR) -> dict[str, list[str]]:
        return self.catalog.projects(viewer)

    def find_by_source(self, source: str) -> RepoRow | None:
        return self.catalog.find_by_source(source)

    # -- tracking ---------------------------------------------------------------
    @property
    def store(self) -> "MirrorStore":
        return self.tracking.store

    @property
    def indexer(self) -> "Indexer":
        return self.tracking.indexer

    @property
    def policy(self) -> "SourcePolicy":
        return self.tracking.policy

    def track(self, source: str, name: str | None = None, *, in_place: bool = False,
              progress: Progress | None = None, paths: bool = True, guarded: bool = False) -> SyncResult:
        """Mirror (or register in place) a repository and index it; nothing is left behind on failure."""
        return self.tracking.track(source, name, in_place=in_place, progress=progress, paths=paths, guarded=guarded)

    def sync_many(self, repos: list[RepoRow], progress=None) -> list[SyncResult]:
        """Sync these repositories as serve's periodic sync does: fetched in GAD_FORGE_FETCHES lanes, what changed
        indexed in worker processes (bot/engine/lanes.py); one SyncResult each, in their order."""
        from .lanes import sync_in_lanes

        return sync_in_lanes(self, repos, progress=progress)

    def untrack(self, name: str):
        """Forget a repository; or, for one an organization lists that could not be tracked, leave it out from now
        on (returns its `FailedRepo` then, else None)."""
        if self.index.repo(name) is None:
            from ..store.orgindex import OrgIndex

            dropped = OrgIndex(self.index).drop_failed(name)
            if dropped is not None:
                return dropped
        self.tracking.untrack(name)
        return None

    def failed_repos(self, viewer: Viewer = OPERATOR) -> list:
        """The repositories tracked organizations list that could not be tracked (`orgindex.FailedRepo`: reason,
        tries, next try), those `viewer` may see: `repos`, `status`, `projects` and `sync` show them."""
        from ..store.orgindex import OrgIndex

        if not OrgIndex(self.index).orgs():
            return []
        return self.forge_orgs.failed(viewer)

    def sync(self, names: Iterable[str] = (), progress: Progress | None = None, now=None) -> list[SyncResult]:
        """Fetch and index each named repository (all when none); one failure never stops the others."""
        return self.tracking.sync(names, progress, now)

    def sync_one(self, repo: RepoRow, *, progress: Progress | None = None, fetch: bool = True,
                 now=None, paths: bool = True) -> SyncResult:
        return self.tracking.sync_one(repo, progress=progress, fetch=fetch, now=now, paths=paths)

    def index_paths(self, name: str, progress: Progress | None = None) -> tuple[int, float]:
        return self.tracking.index_paths(name, progress)

    def index_other_refs(self, name: str, progress: Progress | None = None) -> SyncResult | None:
        return self.tracking.index_other_refs(name, progress)

    def reclone(self, name: str, progress: Progress | None = None) -> SyncResult:
        return self.tracking.reclone(name, progress)

    def check_connectivity(self, repo: RepoRow, timeout: float = 600) -> list[str] | None:
        return self.tracking.check_connectivity(repo, timeout)

    def damage(self, repo: RepoRow) -> str | None:
        return self.tracking.damage(repo)

    def sweep_mirrors(self) -> list[Path]:
        return self.tracking.sweep_mirrors()

    def mirror_leftovers(self) -> list[Path]:
        return self.tracking.mirror_leftovers()

    # -- forge organizations: every repository of an owner, kept in step (bot/engine/forgeorgs.py) ----
    @property
    def forge_orgs(self) -> "OrgTracker":
        if self._forge_orgs is None:
            from .forgeorgs import OrgTracker

            self._forge_orgs = OrgTracker(self)  # handed the engine: its index workers open one of their own
        return self._forge_orgs

    def org_owner(self, url: str, *, guarded: bool = False) -> "OwnerRef | None":
        """The organization, group or user a URL names on a known forge (None: a repository, or no forge)."""
        return self.forge_orgs.owner_of(url, guarded=guarded)

    def track_org(self, owner: "OwnerRef", *, forks: bool = False, guarded: bool = False,
                  progress: "OrgProgressFn | None" = None) -> "OrgTrackResult":
        """Track every repository of `owner` and a project named after it; again: go on with the rest."""
        return self.forge_orgs.track(owner, forks=forks, guarded=guarded, progress=progress)

    def org_of(self, host: str, owner: str) -> str | None:
        """The tracked organization's name (its project) for a forge host (`github.com`, `git.corp:8443`) and
        owner (`acme`, `group/subgroup`; any case), or None when that owner is not tracked as a whole."""
        return self.forge_orgs.org_of(host, owner)

    def sync_orgs(self, names: list[str] | None = None, progress=None, *, fetch: bool = False) -> list["OrgSyncResult"]:
        """List each tracked organization (those named; all when None) again: new repositories are tracked,
        renamed or transferred ones take their new name, deleted ones are marked gone; one OrgSyncResult each,
        whose `changes` (OrgChange) are what the channels subscribed to it are told. fetch=True (the periodic
        sync) also fetches and indexes every repository of the organization that is due, in batches."""
        return self.forge_orgs.sync(names, progress, fetch=fetch)

    # -- snapshots ----------------------------------------------------------------
    def columns_of(self, repo: RepoRow, generation: int | None = None) -> col.RepoColumns:
        return self.snapshots.columns_of(repo, generation)

    def reachable_rows(self, columns: col.RepoColumns, tips: list[bytes]) -> np.ndarray:
        return self.snapshots.reachable_rows(columns, tips)

    def resolve_ref(self, repo: RepoRow, columns: col.RepoColumns, name: str) -> int:
        return self.snapshots.resolve_ref(repo, columns, name)

    # -- reporting ------------------------------------------------------------------
    def report(self, query: Query, today: date | None = None, viewer: Viewer = OPERATOR,
               teams: Teams | None = None) -> Report:
        """Answer a Query from the index alone, over what `viewer` may see (bot/engine/audiences.py); `teams`: Slack's
        user groups, for `team:` and `by:team` (bot/engine/teams.py)."""
        return self.reporting.report(query, today, viewer, teams)

    def me(self, query: Query, today: date | None = None, viewer: Viewer = OPERATOR) -> Report:
        """The viewer's own 2GAD (`/gad me`), found by their addresses through each repository's mailmap."""
        return self.reporting.me(query, today, viewer)

    def compare(self, command: Compare, today: date | None = None, viewer: Viewer = OPERATOR,
                teams: Teams | None = None):
        """One row per item over the same tokens (each item's report, by month, boiled down)."""
        return self.reporting.compare(command, today, viewer, teams)

    def domains(self, query: Query, today: date | None = None) -> list:
        return self.reporting.domains(query, today)

    def cocomo_heads(self, repos: Iterable[RepoRow], query: Query) -> list:
        return self.reporting.cocomo_heads(repos, query)

    def head_tip(self, repo: RepoRow, mirror: "Mirror", scope) -> bytes:
        return self.reporting.head_tip(repo, mirror, scope)

    def range_end_oid(self, repo: RepoRow, span: RefRange) -> bytes:
        return self.reporting.range_end_oid(repo, span)

    def org_rules(self):
        return self.reporting.org_rules()

    def org_table(self):
        return self.reporting.org_table()
