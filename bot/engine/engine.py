"""The engine every face asks: track, sync, untrack, list, report.

mirrors (git) -> index (SQLite) -> columns/metric -> Report. The engine holds no
per-request state; it caches each repository's columns in memory, keyed by the
repository's generation, so a report is a few numpy passes.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import columns as col
from .caches import BoundedCache
from ..store import store
from ..config import Settings
from ..errors import GadError, MirrorError, QueryError, UnknownRepoError, command, literal, nearest
from .filters import Active, author_zero_words, check_authors, check_filters
from ..store.index import Index, RepoRow, utcnow
from ..metric import Release, Report, Row, table_order
from ..store.store import IN_ALL, IN_DEFAULT, IN_HEAD

if TYPE_CHECKING:  # the write side (pygit2, git children) is imported when a track or sync needs it
    from ..store.indexer import Indexer
    from ..store.mirrors import Mirror, MirrorStore
    from ..store.forges import OwnerRef
    from ..store.sources import SourcePolicy
    from .forgeorgs import OrgProgressFn, OrgSyncResult, OrgTracker, OrgTrackResult
from .periods import from_epoch_day, mark_partial, to_epoch_day
from .query import Compare, Query, RefRange

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SyncResult:
    name: str
    new_commits: int
    removed_commits: int
    commits: int
    error: str | None = None
    unchanged: bool = False
    seconds: float = 0.0  # fetching and indexing commits
    path_seconds: float = 0.0  # indexing which paths the new commits changed


@dataclass(frozen=True)
class ReleaseRanges:
    """by:release's rows before counting: each release with its commits (store rows), their union, what is left out."""

    shown: list  # (metric.Release, np.ndarray of store rows), oldest version first
    union: np.ndarray  # per store row: in any shown release's range (the report's total counts these)
    more: int  # releases the row limit left out
    notes: tuple[str, ...] = ()  # rows zero by construction; the default branch's commits in no release yet


class Engine:
    def __init__(self, settings: Settings, index: Index | None = None):
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.index = index or Index(settings.index_path)
        self._store: MirrorStore | None = None
        self._indexer: Indexer | None = None
        self._cache: dict[int, col.RepoColumns] = {}
        self._repo_rows: dict[int, tuple[tuple, RepoRow]] = {}  # repository id -> (its row as read, RepoRow)
        # What members' questions key (ranges, branches, paths; people's e-mails): within
        # GAD_QUERY_CACHE_MB, least recently used out first (bot/engine/caches.py)
        budget = settings.query_cache_mb * 1024 * 1024
        self._masks = BoundedCache("commit masks", budget - budget // 8)
        self._people = BoundedCache("people's e-mails", budget // 8)
        self._globs: dict[tuple, np.ndarray] = {}
        self._cache_lock = threading.Lock()
        self._refresh_bot_patterns()

    @property
    def store(self) -> "MirrorStore":
        """The mirror store (pygit2), created on first use: reports never need it."""
        if self._store is None:
            from ..store.mirrors import FetchLimits, MirrorStore

            limits = FetchLimits(dict(self.settings.https_tokens), self.settings.ssh_key,
                                 self.settings.fetch_timeout_seconds, self.settings.max_mirror_mb * 1024 * 1024)
            self._store = MirrorStore(self.settings.mirrors_dir, limits, locks=self._locks_dir)
        return self._store

    @property
    def indexer(self) -> "Indexer":
        if self._indexer is None:
            from ..store.indexer import Indexer

            self._indexer = Indexer(self.index, tuple(self.settings.bot_patterns),
                                    tuple(self.settings.automated_coauthors))
        return self._indexer

    @classmethod
    def open(cls, settings: Settings) -> "Engine":
        return cls(settings)

    # -- identity rules ------------------------------------------------------
    # Bump when the way identities are derived changes: every repository's people are rebuilt
    # (from the stored raw identities, without re-walking history) the next time gad-bot opens.
    IDENTITY_RULES = "3: ascii lower-casing, case-insensitive mailmap, automated co-authors"

    def _patterns_key(self) -> str:
        rules = [self.IDENTITY_RULES, *sorted(self.settings.bot_patterns), "automated:",
                 *sorted(self.settings.automated_coauthors)]
        return hashlib.sha256("\x00".join(rules).encode()).hexdigest()

    def _refresh_bot_patterns(self) -> None:
        """New operator bot patterns take effect on every repository without re-walking history."""
        key = self._patterns_key()
        if self.index.get_meta("bot_patterns") == key:
            return
        from ..store.mirrors import Mirror

        for repo in self.index.repos():
            try:
                data = Mirror(repo.mirror_path).mailmap_blob()[1]
            except MirrorError:
                data = b""
            self.indexer.rederive_people(repo, data)
        self.index.set_meta("bot_patterns", key)

    # -- repositories --------------------------------------------------------
    def repos(self) -> list[RepoRow]:
        return self.index.repos()

    def repo(self, name: str) -> RepoRow:
        found = self.index.repo(name)
        if found is None:
            raise UnknownRepoError(name, self.known_names())
        return found

    def known_names(self) -> list[str]:
        return self.index.repo_names() + list(self.index.projects())

    # -- projects: several repositories as one -------------------------------
    def project_add(self, name: str, repos: Iterable[str]) -> list[str]:
        """Create a project (or add repositories to it); return its repositories."""
        if self.index.repo(name):
            raise QueryError(f"`{name}` is already a repository's name; choose another name for the project.")
        members = [self.repo(r) for r in repos]
        self.index.set_project(name, [m.id for m in members])
        return self.index.projects()[name]

    def project_remove(self, name: str) -> None:
        if not self.index.remove_project(name):
            raise UnknownRepoError(name, list(self.index.projects()))

    def projects(self) -> dict[str, list[str]]:
        return self.index.projects()

    def find_by_source(self, source: str) -> RepoRow | None:
        """The tracked repository with this source, however it is written: a URL with or without a trailing
        `/` or `.git`, a local path by the git directory it opens (any directory of its work tree)."""
        wanted = self._source_key(source)
        for repo in self.index.repos():
            if repo.source == source or self._source_key(repo.source, repo) == wanted:
                return repo
        return None

    @staticmethod
    def _source_key(source: str, repo: RepoRow | None = None) -> str:
        from ..store.mirrors import open_local
        from ..store.sources import is_local_path

        if is_local_path(source):
            if repo is not None and repo.in_place:
                return str(repo.mirror_path)  # an in-place repository's mirror path is its git directory
            try:
                return str(open_local(source))
            except GadError:
                return source  # gone or not a repository: only the same text matches
        return source.rstrip("/").removesuffix(".git").rstrip("/")

    def track(self, source: str, name: str | None = None, *, in_place: bool = False,
              progress: Progress | None = None, paths: bool = True, guarded: bool = False) -> SyncResult:
        """Mirror (or register in place) a repository and index it; nothing is left behind on failure.

        With paths=False the changed paths (for `path:`) are left to `index_paths`, so that the
        caller can answer as soon as the commits are in: they take several times longer.
        guarded=True (a source typed in Slack): this and every later fetch connects only where the
        source policy allows, whatever the server redirects to or its name resolves to later.
        """
        from ..store.mirrors import Mirror, open_local
        from ..store.sources import default_name, is_local_path

        name = name or default_name(source)
        if self.index.repo(name):
            raise QueryError(f"A repository named `{name}` is already tracked; choose another name with `as:NAME` "
                             f"(CLI: --name) or sync it with {command('sync ' + name)}.")
        same = self.find_by_source(source)
        if same is not None:  # the same history twice would be counted, synced and stored twice
            raise QueryError(f"That repository is tracked already as `{same.name}`; ask about `{same.name}`, "
                             f"or untrack it first to track it under another name.")
        if in_place:
            path = open_local(source)
            Mirror(path)  # fails early, clearly, if it is not readable
        else:
            if is_local_path(source):
                open_local(source)  # "not a git repository" beats libgit2's "unsupported URL protocol"
        with nullcontext() if in_place else self.store.creating():  # no orphan until the index names it
            if not in_place:
                path = self.store.create(source, name, progress, guard=self.policy if guarded else None)
            try:
                repo_id = self.index.add_repo(name, source, path, in_place, guarded=guarded and not in_place)
            except Exception:
                if not in_place:
                    self.store.remove(path)
                raise
        result = self.sync_one(self.index.repo_by_id(repo_id), progress=progress, fetch=False, paths=paths)
        if result.error:
            self.untrack(name)
            raise MirrorError(result.error)
        return result

    # -- forge organizations: every repository of an owner, kept in step (bot/engine/forgeorgs.py) ----
    @property
    def forge_orgs(self) -> "OrgTracker":
        if getattr(self, "_forge_orgs", None) is None:
            from .forgeorgs import OrgTracker

            self._forge_orgs = OrgTracker(self)
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

    def index_paths(self, name: str, progress: Progress | None = None) -> tuple[int, float]:
        """What a first index leaves for after its answer: the refs outside branches and tags, then the changed
        paths of every commit that lacks them; (commits whose paths were indexed, seconds)."""
        repo = self.repo(name)
        started = time.perf_counter()
        with self._repo_lock(repo):
            self._index_other_refs(repo, self._mirror(repo), progress)
            count = self.indexer.index_paths(self.index.repo_by_id(repo.id), self._mirror(repo), progress)
        return count, time.perf_counter() - started

    def index_other_refs(self, name: str, progress: Progress | None = None) -> SyncResult | None:
        """The second walk of a first index, on its own (None when there is nothing left to walk)."""
        repo = self.repo(name)
        started = time.perf_counter()
        with self._repo_lock(repo):
            outcome = self._index_other_refs(repo, self._mirror(repo), progress)
        if outcome is None:
            return None
        return SyncResult(repo.name, outcome.new_commits, outcome.removed_commits, outcome.commits,
                          seconds=time.perf_counter() - started)

    def _index_other_refs(self, repo: RepoRow, mirror: "Mirror", progress: Progress | None):
        """The second walk of a first index (refs outside branches and tags), when it is still due."""
        if not self.index.other_refs_pending(repo.id):
            return None
        return self.indexer.index_commits(self.index.repo_by_id(repo.id), mirror, progress, other_refs_later=False)

    def reclone(self, name: str, progress: Progress | None = None) -> SyncResult:
        """Replace a damaged mirror with a fresh clone, keeping the repository's name, projects and subscriptions."""
        repo = self.repo(name)
        if repo.in_place:
            raise MirrorError(f"`{name}` is registered in place, so gad-bot does not own its copy; repair it with git "
                              "(e.g. `git fsck`, or clone it again), then run `gad-bot sync` for it.")
        with self._repo_lock(repo), self.store.creating():
            path = self.store.create(repo.source, repo.name, progress, replace=repo.mirror_path,
                                     guard=self._guard(repo))
            self.index.set_mirror_path(repo.id, path)
            self.index.set_meta(_damage_key(repo), "")  # a fresh clone: what was missing is not any more
        return self.sync_one(self.index.repo_by_id(repo.id), progress=progress, fetch=False)

    def check_connectivity(self, repo: RepoRow, timeout: float = 600) -> list[str] | None:
        """Walk every object of the repository's mirror (`git fsck --connectivity-only`): the objects found
        missing ([] when none; None when the walk took over `timeout`). A finding is remembered, so that
        `repos` does not call that mirror ok, until a check finds it whole (after `sync --reclone`)."""
        from ..store.history import missing_objects

        missing = missing_objects(repo.mirror_path, timeout)
        if missing is not None:
            self.index.set_meta(_damage_key(repo), "; ".join(missing))
        return missing

    def damage(self, repo: RepoRow) -> str | None:
        """The missing objects the last connectivity check found in this repository's mirror, or None."""
        return self.index.get_meta(_damage_key(repo)) or None

    def sweep_mirrors(self) -> list[Path]:
        """Remove what interrupted work left under the mirrors (MirrorStore.leftovers), orphan mirrors included:
        those no repository names (a kill between clone and insert, an interrupted untrack)."""
        return self.store.sweep(named=self._named_mirrors)

    def mirror_leftovers(self) -> list[Path]:
        """What `sweep_mirrors` would remove now (for doctor)."""
        return self.store.leftovers(named=self._named_mirrors)

    def _named_mirrors(self) -> list[Path] | None:
        """The mirrors the index names; None when it cannot be read (a damaged index): then nothing is an orphan."""
        import sqlite3

        try:
            return [repo.mirror_path for repo in self.index.repos() if not repo.in_place]
        except sqlite3.DatabaseError as error:
            log.warning("orphan mirrors are not swept: the index could not be read (%s); run `gad-bot doctor`", error)
            return None

    def untrack(self, name: str) -> None:
        repo = self.repo(name)
        self.index.remove_repo(repo.id)
        with self._cache_lock:
            self._cache.pop(repo.id, None)
            self._repo_rows.pop(repo.id, None)
        if not repo.in_place:
            self.store.remove(repo.mirror_path)

    @property
    def policy(self) -> "SourcePolicy":
        """What a source typed in Slack may reach: checked again on every connection its fetches make."""
        from ..store.sources import SourcePolicy

        return SourcePolicy.from_settings(self.settings)

    def _guard(self, repo: RepoRow) -> "SourcePolicy | None":
        return self.policy if repo.guarded else None

    @property
    def _locks_dir(self) -> Path:
        return self.settings.data_dir / "locks"

    @contextmanager
    def _repo_lock(self, repo: RepoRow):
        """One writer per repository across processes (serve's scheduler and the CLI may overlap)."""
        lock_dir = self._locks_dir
        lock_dir.mkdir(exist_ok=True, mode=0o700)
        with open(lock_dir / f"{repo.id}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def sync(self, names: Iterable[str] = (), progress: Progress | None = None,
             now: datetime | None = None) -> list[SyncResult]:
        """Fetch and index each named repository (all when none); one failure never stops the others."""
        repos = [self.repo(n) for n in names] if names else self.index.repos()
        return [self.sync_one(repo, progress=progress, now=now) for repo in repos]

    def sync_one(self, repo: RepoRow, *, progress: Progress | None = None, fetch: bool = True,
                 now: datetime | None = None, paths: bool = True) -> SyncResult:
        now = now or utcnow()
        if fetch and not repo.in_place and not repo.mirror_path.exists():
            # e.g. the index was restored on a new host: the mirror comes back from its source
            log.info("mirror of %s is missing; cloning it again", repo.name)
            try:
                return self.reclone(repo.name, progress)
            except GadError as error:
                self.index.record_attempt(repo.id, str(error), now, now + timedelta(minutes=self.settings.sync_interval_minutes))
                return SyncResult(repo.name, 0, 0, repo.commits, error=str(error))
        started = time.perf_counter()
        try:
            with self._repo_lock(repo):
                mirror = self._mirror(repo)
                if not repo.in_place:  # never touch the locks of a repository someone else owns
                    mirror.clear_stale_locks()
                if fetch and not repo.in_place:
                    mirror.fetch(self.store.limits, progress, self._guard(repo))
                else:
                    mirror.check_loose_objects()
                result = self._index_repo(repo, mirror, progress)
                if paths:  # the whole job now: a first index's other refs too
                    rest = self._index_other_refs(repo, mirror, progress)
                    if rest is not None:
                        result = dataclasses.replace(result, new_commits=result.new_commits + rest.new_commits,
                                                     commits=rest.commits)
        except GadError as error:
            failures = repo.failures + 1
            delay = timedelta(minutes=min(self.settings.sync_interval_minutes * 2 ** min(failures, 10), 24 * 60))
            self.index.record_attempt(repo.id, str(error), now, now + delay)
            log.warning("sync of %s failed: %s", repo.name, error)
            return SyncResult(repo.name, 0, 0, repo.commits, error=str(error))
        indexed = time.perf_counter()
        try:
            if paths:
                with self._repo_lock(repo):
                    self.indexer.index_paths(self.index.repo_by_id(repo.id), self._mirror(repo), progress)
        except GadError as error:  # the commits are indexed; paths catch up on the next sync
            log.warning("path indexing of %s stopped: %s", repo.name, error)
        if fetch and not repo.in_place:  # every fetch adds a pack: git repacks and prunes when it is due
            from ..store.history import maintain

            with self._repo_lock(repo):
                trouble = maintain(repo.mirror_path)
            if trouble:
                log.warning("housekeeping of the mirror of %s: %s", repo.name, trouble)
        self.index.record_attempt(repo.id, None, now)
        done = time.perf_counter()
        log.info("synced %s: %d new commits in %.2f s, changed paths in %.2f s", repo.name, result.new_commits,
                 indexed - started, done - indexed)
        return dataclasses.replace(result, seconds=indexed - started, path_seconds=done - indexed)

    @staticmethod
    def _mirror(repo: RepoRow) -> "Mirror":
        from ..store.mirrors import Mirror

        return Mirror(repo.mirror_path)

    def _index_repo(self, repo: RepoRow, mirror: "Mirror", progress: Progress | None) -> SyncResult:
        """Bring the index in line with the mirror's refs (METRIC.md rule 1): see bot/store/indexer.py."""
        outcome = self.indexer.index_commits(repo, mirror, progress)
        return SyncResult(repo.name, outcome.new_commits, outcome.removed_commits, outcome.commits,
                          unchanged=outcome.unchanged)

    # -- reports -------------------------------------------------------------
    def resolve(self, names: Iterable[str]) -> list[RepoRow]:
        """Tracked repositories for the names a user typed (projects expand to their repositories)."""
        resolved: dict[int, RepoRow] = {}
        for name in names:
            repo = self.index.repo(name)
            if repo is not None:
                resolved[repo.id] = repo
                continue
            members = self._project_repos(name)
            if members is None:
                raise UnknownRepoError(name, self.known_names())
            if not members:
                raise QueryError(f"Project `{name}` has no repositories; add some with {command(f'project add {name} REPO...')}.")
            for repo in members:
                resolved[repo.id] = repo
        return list(resolved.values())

    def _project_repos(self, name: str) -> list[RepoRow] | None:
        """A project's repositories (None: no such project), in one query: an organization's project has
        thousands. A RepoRow is built again only for a repository whose row changed since it was last read:
        building 2,000 (paths and times parsed) was a third of a warm project report (bench_project.py)."""
        found = self.index.project_repo_rows(name)
        if found is None:
            return None
        fields, raws = found
        at_id = fields.index("id")
        members = []
        with self._cache_lock:
            for raw in raws:
                seen = self._repo_rows.get(raw[at_id])
                if seen is None or seen[0] != raw:
                    row = self.index.repo_row(dict(zip(fields, raw)))
                    seen = self._repo_rows[raw[at_id]] = (raw, row)
                members.append(seen[1])
        return members

    def columns_of(self, repo: RepoRow, generation: int | None = None) -> col.RepoColumns:
        """The repository's columns, from memory when its generation (read now unless given) has not changed."""
        if generation is None:
            generation = self.index.generations([repo.id]).get(repo.id)
        with self._cache_lock:
            cached = self._cache.get(repo.id)
        if cached is not None and cached.generation == generation:
            return cached
        with self.index.snapshot():  # the chunks and the arrays derived from them, as of one commit
            row = self.index.derived(repo.id)
            if row is None or row.generation != generation or generation == 0:
                raise MirrorError(self._not_indexed(repo))
            history = store.History.load(self.index, repo.id, row.chunks)
            coauthors = store.Coauthors.load(self.index, repo.id, row.chunks)
            author_map = self.index.repo_author_map(repo.id)
        derived = store.Derived.from_row(row)
        columns = col.RepoColumns.from_store(repo.id, repo.name, generation, history.keys, history.author_ids,
                                             history.days, derived.bits, derived.report_order, author_map)
        columns.coauthors = coauthors
        columns.store = store.Snapshot(history, derived)
        with self._cache_lock:
            self._cache[repo.id] = columns
        return columns

    def _not_indexed(self, repo: RepoRow) -> str:
        """Why a repository has no figures yet, with how far its first index has come."""
        walk = self.index.walk(repo.id)
        if walk is None:
            return f"`{repo.name}` has not been indexed yet; run {command('sync ' + repo.name)}."
        done = sum(c.rows for c in self.index.chunks(repo.id, columns=()))
        if walk.estimate:
            percent = min(99, 100 * done // max(walk.estimate, 1))
            return (f"`{repo.name}` is still being indexed ({percent} % done, {done:,} of about {walk.estimate:,} "
                    f"commits); ask again in a little while.")
        return f"`{repo.name}` is still being indexed ({done:,} commits so far); ask again in a little while."

    def _graph(self, columns: col.RepoColumns) -> tuple[np.ndarray, np.ndarray, store.Lookup]:
        """Parents as rows (CSR) and the key lookup of a repository's snapshot, built once per generation."""
        snapshot = columns.store
        if "graph" not in snapshot.extras:
            history, derived = snapshot.history, snapshot.derived
            snapshot.extras["graph"] = (store.parent_offsets(history.parent_counts), derived.parent_rows,
                                        store.Lookup.build(history.keys, derived.key_order))
        return snapshot.extras["graph"]

    def reachable_rows(self, columns: col.RepoColumns, tips: list[bytes]) -> np.ndarray:
        """Per store row: reachable from any of these commits (raw ids)."""
        offsets, parents, lookup = self._graph(columns)
        starts = lookup.rows_of(np.array([store.key_of(t) for t in tips], np.int64))
        return store.reachable(offsets, parents, starts[starts >= 0])

    def _require_other_refs(self, repos: list[RepoRow], what: str) -> None:
        """Refuse, for now, what needs the refs a first index walks last (outside branches and tags)."""
        for repo in repos:
            if self.index.other_refs_pending(repo.id):
                raise GadError(f"`{repo.name}` is still indexing the commits that only refs outside its branches "
                               f"and tags reach (pull requests, notes, remotes); ask for {what} again in a few "
                               "minutes. Without it the answer is ready now.")

    def _branch_mask(self, repo: RepoRow, columns: col.RepoColumns, branch: str) -> np.ndarray:
        """Membership of `branch:NAME`: every commit its tip reaches, by reachability over the indexed graph."""
        head_mask = (columns.bits & IN_HEAD) != 0
        if branch == "HEAD":
            return head_mask
        tips = self.index.stored_tips(repo.id)
        tip = next((tips[c] for c in (branch, f"refs/heads/{branch}", f"refs/remotes/origin/{branch}",
                                      f"refs/tags/{branch}") if c in tips), None)
        if tip is None:
            self._require_other_refs([repo], f"`branch:{branch}`")  # it may be a ref not walked yet
            names = sorted(n.removeprefix("refs/heads/") for n in tips if n.startswith("refs/heads/"))
            default = repo.head_ref.removeprefix("refs/heads/") if repo.head_ref else None
            close = [c for c in nearest(branch, names, n=2) if c != default][:1]
            # branch names are the repository's: code spans a backtick in a name cannot close
            offers = ([f"{literal('branch:' + default)} (its default branch)"] if default else []) + \
                [literal("branch:" + c) for c in close] + ["`branch:HEAD` (the default branch, whatever its name)"]
            either = offers[0] if len(offers) == 1 else ", ".join(offers[:-1]) + " or " + offers[-1]
            if close:
                raise QueryError(f"`{repo.name}` has no branch {literal(branch)}; did you mean {either}?")
            hint = ", ".join(literal(b) for b in names[:8]) + (" ..." if len(names) > 8 else "")
            raise QueryError(f"`{repo.name}` has no branch {literal(branch)}; its branches are {hint or 'none'}. "
                             f"Did you mean {either}?")
        reached = self._masks.get_or_compute(_snapshot_key(columns, "branch", tip),
                                             lambda: self.reachable_rows(columns, [tip]))
        return columns.in_rows(reached)

    def _commits_disjoint(self, columns: list[col.RepoColumns]) -> bool:
        """Whether no commit is in two of these repositories (no fork or copy among them): then a union's
        commits add up, with no sort of them all (METRIC.md rule 6 either way). Kept per set of snapshots."""
        if len(columns) < 2:
            return True
        return self._masks.get_or_compute(
            _snapshots_key(columns, "disjoint"),
            lambda: not col.has_repeats(np.concatenate([c.commit_ids for c in columns])))

    def _merged(self, columns: list[col.RepoColumns], masks: list, flt: col.Filter, query: Query) -> col.Merged | None:
        """The repositories' rows as one sorted selection (columns.Merged), kept per set of snapshots, when the
        question allows it: several repositories that share no commit, no mask (branch:NAME, range:, by:release,
        path:), neither by:repo nor co-authors, and room for it in half the query cache (else None)."""
        if len(columns) < 2 or query.by == "repo" or query.coauthors or any(m is not None for m in masks):
            return None
        if sum(len(c.days) for c in columns) * col.MERGED_BYTES_PER_ROW > self._masks.budget // 2:
            return None  # would not be kept: merging again for every question costs more than it saves
        if not self._commits_disjoint(columns):
            return None
        return self._masks.get_or_compute(_snapshots_key(columns, "merged", flt.scope_bit, flt.mailmap, flt.bots),
                                          lambda: col.merge(columns, flt.scope_bit, flt.mailmap, flt.bots))

    def _people_names(self, person_ids: np.ndarray) -> dict[int, str]:
        """E-mail of each person id; people rows never change once written, so they are cached (within a budget)."""
        names: dict[int, str] = {}
        missing = []
        for person in person_ids.tolist():
            email = self._people.get(person)
            if email is None:
                missing.append(person)
            else:
                names[person] = email
        if missing:
            found = self.index.people_matching(missing)
            for person, email in found.items():
                self._people.put(person, email)
            names.update(found)
        return names

    def _allowed_people(self, globs: tuple[str, ...]) -> np.ndarray:
        """Which person ids `author:` globs match, by id; cached until new people appear."""
        import fnmatch
        import re

        newest = self.index.execute("SELECT coalesce(max(id), 0) FROM people").fetchone()[0]
        key = (globs, newest)
        with self._cache_lock:
            cached = self._globs.get(key)
        if cached is not None:
            return cached
        pattern = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))  # fnmatchcase, all at once
        allowed = np.zeros(newest + 1, bool)
        for person_id, email in self.index.execute("SELECT id, email FROM people"):
            if pattern.match(email):
                allowed[person_id] = True
        with self._cache_lock:
            self._globs = {key: allowed}  # one entry: a new person or new globs replace it
        return allowed

    def report(self, query: Query, today: date | None = None) -> Report:
        """Answer a Query from the index alone (reachability over its graph for `branch:`)."""
        with self._masks.staged():  # a refused question caches nothing
            return self._report(query, today)

    def _report(self, query: Query, today: date | None) -> Report:
        today = today or datetime.now(timezone.utc).date()
        repos = self.resolve(query.repos)
        scope_bit = {"default": IN_DEFAULT, "all": IN_ALL, "branch": IN_HEAD}[query.scope.kind]
        if query.scope.kind == "all":
            self._require_other_refs(repos, "`refs:all`")
        check_filters(self.index, repos, query, self._touches(repos))  # `path:nosuch` is a typo, not a quiet period
        unmatched_author = check_authors(self.index, repos, query)  # `author:nobody@x` is a typo too
        flt = col.Filter(scope_bit=scope_bit,
                         since_day=to_epoch_day(query.since) if query.since else None,
                         until_day=to_epoch_day(query.until) if query.until else None,
                         mailmap=query.mailmap, bots=query.bots,
                         allowed_people=self._allowed_people(query.authors) if query.authors else None)
        released = None  # by:release's ranges, over its one repository's columns (in the loop below)
        if query.by == "release":
            self._refuse_releases_of_several(repos, query)
        selections, masks = [], []  # masks: each repository's scope (branch, range, paths), for `active`
        coauthor_parts = []  # METRIC.md rule 7, per repository: counted with coauthors:on, else only told
        data_ends = None  # the newest commit in scope, whatever the filters: where the data ends
        all_columns = []
        for repo in repos:
            columns = self.columns_of(repo, repo.generation)  # just read by resolve: no query a repository
            all_columns.append(columns)
            if query.by == "release":  # one repository (refused above otherwise)
                released = self._release_ranges(repo, columns, query)
            # branch:HEAD is the IN_HEAD scope bit itself; another branch is a mask of its own.
            mask = (self._branch_mask(repo, columns, query.scope.branch)
                    if query.scope.kind == "branch" and query.scope.branch != "HEAD" else None)
            if query.range is not None:  # a range replaces the scope
                mask = self._range_mask(repo, columns, query.range)
            elif released is not None:  # so do the releases' ranges: the total counts their rows once
                mask = columns.in_rows(released.union)
            newest = self._newest_day(columns, scope_bit, mask)
            if newest is not None:
                data_ends = newest if data_ends is None else max(data_ends, newest)
            if query.paths or query.exclude_paths:
                if mask is None:
                    mask = (columns.bits & scope_bit) != 0
                mask = mask & self._path_mask(repo, columns, query)
            masks.append(mask)
            coauthor_parts.append(col.coauthor_select(columns, flt, mask))
            if query.coauthors and not columns.coauthors.complete:
                raise GadError(f"`{repo.name}` is still reading its commits' `Co-authored-by:` trailers (they come with "
                               f"the changed paths, after the commits); try `coauthors:on` again in a few minutes, "
                               f"or run {command('sync ' + repo.name)} if this stays.")
        org_table = self.org_table() if (query.orgs or query.by == "org") else None
        active = self._active(all_columns, masks, flt, query, org_table)
        if unmatched_author is not None:  # refused once the scope is known (suggestions from it), before counting
            raise unmatched_author.refusal(repos, query, active)
        merged = self._merged(all_columns, masks, flt, query)
        selections = ([col.select_merged(merged, flt)] if merged is not None
                      else [col.select(columns, flt, mask) for columns, mask in zip(all_columns, masks)])
        co_selections = [part.selection for part in coauthor_parts if len(part.selection.persons)]
        if query.orgs:
            wanted = org_table.matching(query.orgs)
            selections = [col.keep(s, wanted[org_table.orgs_of(s.persons, s.days)]) for s in selections]
            co_selections = [col.keep(s, wanted[org_table.orgs_of(s.persons, s.days)]) for s in co_selections]
        author_selections = selections
        if query.coauthors:
            selections = selections + co_selections  # authors first: a commit's org is its author's when counted
        # co-author records repeat their commits; without them, repositories that share no commit add up
        disjoint = not query.coauthors and self._commits_disjoint(all_columns)
        totals, keys = col.totals(selections, disjoint=disjoint)
        author_keys = col.totals(author_selections, disjoint=disjoint)[1] if query.coauthors else keys
        # One repository's trailers still unread: the others' count alone would pass for the whole scope's.
        coauthor_commits = (col.distinct_count([part.naming for part in coauthor_parts])
                            if all(columns.coauthors.complete for columns in all_columns) else 0)
        coauthor_days = col.days_added(author_keys, co_selections) if coauthor_commits else 0
        rows: list = []
        if query.by in ("week", "month", "quarter", "year"):
            rows = col.by_period(selections, keys, query.by, first_day=flt.since_day, last_day=flt.until_day,
                                 disjoint=disjoint)
            rows = mark_partial(rows, query.by, query.since, query.until or today)
        elif query.by == "person":
            rows = col.by_person(selections, keys, self._people_names(col.distinct_persons(keys)), disjoint=disjoint)
        elif query.by == "repo":
            for name in dict.fromkeys(s.name for s in author_selections):
                repo_totals, _ = col.totals([s for s in selections if s.name == name])
                rows.append(col.Row(name, repo_totals))
        elif query.by == "org":
            rows = col.by_org(selections, keys, org_table, disjoint=disjoint)
        more_rows = 0
        notes: tuple[str, ...] = ()
        if released is not None:
            rows = self._release_rows(repos[0], all_columns[0], query, flt, released, org_table)
            more_rows = released.more
            notes = released.notes
        if query.by in ("person", "org", "repo"):
            # the order every face shows (CSV and JSON take rows as they come), and so the rows top:N keeps
            rows.sort(key=table_order)
        if query.top is not None and query.by in ("person", "org", "repo"):  # by:release: _release_ranges
            more_rows = max(0, len(rows) - query.top)
            rows = rows[:query.top]
        trend_bucket = self._trend_bucket(query, keys, today)
        trend_last = flt.until_day if flt.until_day is not None else (to_epoch_day(today) if flt.since_day is not None else None)
        if query.by == trend_bucket and trend_last == flt.until_day:
            trend = rows  # the breakdown is already that series
        else:
            trend = col.by_period(selections, keys, trend_bucket, first_day=flt.since_day, last_day=trend_last,
                                  person_days_only=True)
        as_of = [r.last_success_at for r in repos if r.last_success_at]
        report = Report(repos=tuple(r.name for r in repos), since=query.since, until=query.until,
                      scope_words=query.words(), totals=totals, by=query.by, rows=tuple(rows),
                      trend_bucket=trend_bucket, trend=tuple(trend),
                      skipped=sum(s.skipped for s in selections),
                      data_as_of=min(as_of) if len(as_of) == len(repos) and as_of else None,
                      paths=query.paths, exclude_paths=query.exclude_paths,
                      data_ends=from_epoch_day(data_ends) if data_ends is not None else None,
                      range=query.range.token().removeprefix("range:") if query.range else None,
                      first_day=from_epoch_day(int((keys & 0xFFFFFFFF).min())) if len(keys) else None,
                      last_day=from_epoch_day(int((keys & 0xFFFFFFFF).max())) if len(keys) else None,
                      asked=query.repos, scope=query.scope.token(), authors=query.authors, orgs=query.orgs,
                      mailmap=query.mailmap, bots=query.bots,
                      more_rows=more_rows, coauthors=query.coauthors, coauthor_commits=coauthor_commits,
                      coauthor_active_days=coauthor_days, release_tags=query.tags, prereleases=query.prereleases,
                      notes=notes)
        if query.range is not None and repos:
            report = dataclasses.replace(report, **self._range_days(repos[0], query.range, author_selections))
        if totals.person_days == 0:
            report = dataclasses.replace(report, hint=self._why_zero(query, repos, data_ends, org_table, active))
        failing = [r for r in repos if r.last_error]
        if failing:  # figures from before a sync that keeps failing: say so wherever they are shown
            now = utcnow()
            report = dataclasses.replace(report, notes=report.notes + tuple(sync_failed_note(r, now) for r in failing))
        if query.vs_cocomo:
            from .cocomo import SlocCache, with_cocomo  # runs a line counter only when asked

            report = with_cocomo(self.cocomo_heads(repos, query), query, report, SlocCache(self.index),
                                 self.settings.data_dir / "tmp")
        return report

    def _active(self, all_columns: list[col.RepoColumns], masks: list, flt: col.Filter, query: Query,
                org_table) -> Active:
        """Who is active in this question's scope (every filter but `author:`), with their first and last day
        (bot/engine/filters.py `Active`): asked only to word a refusal or a zero."""
        def active(globs: tuple[str, ...] | None, with_period: bool) -> dict[str, tuple[date, date]]:
            narrowed = dataclasses.replace(flt, allowed_people=self._allowed_people(globs) if globs else None,
                                           since_day=flt.since_day if with_period else None,
                                           until_day=flt.until_day if with_period else None)
            selections = [col.select(columns, narrowed, mask) for columns, mask in zip(all_columns, masks)]
            if query.orgs:
                wanted = org_table.matching(query.orgs)
                selections = [col.keep(s, wanted[org_table.orgs_of(s.persons, s.days)]) for s in selections]
            persons = np.concatenate([s.persons for s in selections] or [np.zeros(0, np.int64)]).astype(np.int64)
            days = np.concatenate([s.days for s in selections] or [np.zeros(0, np.int32)])
            if not len(persons):
                return {}
            order = np.lexsort((days, persons))
            persons, days = persons[order], days[order]
            firsts = np.flatnonzero(np.r_[True, persons[1:] != persons[:-1]])
            lasts = np.r_[firsts[1:], len(persons)] - 1
            names = self._people_names(persons[firsts])
            return {names[int(persons[a])]: (from_epoch_day(int(days[a])), from_epoch_day(int(days[b])))
                    for a, b in zip(firsts, lasts)}

        return active

    def _why_zero(self, query: Query, repos: list[RepoRow], data_ends: int | None, org_table,
                  active: Active) -> str | None:
        """What a zero figure probably meant to ask (bot/engine/zeros.py words it)."""
        from .zeros import why_zero

        def reversed_range_counts() -> bool:
            swapped = RefRange(query.range.end, query.range.start)
            lists = lambda span: any(bool(self._range_mask(r, self.columns_of(r), span).any()) for r in repos)  # noqa: E731
            return not lists(query.range) and lists(swapped)  # empty as asked (not just by the period), full reversed

        def same_commit_range() -> bool:
            ends = lambda r: {self.resolve_ref(r, self.columns_of(r), name)  # noqa: E731
                              for name in (query.range.start, query.range.end)}
            return all(len(ends(r)) == 1 for r in repos)

        return why_zero(query, data_ends=from_epoch_day(data_ends) if data_ends is not None else None,
                        reversed_range_counts=reversed_range_counts,
                        organizations=lambda: org_table.names if org_table else [],
                        authors=lambda: author_zero_words(self.index, repos, query, active),
                        same_commit_range=same_commit_range)

    def cocomo_heads(self, repos: Iterable[RepoRow], query: Query) -> list:
        """Where `vs:cocomo` counts lines: each repository's range end, named branch, or default branch head."""
        from .cocomo import Head
        from ..store.mirrors import Mirror  # pygit2 only when lines are counted

        heads = []
        for repo in repos:
            mirror = Mirror(repo.mirror_path)
            tip = self.range_end_oid(repo, query.range) if query.range else self.head_tip(repo, mirror, query.scope)
            heads.append(Head(repo.name, mirror, tip))
        return heads

    def head_tip(self, repo: RepoRow, mirror: "Mirror", scope) -> bytes:
        """The commit 'at the head of the scope': the named branch's tip for branch:NAME, else the default branch's."""
        if scope.kind == "branch" and scope.branch != "HEAD":
            tip = mirror.branch_tip(scope.branch)
            if tip is None:
                raise QueryError(f"`{repo.name}` has no branch `{scope.branch}` to count source lines at; "
                                 "name one of its branches with `branch:NAME`.")
            return tip
        tip = self.index.stored_tips(repo.id).get("HEAD")
        if tip is None:
            raise QueryError(f"`{repo.name}` has no default branch, so COCOMO has no head to count source lines at; "
                             "name a branch with `branch:NAME vs:cocomo`.")
        return tip

    def _touches(self, repos: list[RepoRow]) -> Callable[[str], bool]:
        """Whether any commit of `repos` (in any scope, at any time) changed a path under a prefix."""
        def touched(prefix: str) -> bool:
            probe = Query(repos=(), paths=(prefix,))
            return any(bool(self._path_mask(repo, self.columns_of(repo), probe).any()) for repo in repos)

        return touched

    @staticmethod
    def _newest_day(columns: col.RepoColumns, scope_bit: int, mask: np.ndarray | None) -> int | None:
        """The newest commit's epoch day in scope, before any filter: where the data ends (cached per snapshot)."""
        cache = getattr(columns.store, "extras", None) if mask is None else None
        key = ("newest_day", scope_bit)
        if cache is not None and key in cache:
            return cache[key]
        in_scope = mask if mask is not None else (columns.bits & scope_bit) != 0
        days = columns.days[in_scope & (columns.days != col.BAD_DAY)]
        newest = int(days.max()) if len(days) else None
        if cache is not None:
            cache[key] = newest
        return newest

    # -- ranges: `range:A..B` ---------------------------------------------------
    def resolve_ref(self, repo: RepoRow, columns: col.RepoColumns, name: str) -> int:
        """The store row of the commit a tag, branch or (abbreviated) commit id names in `repo`."""
        from . import refs

        _, _, lookup = self._graph(columns)
        tips = self.index.stored_tips(repo.id)
        return refs.resolve(
            repo.name, name, tips,
            rows_of_oid=lambda oid: int(lookup.rows_of(np.array([store.key_of(oid)], np.int64))[0]),
            rows_of_prefix=lambda prefix: refs.rows_for_prefix(lookup.sorted_keys, lookup.order, prefix),
            full_oid_of_row=lambda row: self._oid_of_row(repo, columns, row))

    def _oid_of_row(self, repo: RepoRow, columns: col.RepoColumns, row: int) -> bytes:
        """The full 20-byte id of a store row (read from its chunk: reports keep only 8-byte keys)."""
        first = 0
        for chunk in self.index.chunks(repo.id, limit=columns.store.history.chunks, columns=()):
            if row < first + chunk.rows:
                oids = self.index.chunk(repo.id, chunk.seq, columns=("oids",)).oids
                at = (row - first) * store.OID_BYTES
                return oids[at:at + store.OID_BYTES]
            first += chunk.rows
        raise IndexError(row)

    def _reach_from_row(self, columns: col.RepoColumns, row: int) -> np.ndarray:
        """Per store row: reachable from the commit at `row` (cached per generation)."""
        def reach() -> np.ndarray:
            offsets, parents, _ = self._graph(columns)
            return store.reachable(offsets, parents, np.array([row], np.int64))

        return self._masks.get_or_compute(_snapshot_key(columns, "reach", row), reach)

    def _range_days(self, repo: RepoRow, span: RefRange, selections: list) -> dict:
        """The days of `range:A..B`'s ends (their commits' author days, in the first repository asked) and the
        counted commits authored before A's day: Report fields."""
        columns = self.columns_of(repo)
        days = columns.store.history.days
        day_of = lambda row: from_epoch_day(int(days[row])) if days[row] != col.BAD_DAY else None  # noqa: E731
        end_day = day_of(self.resolve_ref(repo, columns, span.end))
        start_day = day_of(self.resolve_ref(repo, columns, span.start)) if span.start else None
        older = 0
        if start_day is not None:
            limit = to_epoch_day(start_day)
            older = col.distinct_count([s.commit_ids[s.days < limit] for s in selections])
        return {"range_start_day": start_day, "range_end_day": end_day, "range_older_commits": older}

    def _range_mask(self, repo: RepoRow, columns: col.RepoColumns, span: RefRange) -> np.ndarray:
        """Membership of `range:A..B` over the columns: reachable from B and not from A (git's `A..B`)."""
        found, unknown = {}, []
        for name in (span.start, span.end):  # both looked up, so that both unknown names are told at once
            if name is None:
                continue
            try:
                found[name] = self.resolve_ref(repo, columns, name)
            except QueryError as error:
                unknown.append(error)
        if unknown:
            self._require_other_refs([repo], f"`range:{span.start or ''}..{span.end}`")
            raise unknown[0] if len(unknown) == 1 else QueryError(" ".join(map(str, unknown)))
        end, start = found[span.end], found.get(span.start) if span.start else None
        def between() -> np.ndarray:
            rows = self._reach_from_row(columns, end)
            if start is not None:
                rows = rows & ~self._reach_from_row(columns, start)
            return columns.in_rows(rows)

        return self._masks.get_or_compute(_snapshot_key(columns, "range", start, end), between)

    # -- releases: `by:release` --------------------------------------------------
    @staticmethod
    def _refuse_releases_of_several(repos: list[RepoRow], query: Query) -> None:
        """by:release counts one repository's releases: refuse a project or several repositories."""
        if len(repos) != 1:
            raise QueryError(f"`by:release` breaks one repository's history into its releases, and "
                             f"{literal(', '.join(query.repos))} holds {len(repos)}; ask for one of them, e.g. "
                             f"{literal(repos[0].name + ' by:release')}.")

    def _release_ranges(self, repo: RepoRow, columns: col.RepoColumns, query: Query) -> "ReleaseRanges":
        """The releases a by:release report shows and each one's commits (git's `previous..this`), by store row."""
        from . import releases
        from .query import MAX_RELEASE_ROWS

        offsets, parents, lookup = self._graph(columns)

        def sorted_releases() -> "releases.Releases":  # 10,000 tags take ~0.15 s to sort by version: once per snapshot
            tags = {name.removeprefix("refs/tags/"): oid for name, oid in self.index.stored_tips(repo.id).items()
                    if name.startswith("refs/tags/")}
            names = list(tags)
            rows = lookup.rows_of(np.array([store.key_of(tags[n]) for n in names], np.int64)) if names else []
            found = releases.releases(dict(zip(names, (int(r) for r in rows))), query.tags, query.prereleases)
            if not found.tags:
                raise releases.no_release_error(repo.name, names, query.tags)
            return found

        found, left_out = self._masks.get_or_compute(
            _snapshot_key(columns, "release tags", query.tags, query.prereleases), sorted_releases)
        days = columns.store.history.days
        day_of = [from_epoch_day(int(days[t.row])) if days[t.row] != col.BAD_DAY else None for t in found]
        window = releases.window(day_of, query.since, query.until, query.top or MAX_RELEASE_ROWS)
        if not window.shown:
            nearest = 0 if query.since is None else -1  # until: alone is before the oldest release, else after
            raise releases.none_in_period_error(repo.name, found[nearest].name, day_of[nearest], query.since, query.until)
        tips = [t.row for t in found[window.first:window.shown[-1] + 1]]
        # each release's commits, and what the last tip reaches: the newest release's, when it is a row
        members, last_reach = self._masks.get_or_compute(_snapshot_key(columns, "releases", tuple(tips)),
                                                         lambda: store.consecutive_ranges(offsets, parents, tips))
        shown = []
        union = np.zeros(len(offsets) - 1, bool)
        for at in window.shown:
            tag = found[at]
            before = found[at - 1] if at else None
            shown.append((Release(tag.name, before.name if before else None, day_of[at],
                                  day_of[at - 1] if before else None, tag.prerelease),
                          members[at - window.first]))
            union[members[at - window.first]] = True
        notes = [left_out, releases.same_commit_note([(found[at].name, found[at - 1].name) for at in window.shown
                                                      if at and found[at].row == found[at - 1].row])]
        if window.shown[-1] == len(found) - 1:  # the newest release is a row: its tip is the last of `tips`
            newest = found[-1]
            after = ((columns.bits & IN_HEAD) != 0) & ~columns.in_rows(last_reach)
            count = int(after.sum())
            if count:
                notes.append(f"{count:,} commit{'s' * (count != 1)} on the default branch came after "
                        f"{literal(newest.name)} and {'are' if count != 1 else 'is'} in no release yet; "
                        f"{literal(f'range:{newest.name}..HEAD')} counts {'them' if count != 1 else 'it'}.")
        return ReleaseRanges(shown, union, window.more, tuple(n for n in notes if n))

    def _release_rows(self, repo: RepoRow, columns: col.RepoColumns, query: Query, flt: col.Filter,
                      released: "ReleaseRanges", org_table) -> list:
        """One row per release: its range's figures with every other token applied, as `range:` counts them."""
        extras = columns.store.extras
        if "positions" not in extras:  # each store row's place in the columns: a release's few commits are
            position = np.full(len(released.union), -1, np.int64)  # marked without a gather of every row
            position[columns.rows] = np.arange(len(columns.rows))
            extras["positions"] = position
        position = extras["positions"]
        touching = self._path_mask(repo, columns, query) if query.paths or query.exclude_paths else None
        wanted = org_table.matching(query.orgs) if query.orgs else None
        out = []
        for release, members in released.shown:
            mask = np.zeros(len(columns.rows), bool)
            at = position[members]
            mask[at[at >= 0]] = True
            if touching is not None:
                mask &= touching
            parts = [col.select(columns, flt, mask)]
            if query.coauthors:
                named = col.coauthor_select(columns, flt, mask).selection
                parts += [named] if len(named.persons) else []
            if wanted is not None:
                parts = [col.keep(p, wanted[org_table.orgs_of(p.persons, p.days)]) for p in parts]
            out.append(Row(release.tag, col.totals(parts)[0], release=release))
        return out

    def range_end_oid(self, repo: RepoRow, span: RefRange) -> bytes:
        """The full id of a range's end (for `vs:cocomo`: lines are counted at B)."""
        columns = self.columns_of(repo)
        return self._oid_of_row(repo, columns, self.resolve_ref(repo, columns, span.end))

    # -- organizations: `by:org`, `org:` ---------------------------------------
    def org_rules(self):
        """The operator's organization rules (GAD_ORG_FILE), read again whenever the file changes."""
        return self._org_rules_entry()[1]

    def _org_rules_entry(self) -> tuple:
        """(the file's signature, its rules)."""
        from . import orgs

        signature = orgs.file_signature(self.settings.org_file)
        with self._cache_lock:
            cached = getattr(self, "_org_rules", None)
        if cached is not None and cached[0] == signature:
            return cached
        entry = (signature, orgs.load_rules(self.settings.org_file))
        with self._cache_lock:
            self._org_rules = entry
        return entry

    def org_table(self):
        """Every person's organization as arrays (bot/engine/orgs.py), rebuilt when people or the rules change."""
        from . import orgs

        signature, rules = self._org_rules_entry()
        count, top = self.index.execute("SELECT count(*), coalesce(max(id), 0) FROM people").fetchone()
        key = (signature, count, top)  # a changed file or new people: a new table
        with self._cache_lock:
            cached = getattr(self, "_org_table", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        people = [(int(r[0]), str(r[1])) for r in self.index.execute("SELECT id, email FROM people")]
        table = orgs.OrgTable.build(people, rules)
        with self._cache_lock:
            self._org_table = (key, table)
        return table

    def domains(self, query: Query, today: date | None = None) -> list:
        """`gad-bot orgs`: every e-mail domain among the query's counted people, with its organization and 2GAD."""
        from . import orgs
        from ..metric import DomainRow

        report = self.report(dataclasses.replace(query, by="person"), today)
        rules = self.org_rules()
        found: dict[str, dict] = {}
        for row in report.rows:
            domain = orgs.domain_of(row.key)
            entry = found.setdefault(domain, {"people": 0, "person_days": 0, "commits": 0, "by_email": 0})
            entry["people"] += 1
            entry["person_days"] += row.totals.person_days
            entry["commits"] += row.totals.commits
            entry["by_email"] += row.key in rules.emails or row.key in rules.dated
        out = []
        for domain, entry in found.items():
            ruled = rules.domain_rule(domain) if domain else None
            fallback = orgs.default_affiliation(domain)
            out.append(DomainRow(domain=domain or "(none)", registrable=orgs.registrable_domain(domain) or "",
                                 org=ruled if ruled is not None else fallback.org,
                                 how="domain rule" if ruled is not None else fallback.how,
                                 person_days=entry["person_days"], developers=entry["people"],
                                 commits=entry["commits"], people_by_email_rule=entry["by_email"]))
        out.sort(key=lambda d: (d.matched, -d.person_days, d.domain))
        return out

    # -- side by side: `compare` ------------------------------------------------
    def _compare_item(self, command: Compare, item, today: date | None) -> Report:
        """One item's report; a mistake in its `NAME:PATH` is told in the form typed (`git:bultin`, not `path:`)."""
        try:
            return self.report(dataclasses.replace(command.item_query(item), by="month"), today)
        except QueryError as error:
            if item.path is None or item.path in command.query.paths:
                raise
            typed = f"`path:{item.path}`"
            if typed not in str(error):
                raise
            raise QueryError(str(error).replace(typed, f"`{item.label}`")
                             .replace("`path:", f"`{item.name}:")) from None

    def compare(self, command: Compare, today: date | None = None):
        """One row per item over the same tokens (each item's report, by month, boiled down)."""
        from ..metric import CompareReport, CompareRow

        with self._masks.staged():  # one item refused: nothing cached for the others either
            reports = [self._compare_item(command, item, today) for item in command.items]
        rows = [CompareRow.from_report(item.label, report) for item, report in zip(command.items, reports)]
        query = command.query
        as_of = [r.data_as_of for r in reports]
        cocomo_notes = tuple(dict.fromkeys(n for r in reports for n in r.notes if n.startswith(("COCOMO", "vs:cocomo"))))
        # what a zero probably meant (a reversed range, since: after the data ...), as `report` says it, per item
        zero_notes = tuple(f"{item.label}: {report.hint}" for item, report in zip(command.items, reports) if report.hint)
        return CompareReport(rows=tuple(rows), since=query.since, until=query.until,
                             scope_words=dataclasses.replace(query, paths=()).words(),
                             range=query.range.token().removeprefix("range:") if query.range else None,
                             vs_cocomo=query.vs_cocomo,
                             data_as_of=min(as_of) if as_of and all(as_of) else None,
                             notes=zero_notes + cocomo_notes)

    def _path_mask(self, repo: RepoRow, columns: col.RepoColumns, query: Query) -> np.ndarray:
        """Which of the columns' commits changed a path under `path:` (and not only under `path:!`)."""
        cache = columns.store.extras
        done, total = (1, 1) if "paths" in cache else self.index.chunk_path_state(repo.id, columns.store.history.chunks)
        if done < total:
            percent = min(99, 100 * done // max(total, 1))
            raise GadError(f"`{repo.name}` is still indexing which paths its commits changed ({percent} % done, "
                           f"{total - done:,} of {total:,} commits to go); try `path:` again in a few minutes.")
        if "paths" not in cache:
            cache["paths"] = store.PathIndex.from_chunks(self.index.chunks(repo.id, limit=columns.store.history.chunks,
                                                                           columns=("path_offsets", "path_ids")))
        def touching() -> np.ndarray:  # a subsystem's commits do not change until the next sync
            size = self.index.max_path_id() + 1
            include = np.array(self.index.path_ids_under(query.paths), np.int64) if query.paths else None
            exclude = np.array(self.index.path_ids_under(query.exclude_paths), np.int64) if query.exclude_paths else None
            return columns.in_rows(cache["paths"].rows_touching(include, exclude, size))

        return self._masks.get_or_compute(_snapshot_key(columns, "paths", query.paths, query.exclude_paths), touching)

    @staticmethod
    def _trend_bucket(query: Query, keys: np.ndarray, today: date) -> str:
        if query.since is not None:
            end = query.until or today
            return "week" if (end - query.since).days <= 26 * 7 else "month"
        if len(keys):
            days = keys & 0xFFFFFFFF
            return "week" if int(days.max() - days.min()) <= 26 * 7 else "month"
        return "month"


def sync_failed_note(repo: RepoRow, now: datetime) -> str:
    """'web: data as of 3 days ago (2026-12-01 08:00 UTC): the last sync failed; ...' for a report's notes."""
    if repo.last_success_at is None:
        as_of = "data as of its first index"
    else:
        seconds = (now - repo.last_success_at).total_seconds()
        days, hours = int(seconds // 86400), int(seconds // 3600)
        age = f"{days} day{'s' * (days != 1)} ago" if days else f"{hours} hour{'s' * (hours != 1)} ago" if hours \
            else "less than an hour ago"
        as_of = f"data as of {age} ({repo.last_success_at.strftime('%Y-%m-%d %H:%M')} UTC)"
    return (f"{repo.name}: {as_of}: the last sync failed; gad-bot tries again by itself, and "
            f"{command('repos')} says why.")


def _snapshot_key(columns: col.RepoColumns, *what) -> tuple:
    """A cache key for one repository at one generation (a sync makes a new one; the old ages out)."""
    return (columns.repo_id, columns.generation, *what)


def _snapshots_key(columns: list[col.RepoColumns], *what) -> tuple:
    """A cache key for several repositories, each at one generation (flat: hashed once a question)."""
    return (*what, *(part for c in columns for part in (c.repo_id, c.generation)))


def _damage_key(repo: RepoRow) -> str:
    """Where a connectivity finding is kept (the index's meta table): per mirror directory, so that an
    untracked repository's finding never sticks to a new one."""
    return f"missing-objects:{repo.mirror_path}"
