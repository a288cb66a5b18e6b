"""What questions read: each repository's columns per generation, and what they key on them.

A snapshot is a repository's derived arrays and the chunks they cover, read in one transaction and
kept in memory until a sync makes a new generation. On it: the graph of parents, the masks a
question asks for (a branch, a range, paths), people's e-mails and `author:` globs, a project's
merged rows; all within GAD_QUERY_CACHE_MB (bot/engine/caches.py), least recently used out first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from . import columns as col
from .caches import BoundedCache
from ..config import Settings
from ..errors import GadError, MirrorError, QueryError, command, literal, nearest
from ..store import store
from ..store.index import Index, RepoRow
from ..store.store import IN_HEAD
from .query import Query, RefRange


PEOPLE_BLOCK = 256  # people ids per cached block of e-mails (ids are dense: one per address ever seen)


class Snapshots:
    """Columns per repository and generation, the graph, masks and people, cached within a budget."""

    def __init__(self, settings: Settings, index: Index):
        self.index = index
        self.loaded: dict[int, col.RepoColumns] = {}  # repository id -> its columns at the generation last read
        # What members' questions key (ranges, branches, paths; people's e-mails): within
        # GAD_QUERY_CACHE_MB, least recently used out first (bot/engine/caches.py)
        budget = settings.query_cache_mb * 1024 * 1024
        self.masks = BoundedCache("commit masks", budget - budget // 8)
        self.people = BoundedCache("people's e-mails", budget // 8)
        self._globs: dict[tuple, np.ndarray] = {}
        self._sets: dict[bytes, ColumnSet] = {}  # signature of (id, generation) pairs -> the set (a few kept)
        self._lock = threading.Lock()

    def forget(self, repo_id: int) -> None:
        """Drop a repository's columns (it was untracked)."""
        with self._lock:
            self.loaded.pop(repo_id, None)
            self._sets = {k: held for k, held in self._sets.items() if all(c.repo_id != repo_id for c in held.columns)}

    def columns_of(self, repo: RepoRow, generation: int | None = None) -> col.RepoColumns:
        """The repository's columns, from memory when its generation (read now unless given) has not changed."""
        if generation is None:
            generation = self.index.generations([repo.id]).get(repo.id)
        with self._lock:
            cached = self.loaded.get(repo.id)
        if cached is not None and cached.generation == generation:
            return cached
        with self.index.snapshot():  # the chunks and the arrays derived from them, as of one commit
            row = self.index.derived(repo.id)
            if row is None or row.generation != generation or generation == 0:
                raise MirrorError(self.not_indexed(repo))
            history = store.History.load(self.index, repo.id, row.chunks)
            coauthors = store.Coauthors.load(self.index, repo.id, row.chunks)
            author_map = self.index.repo_author_map(repo.id)
        derived = store.Derived.from_row(row)
        columns = col.RepoColumns.from_store(repo.id, repo.name, generation, history.keys, history.author_ids,
                                             history.days, derived.bits, derived.report_order, author_map)
        columns.coauthors = coauthors
        columns.store = store.Snapshot(history, derived)
        with self._lock:
            self.loaded[repo.id] = columns
        return columns

    def column_set(self, repos: list[RepoRow]) -> ColumnSet | None:
        """The repositories' columns as a ColumnSet, kept per set of (id, generation) pairs; None when one of them
        has no figures yet (the caller's loop over them says which, in its order)."""
        key = signature(repos)
        with self._lock:
            found = self._sets.get(key)
        if found is not None:
            return found
        columns = ColumnsList()
        try:
            for repo in repos:
                columns.append(self.columns_of(repo, repo.generation))
        except MirrorError:
            return None
        columns.signature = signature(columns, "repo_id")
        found = ColumnSet.of(columns)
        with self._lock:
            # a set holds its columns alive: drop those that a newer generation of any repository replaced
            self._sets = {k: held for k, held in self._sets.items()
                          if all(self.loaded.get(c.repo_id) is c for c in held.columns)}
            while len(self._sets) >= 8:
                self._sets.pop(next(iter(self._sets)))
            self._sets[key] = found
        return found

    def not_indexed(self, repo: RepoRow) -> str:
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

    def graph(self, columns: col.RepoColumns) -> tuple[np.ndarray, np.ndarray, store.Lookup]:
        """Parents as rows (CSR) and the key lookup of a repository's snapshot, built once per generation."""
        snapshot = columns.store
        if "graph" not in snapshot.extras:
            history, derived = snapshot.history, snapshot.derived
            snapshot.extras["graph"] = (store.parent_offsets(history.parent_counts), derived.parent_rows,
                                        store.Lookup.build(history.keys, derived.key_order))
        return snapshot.extras["graph"]

    def reachable_rows(self, columns: col.RepoColumns, tips: list[bytes]) -> np.ndarray:
        """Per store row: reachable from any of these commits (raw ids)."""
        offsets, parents, lookup = self.graph(columns)
        starts = lookup.rows_of(np.array([store.key_of(t) for t in tips], np.int64))
        return store.reachable(offsets, parents, starts[starts >= 0])

    def require_other_refs(self, repos: list[RepoRow], what: str) -> None:
        """Refuse, for now, what needs the refs a first index walks last (outside branches and tags)."""
        for repo in repos:
            if self.index.other_refs_pending(repo.id):
                raise GadError(f"`{repo.name}` is still indexing the commits that only refs outside its branches "
                               f"and tags reach (pull requests, notes, remotes); ask for {what} again in a few "
                               "minutes. Without it the answer is ready now.")

    def branch_mask(self, repo: RepoRow, columns: col.RepoColumns, branch: str) -> np.ndarray:
        """Membership of `branch:NAME`: every commit its tip reaches, by reachability over the indexed graph."""
        head_mask = (columns.bits & IN_HEAD) != 0
        if branch == "HEAD":
            return head_mask
        tips = self.index.stored_tips(repo.id)
        tip = next((tips[c] for c in (branch, f"refs/heads/{branch}", f"refs/remotes/origin/{branch}",
                                      f"refs/tags/{branch}") if c in tips), None)
        if tip is None:
            self.require_other_refs([repo], f"`branch:{branch}`")  # it may be a ref not walked yet
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
        reached = self.masks.get_or_compute(snapshot_key(columns, "branch", tip),
                                             lambda: self.reachable_rows(columns, [tip]))
        return columns.in_rows(reached)

    def commits_disjoint(self, columns: list[col.RepoColumns]) -> bool:
        """Whether no commit is in two of these repositories (no fork or copy among them): then a union's
        commits add up, with no sort of them all (METRIC.md rule 6 either way). Kept per set of snapshots."""
        if len(columns) < 2:
            return True
        return self.masks.get_or_compute(
            snapshots_key(columns, "disjoint"),
            lambda: not col.has_repeats(np.concatenate([c.commit_ids for c in columns])))

    def merged(self, columns: list[col.RepoColumns], masks: list, flt: col.Filter, query: Query,
               held: ColumnSet | None = None) -> col.Merged | None:
        """The repositories' rows as one sorted selection (columns.Merged), kept per set of snapshots, when the
        question allows it: several repositories that share no commit, no mask (branch:NAME, range:, by:release,
        path:), no co-authors, and room for it in half the query cache (else None)."""
        if len(columns) < 2 or query.coauthors or (held is None and any(m is not None for m in masks)) or (query.by == "repo" and query.orgs):
            return None
        rows = held.rows if held is not None else sum(len(c.days) for c in columns)
        if rows * col.MERGED_BYTES_PER_ROW > self.masks.budget // 2:
            return None  # would not be kept: merging again for every question costs more than it saves
        if not self.commits_disjoint(columns):
            return None
        return self.masks.get_or_compute(snapshots_key(columns, "merged", flt.scope_bit, flt.mailmap, flt.bots),
                                          lambda: col.merge(columns, flt.scope_bit, flt.mailmap, flt.bots))

    def people_names(self, person_ids: np.ndarray) -> dict[int, str]:
        """E-mail of each person id. People rows never change once written, so they are cached (within a budget),
        in blocks of PEOPLE_BLOCK consecutive ids read with one range query: one look-up per block rather than one
        per person (7 of a by:person's 11 ms over 2,532 people went to the look-ups)."""
        names: dict[int, str] = {}
        ids = np.unique(np.asarray(person_ids, np.int64))
        blocks = ids // PEOPLE_BLOCK
        for block in np.unique(blocks).tolist():
            wanted = ids[blocks == block]
            places = (wanted - block * PEOPLE_BLOCK).tolist()
            emails = self.people.get(("block", block))
            if emails is None or any(emails[i] is None for i in places):
                emails = self._people_block(block)  # first asked, or someone new since the block was read
                self.people.put(("block", block), emails)
            names.update((person, emails[i]) for person, i in zip(wanted.tolist(), places) if emails[i] is not None)
        return names

    def _people_block(self, block: int) -> tuple[str | None, ...]:
        first = block * PEOPLE_BLOCK
        emails: list[str | None] = [None] * PEOPLE_BLOCK
        for person, email in self.index.people_between(first, first + PEOPLE_BLOCK - 1):
            emails[person - first] = email
        return tuple(emails)

    def allowed_people(self, globs: tuple[str, ...]) -> np.ndarray:
        """Which person ids `author:` globs match, by id; cached until new people appear."""
        import fnmatch
        import re

        newest = self.index.execute("SELECT coalesce(max(id), 0) FROM people").fetchone()[0]
        key = (globs, newest)
        with self._lock:
            cached = self._globs.get(key)
        if cached is not None:
            return cached
        pattern = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))  # fnmatchcase, all at once
        allowed = np.zeros(newest + 1, bool)
        for person_id, email in self.index.execute("SELECT id, email FROM people"):
            if pattern.match(email):
                allowed[person_id] = True
        with self._lock:
            self._globs = {key: allowed}  # one entry: a new person or new globs replace it
        return allowed

    def touches(self, repos: list[RepoRow]) -> Callable[[str], bool]:
        """Whether any commit of `repos` (in any scope, at any time) changed a path under a prefix."""
        def touched(prefix: str) -> bool:
            probe = Query(repos=(), paths=(prefix,))
            return any(bool(self.path_mask(repo, self.columns_of(repo), probe).any()) for repo in repos)

        return touched

    @staticmethod
    def newest_day(columns: col.RepoColumns, scope_bit: int, mask: np.ndarray | None) -> int | None:
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

        _, _, lookup = self.graph(columns)
        tips = self.index.stored_tips(repo.id)
        return refs.resolve(
            repo.name, name, tips,
            rows_of_oid=lambda oid: int(lookup.rows_of(np.array([store.key_of(oid)], np.int64))[0]),
            rows_of_prefix=lambda prefix: refs.rows_for_prefix(lookup.sorted_keys, lookup.order, prefix),
            full_oid_of_row=lambda row: self.oid_of_row(repo, columns, row))

    def oid_of_row(self, repo: RepoRow, columns: col.RepoColumns, row: int) -> bytes:
        """The full 20-byte id of a store row (read from its chunk: reports keep only 8-byte keys)."""
        first = 0
        for chunk in self.index.chunks(repo.id, limit=columns.store.history.chunks, columns=()):
            if row < first + chunk.rows:
                oids = self.index.chunk(repo.id, chunk.seq, columns=("oids",)).oids
                at = (row - first) * store.OID_BYTES
                return oids[at:at + store.OID_BYTES]
            first += chunk.rows
        raise IndexError(row)

    def reach_from_row(self, columns: col.RepoColumns, row: int) -> np.ndarray:
        """Per store row: reachable from the commit at `row` (cached per generation)."""
        def reach() -> np.ndarray:
            offsets, parents, _ = self.graph(columns)
            return store.reachable(offsets, parents, np.array([row], np.int64))

        return self.masks.get_or_compute(snapshot_key(columns, "reach", row), reach)

    def range_mask(self, repo: RepoRow, columns: col.RepoColumns, span: RefRange) -> np.ndarray:
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
            self.require_other_refs([repo], f"`range:{span.start or ''}..{span.end}`")
            raise unknown[0] if len(unknown) == 1 else QueryError(" ".join(map(str, unknown)))
        end, start = found[span.end], found.get(span.start) if span.start else None
        def between() -> np.ndarray:
            rows = self.reach_from_row(columns, end)
            if start is not None:
                rows = rows & ~self.reach_from_row(columns, start)
            return columns.in_rows(rows)

        return self.masks.get_or_compute(snapshot_key(columns, "range", start, end), between)

    def path_mask(self, repo: RepoRow, columns: col.RepoColumns, query: Query) -> np.ndarray:
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

        return self.masks.get_or_compute(snapshot_key(columns, "paths", query.paths, query.exclude_paths), touching)


def snapshot_key(columns: col.RepoColumns, *what) -> tuple:
    """A cache key for one repository at one generation (a sync makes a new one; the old ages out)."""
    return (columns.repo_id, columns.generation, *what)


def snapshots_key(columns: list[col.RepoColumns], *what) -> tuple:
    """A cache key for several repositories, each at one generation. Their (id, generation) pairs go in as one
    bytes object, whose hash Python keeps: a flat tuple of 16,000 ints was built and hashed again for every
    cache a question asks (five of them, ~1 ms each at 8,000 repositories)."""
    found = columns.signature if isinstance(columns, ColumnsList) else None
    return (*what, found if found is not None else signature(columns, "repo_id"))


def signature(items: list, id_field: str = "id") -> bytes:
    """The (id, generation) of each repository (RepoRows, or columns with id_field="repo_id"), in order, as bytes:
    two C loops over attributes, not a Python tuple per repository."""
    ids = np.fromiter(map(attrgetter(id_field), items), np.int64, len(items))
    generations = np.fromiter(map(attrgetter("generation"), items), np.int64, len(items))
    return ids.tobytes() + generations.tobytes()


class ColumnsList(list):
    """Several repositories' columns with their snapshots_key part worked out once (never changed once made)."""

    signature: bytes | None = None


@dataclass
class ColumnSet:
    """A set of repositories' columns at their generations, with what a question without per-repository masks
    (no branch:NAME, range:, path:, by:release) would otherwise work out by a loop over every repository:
    kept per set of snapshots, so that a warm report over 8,000 repositories does not visit each (issue 32)."""

    columns: ColumnsList
    rows: int  # the repositories' commits, together
    coauthored: tuple[int, ...]  # positions of the columns whose co-author entries are read and not empty
    incomplete: int | None  # the first position whose `Co-authored-by:` trailers are still being read
    _newest: dict = field(default_factory=dict)  # scope bit -> the newest day in scope, over every repository

    @classmethod
    def of(cls, columns: ColumnsList) -> "ColumnSet":
        complete = [c.coauthors.complete for c in columns]
        return cls(columns, sum(len(c.days) for c in columns),
                   tuple(n for n, c in enumerate(columns) if complete[n] and len(c.coauthors.rows)),
                   next((n for n, done in enumerate(complete) if not done), None))

    @property
    def complete(self) -> bool:
        return self.incomplete is None

    def newest_day(self, scope_bit: int) -> int | None:
        """Snapshots.newest_day over every repository, without a mask: where the data ends."""
        if scope_bit not in self._newest:
            days = [d for d in (Snapshots.newest_day(c, scope_bit, None) for c in self.columns) if d is not None]
            self._newest[scope_bit] = max(days) if days else None
        return self._newest[scope_bit]
