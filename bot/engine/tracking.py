"""Tracking: what gad-bot keeps of each repository and keeps in step with its source.

track (clone or register in place, then index), sync (fetch, index the new commits, then their changed
paths), untrack, reclone; the mirrors' health (connectivity, leftovers); one writer per repository
across processes; the identity rules (bot patterns, automated co-authors) applied to every repository
without re-walking history. Forge organizations, which track many repositories at once, are in
bot/engine/forgeorgs.py.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import GadError, MirrorError, QueryError, command
from ..store.index import Index, RepoRow, utcnow
from .audiences import ADMINS_AUDIENCE, EVERYONE_AUDIENCE, Audience
from .catalog import Catalog

if TYPE_CHECKING:  # the write side (pygit2, git children) is imported when a track or sync needs it
    from ..store.indexer import Indexer
    from ..store.mirrors.clones import MirrorStore
    from ..store.mirrors.mirror import Mirror
    from ..store.sources import SourcePolicy

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
    fetch_seconds: float | None = None  # the fetch alone (None: none ran), for /metrics


class Tracking:
    """track / sync / untrack / reclone, the mirrors' health, the identity rules; one writer per repository."""

    def __init__(self, settings: Settings, index: Index, catalog: Catalog, forget: Callable[[int], None]):
        self.settings = settings
        self.index = index
        self.catalog = catalog
        self._forget = forget  # drops what readers keep of an untracked repository
        self._store: MirrorStore | None = None
        self._indexer: Indexer | None = None

    @property
    def store(self) -> "MirrorStore":
        """The mirror store (pygit2), created on first use: reports never need it."""
        if self._store is None:
            from ..store.mirrors.clones import MirrorStore
            from ..store.mirrors.remote import FetchLimits

            limits = FetchLimits(dict(self.settings.https_tokens), self.settings.ssh_key,
                                 self.settings.fetch_timeout_seconds, self.settings.max_mirror_mb * 1024 * 1024)
            # the mirrors the index names: a clone never takes one of their directories, nor removes one
            self._store = MirrorStore(self.settings.mirrors_dir, limits, locks=self._locks_dir, named=self._named_mirrors)
        return self._store

    @property
    def indexer(self) -> "Indexer":
        if self._indexer is None:
            from ..store.indexer import Indexer

            self._indexer = Indexer(self.index, tuple(self.settings.bot_patterns),
                                    tuple(self.settings.automated_coauthors))
        return self._indexer

    # -- identity rules ------------------------------------------------------
    # Bump when the way identities are derived changes: every repository's people are rebuilt
    # (from the stored raw identities, without re-walking history) the next time gad-bot opens.
    IDENTITY_RULES = "3: ascii lower-casing, case-insensitive mailmap, automated co-authors"

    def _patterns_key(self) -> str:
        rules = [self.IDENTITY_RULES, *sorted(self.settings.bot_patterns), "automated:",
                 *sorted(self.settings.automated_coauthors)]
        return hashlib.sha256("\x00".join(rules).encode()).hexdigest()

    def refresh_bot_patterns(self) -> None:
        """New operator bot patterns take effect on every repository without re-walking history."""
        key = self._patterns_key()
        if self.index.get_meta("bot_patterns") == key:
            return
        from ..store.mirrors.mirror import Mirror

        for repo in self.index.repos():
            try:
                data = Mirror(repo.mirror_path).mailmap_blob()[1]
            except MirrorError:
                data = b""
            self.indexer.rederive_people(repo, data)
        self.index.set_meta("bot_patterns", key)

    def track(self, source: str, name: str | None = None, *, in_place: bool = False,
              progress: Progress | None = None, paths: bool = True, guarded: bool = False) -> SyncResult:
        """Mirror (or register in place) a repository and index it; nothing is left behind on failure.

        With paths=False the changed paths (for `path:`) are left to `index_paths`, so that the
        caller can answer as soon as the commits are in: they take several times longer.
        guarded=True (a source typed in Slack): this and every later fetch connects only where the
        source policy allows, whatever the server redirects to or its name resolves to later.
        """
        from ..store.mirrors.localcopy import open_local
        from ..store.mirrors.mirror import Mirror
        from ..store.sources import default_name, is_local_path

        name = name or default_name(source)
        self.check_new_name(name)
        if self.index.repo(name):
            raise QueryError(f"A repository named `{name}` is already tracked; choose another name with `as:NAME` "
                             f"(CLI: --name) or sync it with {command('sync ' + name)}.")
        same = self.catalog.find_by_source(source)
        if same is not None:  # the same history twice would be counted, synced and stored twice
            raise QueryError(f"That repository is tracked already as `{same.name}`; ask about `{same.name}`, "
                             f"or untrack it first to track it under another name.")
        if in_place:
            path = open_local(source)
            Mirror(path)  # fails early, clearly, if it is not readable
        else:
            if is_local_path(source):
                open_local(source)  # "not a git repository" beats libgit2's "unsupported URL protocol"
        audience = self.first_audience(source, in_place)
        with nullcontext() if in_place else self.store.creating():  # no orphan until the index names it
            if not in_place:
                path = self.store.create(source, name, progress, guard=self.policy if guarded else None)
            try:
                repo_id = self.index.add_repo(name, source, path, in_place, guarded=guarded and not in_place,
                                              audience=audience.text())
            except Exception:
                if not in_place:
                    self.store.remove(path)
                raise
        result = self.sync_one(self.index.repo_by_id(repo_id), progress=progress, fetch=False, paths=paths)
        if result.error:
            self.untrack(name)
            raise MirrorError(result.error)
        return result

    def check_new_name(self, name: str) -> None:
        """A name that reads as a tracked repository's or project's (`wеb` with a Cyrillic е beside `web`) is refused
        in one sentence (bot/engine/lookalikes.py): people would count, subscribe to or be told about the wrong one."""
        from .lookalikes import refuse_new_name

        refuse_new_name(name, [*self.index.repo_names(), *self.index.projects()])

    def first_audience(self, source: str, in_place: bool) -> Audience:
        """Who may see a repository tracked now: admins only when its fetches carry the operator's credentials
        (it may be private), everyone for a public source or a local path (bot/engine/audiences.py)."""
        from ..store.mirrors.remote import has_credentials
        from ..store.sources import is_local_path

        if in_place or is_local_path(source):
            return EVERYONE_AUDIENCE
        if has_credentials(source, dict(self.settings.https_tokens), self.settings.ssh_key):
            return ADMINS_AUDIENCE
        return EVERYONE_AUDIENCE

    def index_paths(self, name: str, progress: Progress | None = None) -> tuple[int, float]:
        """What a first index leaves for after its answer: the refs outside branches and tags, then the changed
        paths of every commit that lacks them; (commits whose paths were indexed, seconds)."""
        repo = self.catalog.repo(name)
        started = time.perf_counter()
        with self._repo_lock(repo):
            self._index_other_refs(repo, self._mirror(repo), progress)
            count = self.indexer.index_paths(self.index.repo_by_id(repo.id), self._mirror(repo), progress)
        return count, time.perf_counter() - started

    def index_other_refs(self, name: str, progress: Progress | None = None) -> SyncResult | None:
        """The second walk of a first index, on its own (None when there is nothing left to walk)."""
        repo = self.catalog.repo(name)
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
        repo = self.catalog.repo(name)
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
        repo = self.catalog.repo(name)
        self.index.remove_repo(repo.id)
        self._forget(repo.id)
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
        repos = [self.catalog.repo(n) for n in names] if names else self.index.repos()
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
        fetched = None
        try:
            with self._repo_lock(repo):
                mirror = self._mirror(repo)
                if not repo.in_place:  # never touch the locks of a repository someone else owns
                    mirror.clear_stale_locks()
                if fetch and not repo.in_place:
                    fetch_started = time.perf_counter()
                    mirror.fetch(self.store.limits, progress, self._guard(repo))
                    fetched = time.perf_counter() - fetch_started
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
        return dataclasses.replace(result, seconds=indexed - started, path_seconds=done - indexed, fetch_seconds=fetched)

    @staticmethod
    def _mirror(repo: RepoRow) -> "Mirror":
        from ..store.mirrors.mirror import Mirror

        return Mirror(repo.mirror_path)

    def _index_repo(self, repo: RepoRow, mirror: "Mirror", progress: Progress | None) -> SyncResult:
        """Bring the index in line with the mirror's refs (METRIC.md rule 1): see bot/store/indexer.py."""
        outcome = self.indexer.index_commits(repo, mirror, progress)
        return SyncResult(repo.name, outcome.new_commits, outcome.removed_commits, outcome.commits,
                          unchanged=outcome.unchanged)


def _damage_key(repo: RepoRow) -> str:
    """Where a connectivity finding is kept (the index's meta table): per mirror directory, so that an
    untracked repository's finding never sticks to a new one."""
    return f"missing-objects:{repo.mirror_path}"
