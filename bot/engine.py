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
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import numpy as np

from . import columns as col
from .config import Settings
from .errors import GadError, MirrorError, QueryError, UnknownRepoError
from .index import Index, RepoRow, utcnow
from .metric import Report, is_bot, person_key
from .mirrors import (DEFAULT_SCOPE_PREFIXES, IN_ALL, IN_DEFAULT, IN_HEAD, FetchLimits, Mailmap, Mirror,
                      MirrorStore, open_local)
from .periods import to_epoch_day
from .query import Query
from .sources import default_name, is_local_path

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


def _scope_tips(tips: dict[str, bytes]) -> tuple[set[bytes], set[bytes], set[bytes]]:
    """Tips of every ref, of branches and tags, and of the default branch."""
    every = {t for n, t in tips.items() if n != "HEAD"}
    default = {t for n, t in tips.items() if n.startswith(DEFAULT_SCOPE_PREFIXES)}
    head = {tips["HEAD"]} if "HEAD" in tips else set()
    return every, default, head


class Engine:
    def __init__(self, settings: Settings, index: Index | None = None):
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.index = index or Index(settings.index_path)
        limits = FetchLimits(dict(settings.https_tokens), settings.ssh_key, settings.fetch_timeout_seconds,
                             settings.max_mirror_mb * 1024 * 1024)
        self.store = MirrorStore(settings.mirrors_dir, limits)
        self._cache: dict[int, col.RepoColumns] = {}
        self._cache_lock = threading.Lock()
        self._refresh_bot_patterns()

    @classmethod
    def open(cls, settings: Settings) -> "Engine":
        return cls(settings)

    # -- identity rules ------------------------------------------------------
    # Bump when the way identities are derived changes: every repository's people are rebuilt
    # (from the stored raw identities, without re-walking history) the next time gad-bot opens.
    IDENTITY_RULES = "2: ascii lower-casing, case-insensitive mailmap"

    def _patterns_key(self) -> str:
        rules = [self.IDENTITY_RULES, *sorted(self.settings.bot_patterns)]
        return hashlib.sha256("\x00".join(rules).encode()).hexdigest()

    def _refresh_bot_patterns(self) -> None:
        """New operator bot patterns take effect on every repository without re-walking history."""
        key = self._patterns_key()
        if self.index.get_meta("bot_patterns") == key:
            return
        for repo in self.index.repos():
            try:
                data = Mirror(repo.mirror_path).mailmap_blob()[1]
            except MirrorError:
                data = b""
            with self.index.transaction():
                self._refresh_identities(repo.id, data)
                self._rebuild_columns(repo.id, head_ref=repo.head_ref, mailmap_oid=repo.mailmap_oid)
        self.index.set_meta("bot_patterns", key)

    def _refresh_identities(self, repo_id: int, mailmap_data: bytes) -> None:
        mailmap = Mailmap(mailmap_data)
        identities = self.index.repo_author_identities(repo_id)
        resolved = []
        for author_id, name, email in identities:
            mapped_name, mapped_email = mailmap.resolve(name, email)
            resolved.append((author_id, person_key(mapped_email), person_key(email),
                             is_bot(mapped_name, mapped_email, self.settings.bot_patterns),
                             is_bot(name, email, self.settings.bot_patterns)))
        people = self.index.person_ids({r[1] for r in resolved} | {r[2] for r in resolved})
        self.index.set_repo_authors(repo_id, ((a, people[pm], people[pr], bm, br) for a, pm, pr, bm, br in resolved))

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
        for repo in self.index.repos():
            if repo.source == source:
                return repo
        return None

    def track(self, source: str, name: str | None = None, *, in_place: bool = False,
              progress: Progress | None = None, paths: bool = True) -> SyncResult:
        """Mirror (or register in place) a repository and index it; nothing is left behind on failure.

        With paths=False the changed paths (for `path:`) are left to `index_paths`, so that the
        caller can answer as soon as the commits are in: they take several times longer.
        """
        name = name or default_name(source)
        if self.index.repo(name):
            raise QueryError(f"A repository named `{name}` is already tracked; choose another name with `as:NAME` "
                             f"(CLI: --name) or sync it with `sync {name}`.")
        if in_place:
            path = open_local(source)
            Mirror(path)  # fails early, clearly, if it is not readable
        else:
            if is_local_path(source):
                open_local(source)  # "not a git repository" beats libgit2's "unsupported URL protocol"
            path = self.store.create(source, name, progress)
        try:
            repo_id = self.index.add_repo(name, source, path, in_place)
        except Exception:
            if not in_place:
                self.store.remove(path)
            raise
        result = self.sync_one(self.index.repo_by_id(repo_id), progress=progress, fetch=False, paths=paths)
        if result.error:
            self.untrack(name)
            raise MirrorError(result.error)
        return result

    def index_paths(self, name: str, progress: Progress | None = None) -> tuple[int, float]:
        """Index the changed paths of every commit of `name` that lacks them; (commits, seconds)."""
        repo = self.repo(name)
        started = time.perf_counter()
        with self._repo_lock(repo):
            count = self._index_paths(repo, progress)
        return count, time.perf_counter() - started

    def reclone(self, name: str, progress: Progress | None = None) -> SyncResult:
        """Replace a damaged mirror with a fresh clone, keeping the repository's name, projects and subscriptions."""
        repo = self.repo(name)
        if repo.in_place:
            raise MirrorError(f"`{name}` is registered in place, so gad-bot does not own its copy; repair it with git "
                              "(e.g. `git fsck`, or clone it again), then run `gad-bot sync` for it.")
        with self._repo_lock(repo):
            path = self.store.create(repo.source, repo.name, progress, replace=repo.mirror_path)
            self.index.set_mirror_path(repo.id, path)
        return self.sync_one(self.index.repo_by_id(repo.id), progress=progress, fetch=False)

    def untrack(self, name: str) -> None:
        repo = self.repo(name)
        self.index.remove_repo(repo.id)
        with self._cache_lock:
            self._cache.pop(repo.id, None)
        if not repo.in_place:
            self.store.remove(repo.mirror_path)

    @contextmanager
    def _repo_lock(self, repo: RepoRow):
        """One writer per repository across processes (serve's scheduler and the CLI may overlap)."""
        lock_dir = self.settings.data_dir / "locks"
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
                mirror = Mirror(repo.mirror_path)
                if not repo.in_place:  # never touch the locks of a repository someone else owns
                    mirror.clear_stale_locks()
                if fetch and not repo.in_place:
                    mirror.fetch(self.store.limits, progress)
                else:
                    mirror.check_loose_objects()
                result = self._index_repo(repo, mirror, progress)
        except GadError as error:
            failures = repo.failures + 1
            delay = timedelta(minutes=min(self.settings.sync_interval_minutes * 2 ** min(failures, 10), 24 * 60))
            self.index.record_attempt(repo.id, str(error), now, now + delay)
            log.warning("sync of %s failed: %s", repo.name, error)
            return SyncResult(repo.name, 0, 0, repo.commits, error=str(error))
        indexed = time.perf_counter()
        try:
            if paths:
                self._index_paths(repo, progress)
        except GadError as error:  # the commits are indexed; paths catch up on the next sync
            log.warning("path indexing of %s stopped: %s", repo.name, error)
        self.index.record_attempt(repo.id, None, now)
        done = time.perf_counter()
        log.info("synced %s: %d new commits in %.2f s, changed paths in %.2f s", repo.name, result.new_commits,
                 indexed - started, done - indexed)
        return dataclasses.replace(result, seconds=indexed - started, path_seconds=done - indexed)

    PATH_BATCH = 5_000

    def _index_paths(self, repo: RepoRow, progress: Progress | None = None) -> int:
        """Record the paths changed by each new commit, in resumable batches of one transaction each."""
        mirror = Mirror(repo.mirror_path)
        cache = self.index.path_ids()
        done = 0
        total = self.index.pending_path_count(repo.id) if progress else 0
        after = 0
        while True:
            pending = self.index.pending_path_commits(repo.id, self.PATH_BATCH, after)
            if not pending:
                return done
            after = pending[-1][0]
            changed = [(commit_id, [] if parents > 1 else mirror.changed_paths(oid))
                       for commit_id, oid, parents in pending]
            with self.index.transaction():
                self.index.store_paths(changed, cache)
            done += len(pending)
            if progress:
                progress("paths", done, total)

    def _index_repo(self, repo: RepoRow, mirror: Mirror, progress: Progress | None) -> SyncResult:
        """Bring the index in line with the mirror's refs, in one transaction (METRIC.md rule 1).

        Membership of each scope (every ref; branches and tags; the default branch) is a bit per
        commit. The first index, or one whose previous tips are gone from the object store, walks
        everything once and each scope's complement (the commits only refs outside it reach,
        usually few). Later syncs look only at the refs that moved: see `_scope_deltas`.
        """
        new_tips = mirror.ref_tips()
        old_tips = self.index.stored_tips(repo.id)
        mailmap_oid, mailmap_data = mirror.mailmap_blob()
        if new_tips == old_tips and mailmap_oid == repo.mailmap_oid and repo.generation > 0:
            return SyncResult(repo.name, 0, 0, repo.commits, unchanged=True)
        new_scopes, old_scopes = _scope_tips(new_tips), _scope_tips(old_tips)
        every_old = old_scopes[0]
        incremental = bool(old_tips) and all(mirror.has_commit(t) for t in every_old | old_scopes[2])
        report = (lambda done: progress("index", done, 0)) if progress else None
        with self.index.transaction(), self._tracking_touched(incremental):
            if incremental:
                entered, left = self._scope_deltas(repo, mirror, old_tips, new_tips)
                fresh = [oid for oid in entered[IN_ALL]]
                rows = ((f.oid, f.author_name, f.author_email, f.day, f.time, f.offset, f.parents,
                         IN_ALL | (IN_DEFAULT if f.oid in entered[IN_DEFAULT] else 0)
                         | (IN_HEAD if f.oid in entered[IN_HEAD] else 0))
                        for f in mirror.facts_of(fresh))
                added = self.index.insert_commits(repo.id, rows, self.index.author_ids(), report)
                for bit in (IN_DEFAULT, IN_HEAD):
                    self.index.change_bit(repo.id, entered[bit] - entered[IN_ALL], bit, on=True)
                    self.index.change_bit(repo.id, left[bit], bit, on=False)
                removed = self.index.remove_members(repo.id, left[IN_ALL])
            else:
                added, removed = self._index_everything(repo, mirror, old_tips, new_scopes, report)
            self.index.replace_tips(repo.id, new_tips)
            self._refresh_identities(repo.id, mailmap_data)
            generation, count = self._rebuild_columns(repo.id, head_ref=mirror.head_ref(),
                                                      mailmap_oid=mailmap_oid)
        return SyncResult(repo.name, added, removed, count)

    def _scope_deltas(self, repo: RepoRow, mirror: Mirror, old_tips: dict[str, bytes],
                      new_tips: dict[str, bytes]) -> tuple[dict[int, set[bytes]], dict[int, set[bytes]]]:
        """For each scope bit, the commits that entered it and those that left it since the last sync.

        A commit can enter a scope only through a ref of that scope that moved or appeared, so the
        candidates are walk(new tip, hiding the ref's old tip); a commit already in the scope (per
        the index) did not enter. A commit can leave only through a ref that moved or vanished;
        candidates, walk(old tip, hiding the new one), then leave only if no tip of the scope still
        reaches them. Hiding a whole scope's tips costs a long walk in libgit2, so it is done only
        for refs that appeared or vanished, and for the few candidates to leave.
        """
        def in_scope(bit: int, name: str) -> bool:
            if bit == IN_HEAD:
                return name == "HEAD"
            return name != "HEAD" and (bit == IN_ALL or name.startswith(DEFAULT_SCOPE_PREFIXES))

        candidates_in: dict[int, set[bytes]] = {}
        candidates_out: dict[int, set[bytes]] = {}
        scope_tips: dict[int, tuple[set[bytes], set[bytes]]] = {}
        for bit in (IN_ALL, IN_DEFAULT, IN_HEAD):
            old = {n: t for n, t in old_tips.items() if in_scope(bit, n)}
            new = {n: t for n, t in new_tips.items() if in_scope(bit, n)}
            scope_tips[bit] = (set(old.values()), set(new.values()))
            moved = [n for n in old.keys() & new.keys() if old[n] != new[n]]
            into, out = set(), set()
            for name in moved:
                into.update(mirror.walk_ids([new[name]], [old[name]]))
                out.update(mirror.walk_ids([old[name]], [new[name]]))
            appeared = {new[n] for n in new.keys() - old.keys()} - scope_tips[bit][0]
            vanished = {old[n] for n in old.keys() - new.keys()} - scope_tips[bit][1]
            if appeared:
                into.update(mirror.walk_ids(appeared, scope_tips[bit][0]))
            if vanished:
                out.update(mirror.walk_ids(vanished, scope_tips[bit][1]))
            candidates_in[bit], candidates_out[bit] = into, out
        known = self.index.member_bits(repo.id, set().union(*candidates_in.values(), *candidates_out.values()))
        entered = {bit: {c for c in candidates_in[bit] if not known.get(c, 0) & bit} for bit in candidates_in}
        left = {}
        for bit, candidates in candidates_out.items():
            members = {c for c in candidates if known.get(c, 0) & bit}
            left[bit] = set(mirror.walk_ids(members, scope_tips[bit][1])) if members else set()
        return entered, left

    def _index_everything(self, repo: RepoRow, mirror: Mirror, old_tips: dict[str, bytes],
                          new_scopes: tuple[set[bytes], set[bytes], set[bytes]], report) -> tuple[int, int]:
        """The first index, or a full comparison when the previous tips are gone from the object store."""
        every_new = new_scopes[0]
        # Commits no longer reachable from any ref stop counting (deleted refs, force-pushes).
        gone = list(self.index.member_oids(repo.id) - set(mirror.walk_ids(every_new))) if old_tips else []
        scopes = ((IN_DEFAULT, new_scopes[1]), (IN_HEAD, new_scopes[2]))
        # Only tips outside a scope can reach commits outside it: push those, hide the scope's.
        outside = {bit: set(mirror.walk_ids(every_new - tips, tips)) if tips else None for bit, tips in scopes}

        def bits_of(oid: bytes) -> int:
            return IN_ALL | sum(bit for bit, _ in scopes if outside[bit] is not None and oid not in outside[bit])

        known = self.index.member_oids(repo.id) if old_tips else set()
        rows = ((f.oid, f.author_name, f.author_email, f.day, f.time, f.offset, f.parents, bits_of(f.oid))
                for f in mirror.walk_facts(every_new) if f.oid not in known)
        added = self.index.insert_commits(repo.id, rows, self.index.author_ids(), report)
        for bit, _ in scopes:
            lacking = self.index.member_oids(repo.id, lacking_bit=bit)
            if outside[bit] is None:  # e.g. no default branch at all: nothing is on it
                self.index.change_bit(repo.id, self.index.member_oids(repo.id) - lacking, bit, on=False)
                continue
            self.index.change_bit(repo.id, lacking - outside[bit], bit, on=True)
            self.index.change_bit(repo.id, outside[bit] - lacking, bit, on=False)
        return added, self.index.remove_members(repo.id, gone)

    @contextmanager
    def _tracking_touched(self, enabled: bool):
        self.index.touched = set() if enabled else None
        try:
            yield
        finally:
            self.index.touched = None

    def _rebuild_columns(self, repo_id: int, *, head_ref: str | None, mailmap_oid: str | None) -> tuple[int, int]:
        """Rebuild the repository's column cache inside the caller's transaction.

        After an incremental update only the touched rows are read back from SQL and patched into
        the previous columns; otherwise every row is read.
        """
        repo = self.index.repo_by_id(repo_id)
        author_map = self.index.repo_author_map(repo_id)
        previous = self.index.load_columns(repo_id) if self.index.touched is not None else None
        if previous is not None:
            old = col.RepoColumns.from_blobs(repo_id, repo.name, previous, author_map)
            touched = np.fromiter(self.index.touched, np.int64, len(self.index.touched))
            keep = ~np.isin(old.commit_ids, touched)
            columns = old.patched(keep, self.index.member_rows_for(repo_id, self.index.touched), author_map)
        else:
            columns = col.RepoColumns.from_rows(repo_id, repo.name, 0, self.index.member_rows(repo_id), author_map)
        skipped = int(np.count_nonzero((columns.days == col.BAD_DAY) & ((columns.bits & IN_DEFAULT) != 0)))
        generation = self.index.finish_update(repo_id, head_ref=head_ref, mailmap_oid=mailmap_oid,
                                              commits=len(columns.commit_ids), skipped=skipped)
        columns.generation = generation
        self.index.store_columns(repo_id, generation, len(columns.commit_ids), columns.to_blobs())
        return generation, len(columns.commit_ids)

    # -- reports -------------------------------------------------------------
    def resolve(self, names: Iterable[str]) -> list[RepoRow]:
        """Tracked repositories for the names a user typed (projects expand to their repositories)."""
        resolved: dict[int, RepoRow] = {}
        for name in names:
            repo = self.index.repo(name)
            if repo is not None:
                resolved[repo.id] = repo
                continue
            members = self.index.project_repo_ids(name)
            if members is None:
                raise UnknownRepoError(name, self.known_names())
            if not members:
                raise QueryError(f"Project `{name}` has no repositories; add some with `project add {name} REPO...`.")
            for repo_id in members:
                resolved[repo_id] = self.index.repo_by_id(repo_id)
        return list(resolved.values())

    def columns_of(self, repo: RepoRow) -> col.RepoColumns:
        """The repository's columns, from memory when its generation has not changed."""
        generation = self.index.generations([repo.id]).get(repo.id)
        with self._cache_lock:
            cached = self._cache.get(repo.id)
        if cached is not None and cached.generation == generation:
            return cached
        row = self.index.load_columns(repo.id)
        if row is None:
            raise MirrorError(f"`{repo.name}` has not been indexed yet; run `sync {repo.name}`.")
        columns = col.RepoColumns.from_blobs(repo.id, repo.name, row, self.index.repo_author_map(repo.id))
        with self._cache_lock:
            self._cache[repo.id] = columns
        return columns

    def _branch_mask(self, repo: RepoRow, columns: col.RepoColumns, branch: str) -> np.ndarray:
        """Membership of `branch:NAME`: the default branch's set, plus what only NAME has, minus what only HEAD has."""
        head_mask = (columns.bits & IN_HEAD) != 0
        if branch == "HEAD":
            return head_mask
        mirror = Mirror(repo.mirror_path)
        tip = mirror.branch_tip(branch)
        if tip is None:
            names = mirror.branches()
            hint = ", ".join(f"`{b}`" for b in names[:8]) + (" ..." if len(names) > 8 else "")
            raise QueryError(f"`{repo.name}` has no branch `{branch}`; its branches are {hint or 'none'}.")
        head_tip = self.index.stored_tips(repo.id).get("HEAD")
        if head_tip is None:
            only_branch, only_head = mirror.walk_ids([tip]), []
            mask = np.zeros(len(columns.commit_ids), bool)
        else:
            only_branch = mirror.walk_ids([tip], [head_tip])
            only_head = mirror.walk_ids([head_tip], [tip])
            mask = head_mask.copy()
        if only_branch:
            mask |= np.isin(columns.commit_ids, np.array(self.index.commit_ids_for(only_branch), np.int64))
        if only_head:
            mask &= ~np.isin(columns.commit_ids, np.array(self.index.commit_ids_for(only_head), np.int64))
        return mask

    def _allowed_people(self, globs: tuple[str, ...]) -> np.ndarray:
        import fnmatch

        rows = self.index.execute("SELECT id, email FROM people").fetchall()
        size = max((r[0] for r in rows), default=0) + 1
        allowed = np.zeros(size, bool)
        for person_id, email in rows:
            if any(fnmatch.fnmatchcase(email, g) for g in globs):
                allowed[person_id] = True
        return allowed

    def report(self, query: Query, today: date | None = None) -> Report:
        """Answer a Query from the index (never by walking history, except for a named branch's divergence)."""
        today = today or datetime.now(timezone.utc).date()
        repos = self.resolve(query.repos)
        scope_bit = {"default": IN_DEFAULT, "all": IN_ALL, "branch": IN_HEAD}[query.scope.kind]
        flt = col.Filter(scope_bit=scope_bit,
                         since_day=to_epoch_day(query.since) if query.since else None,
                         until_day=to_epoch_day(query.until) if query.until else None,
                         mailmap=query.mailmap, bots=query.bots,
                         allowed_people=self._allowed_people(query.authors) if query.authors else None)
        touching = self._path_commits(repos, query) if (query.paths or query.exclude_paths) else None
        selections = []
        for repo in repos:
            columns = self.columns_of(repo)
            mask = self._branch_mask(repo, columns, query.scope.branch) if query.scope.kind == "branch" else None
            if touching is not None:
                if mask is None:
                    mask = (columns.bits & scope_bit) != 0
                mask = mask & np.isin(columns.commit_ids, touching)
            selections.append(col.select(columns, flt, mask))
        totals, keys = col.totals(selections)
        rows: list = []
        if query.by in ("week", "month", "quarter", "year"):
            rows = col.by_period(selections, keys, query.by, first_day=flt.since_day, last_day=flt.until_day)
        elif query.by == "person":
            rows = col.by_person(selections, keys, self.index.people_matching(np.unique(keys >> col.DAY_BITS).tolist()))
        elif query.by == "repo":
            for selection in selections:
                repo_totals, _ = col.totals([selection])
                rows.append(col.Row(selection.name, repo_totals))
            rows.sort(key=lambda r: (-r.totals.person_days, r.key))
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
                      extra={"paths": query.paths, "exclude_paths": query.exclude_paths}
                      if (query.paths or query.exclude_paths) else {})
        if query.vs_cocomo:
            from .cocomo import with_cocomo  # runs a line counter only when asked

            report = with_cocomo(self, repos, query, report)
        return report

    def _path_commits(self, repos: list[RepoRow], query: Query) -> np.ndarray:
        for repo in repos:
            pending = self.index.pending_path_count(repo.id)
            if pending:
                raise GadError(f"`{repo.name}` is still indexing which paths its commits changed ({pending:,} of "
                               f"{repo.commits:,} commits to go); try `path:` again in a few minutes.")
        return np.array(self.index.commits_touching(query.paths, query.exclude_paths), np.int64)

    @staticmethod
    def _trend_bucket(query: Query, keys: np.ndarray, today: date) -> str:
        if query.since is not None:
            end = query.until or today
            return "week" if (end - query.since).days <= 26 * 7 else "month"
        if len(keys):
            days = keys & 0xFFFFFFFF
            return "week" if int(days.max() - days.min()) <= 26 * 7 else "month"
        return "month"
