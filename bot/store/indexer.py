"""Bringing the index in line with a mirror: commits first (reports answer), changed paths after.

The physical limit of a first index is reading each commit once, as `git log` does, and each
commit's changed paths once, as `git log --name-only` does; this module streams exactly that
(bot/store/history.py) into append-only chunks (bot/store/index.py) and derives the rest with arrays
(bot/store/store.py). Everything is resumable:

- commits go in chunk by chunk, each chunk in its own transaction together with the walk's frontier
  (the commits still to visit). A process killed mid-walk leaves whole chunks and the frontier; the
  next sync walks on from the frontier, never from the start (METRIC.md's figures only appear once
  the walk is finished: a partially walked repository says how far along it is instead);
- the end of a walk derives scope bits, parents as rows and the report order in one transaction,
  with the new ref tips and a new generation (readers switch at that commit);
- changed paths are filled in per chunk, each its own transaction, by `git diff-tree --stdin`
  (one child per chunk, so memory stays bounded; two at once on a machine with two cores or more).
  A first walk leaves the `Co-authored-by:` trailers (METRIC.md rule 7) to the same diff-tree,
  which parses every commit anyway: in the walk's `git log` they cost 12 % of the time to the
  first answer. Later walks (a few new commits) read them at once.

A sync is the same walk with the previously indexed tips hidden (`git log NEW --not OLD`): only new
commits are read, and reachability over the stored graph decides what still counts.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import graph
from . import history as git_history
from . import store
from .index import ChunkRow, Index, RepoRow
from ..metric import is_automated_coauthor, is_bot, person_key
from .mirrors.mailmap import Mailmap
from .mirrors.mirror import Mirror
from .mirrors.refs import DEFAULT_SCOPE_PREFIXES

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (phase, done, total or 0 when unknown)
# Rows per chunk: a kill -9 loses at most the chunk being walked (and the path chunks in flight), so a
# chunk is ~2 % of a million-commit history; fewer, larger chunks save nothing measurable.
CHUNK = 20_000
# Compact a repository's chunks when this share of its rows no longer counts anywhere (force-pushed
# branches, rewritten pull requests), or when many small syncs left many small chunks.
DEAD_SHARE_TO_COMPACT = 0.2
CHUNKS_TO_COMPACT = 64


@dataclass(frozen=True)
class IndexOutcome:
    new_commits: int  # commits that count now and did not before
    removed_commits: int  # commits that counted before and no longer do
    commits: int  # commits reachable from some ref
    unchanged: bool = False
    other_refs_pending: bool = False  # refs outside branches and tags are left to the next walk


class Indexer:
    def __init__(self, index: Index, bot_patterns: tuple[str, ...], automated_coauthors: tuple[str, ...] = ()):
        self.index = index
        self.bot_patterns = bot_patterns
        self.automated_coauthors = automated_coauthors
        # git's output goes through temporary files (bot/store/history.py); beside the index they are on the
        # data volume, which has room, rather than in a /tmp that may be memory.
        self.scratch_dir = Path(index.path).parent

    # -- identities ------------------------------------------------------------------
    def refresh_identities(self, repo_id: int, mailmap_data: bytes) -> None:
        """Map each raw identity of the repository (authors and co-authors) to a person, with and without the
        mailmap; bot flags (rule 3) and automated co-author flags (rule 7)."""
        mailmap = Mailmap(mailmap_data)
        resolved = []
        for author_id, name, email in self.index.repo_author_identities(repo_id):
            mapped_name, mapped_email = mailmap.resolve(name, email)
            resolved.append((author_id, person_key(mapped_email), person_key(email),
                             is_bot(mapped_name, mapped_email, self.bot_patterns),
                             is_bot(name, email, self.bot_patterns),
                             is_automated_coauthor(mapped_name, mapped_email, self.automated_coauthors),
                             is_automated_coauthor(name, email, self.automated_coauthors)))
        people = self.index.person_ids({r[1] for r in resolved} | {r[2] for r in resolved})
        self.index.set_repo_authors(repo_id, ((a, people[pm], people[pr], *flags) for a, pm, pr, *flags in resolved))

    def person_table(self, repo_id: int) -> np.ndarray:
        """Mailmapped person id by author id, for the report order."""
        author_map = self.index.repo_author_map(repo_id)
        size = max((a for a, *_ in author_map), default=0) + 1
        table = np.zeros(size, np.int64)
        for author_id, person_mm, *_ in author_map:
            table[author_id] = person_mm
        return table

    # -- commits -----------------------------------------------------------------------
    def is_current(self, repo: RepoRow, mirror: Mirror) -> bool:
        """Whether indexing `repo` now would do nothing (after a fetch that brought nothing): its refs and
        mailmap as indexed, and no interrupted walk, second walk, changed paths or co-authors still to do."""
        return (_as_indexed(repo, self.index.walk(repo.id), mirror.ref_tips(), self.index.stored_tips(repo.id),
                            mirror.mailmap_blob()[0])
                and not self.index.other_refs_pending(repo.id) and not self.index.chunks_lacking_paths(repo.id)
                and not self.index.chunks_lacking_coauthors(repo.id))

    def index_commits(self, repo: RepoRow, mirror: Mirror, progress: Progress | None = None, *,
                      other_refs_later: bool = True) -> IndexOutcome:
        """Walk what is new in the mirror into chunks, then derive; see the module docstring.

        A first index walks the branches and tags first (the default scope: plain reports answer
        from then on) and leaves the refs outside them (a forge's refs/pull/*: on git.git more than
        half the commits) to a second walk, when `other_refs_later`: the next call of this method.
        """
        tips = mirror.ref_tips()
        mailmap_oid, mailmap_data = mirror.mailmap_blob()
        walk = self.index.walk(repo.id)
        old_tips = self.index.stored_tips(repo.id)
        if _as_indexed(repo, walk, tips, old_tips, mailmap_oid):
            return IndexOutcome(0, 0, repo.commits, unchanged=True)
        previous_row = self.index.derived(repo.id)
        deferred = False
        if other_refs_later and previous_row is None:
            default = {n: t for n, t in tips.items() if n == "HEAD" or n.startswith(DEFAULT_SCOPE_PREFIXES)}
            if default and len(default) < len(tips):
                tips, deferred = default, True
        previous = store.Derived.from_row(previous_row) if previous_row is not None else None
        stored = store.History.load(self.index, repo.id)
        # Rows beyond the derived ones (an interrupted walk's chunks) need their parents resolved.
        derived_chunks = previous_row.chunks if previous_row is not None else 0
        if stored.chunks > derived_chunks:
            stored = store.History.load(self.index, repo.id, derived_chunks).then(
                store.History.load(self.index, repo.id, first=derived_chunks, parents=True))
        else:
            stored.parent_keys, stored.parents_from = np.zeros(0, np.int64), len(stored)
        present = _present(stored, previous)
        tip_hex = {t.hex() for name, t in tips.items() if name != "HEAD"}
        if walk is None:
            # Everything the previous tips reach is indexed already: hide those still in the mirror.
            exclude = sorted({t.hex() for t in old_tips.values() if mirror.has_commit(t)})
            pending = sorted(tip_hex - set(exclude))
            estimate = mirror.estimate_commits() if not old_tips else None
        else:
            # An interrupted walk: on from its frontier, plus any tip that is not indexed at all.
            exclude = [h for h in walk.exclude if mirror.has_commit(bytes.fromhex(h))]
            keys = np.array([store.key_of(bytes.fromhex(h)) for h in sorted(tip_hex)], np.int64)
            unseen = [h for h, seen in zip(sorted(tip_hex), present.contains(keys)) if not seen]
            pending = sorted(set(walk.pending) | set(unseen))
            estimate = walk.estimate
        if pending:
            with self.index.transaction():
                self.index.save_walk(repo.id, pending, exclude, estimate)
            stored = self._walk(repo, mirror, pending, exclude, estimate, present, stored, progress)
        return self._finish(repo, mirror, tips, old_tips, mailmap_oid, mailmap_data, stored, previous, deferred)

    def _walk(self, repo: RepoRow, mirror: Mirror, pending: list[str], exclude: list[str], estimate: int | None,
              present: store.Lookup, stored: store.History, progress: Progress | None) -> store.History:
        """Walk into chunks, one transaction each with the frontier; return `stored` with the new rows.

        The frontier is what the walk still has to visit: the tips it started from and the parents of
        the commits it stored, less every commit stored. Walking again from it, hiding the same
        `exclude`, yields exactly the commits not stored yet (plus, rarely, a few stored ones when
        commit dates are skewed, which are skipped): that is how an interrupted walk resumes.
        """
        if not exclude:  # a first walk: its derive searches the whole graph (a sync's propagates, no scipy)
            graph.warm_up()
        authors = self.index.author_ids()
        started, first = time.monotonic(), len(stored)
        parts = []
        frontier = np.frombuffer(b"".join(bytes.fromhex(h) for h in pending), np.uint8).reshape(-1, store.OID_BYTES)
        if exclude:  # an incremental walk: find the new commits by stopping at indexed ones, then read those
            known = present

            def indexed(oid: bytes) -> bool:
                return bool(known.contains(np.array([store.key_of(oid)], np.int64))[0])

            listed = [oid.hex() for oid in mirror.commits_not_in([bytes.fromhex(h) for h in pending], indexed)]
            commits = git_history.read_commits(mirror.path, listed, chunk_size=CHUNK, no_walk=True,
                                                 scratch_dir=self.scratch_dir)
        else:  # a first walk (or its resumption): trailers come with the changed paths
            commits = git_history.read_commits(mirror.path, pending, chunk_size=CHUNK, coauthors=False,
                                                 scratch_dir=self.scratch_dir)
        for chunk in commits:
            keys = store.keys_of(chunk.oids)
            keep = ~present.contains(keys)  # a commit seen before (a revived branch, skewed dates) is stored once
            with self.index.transaction():
                author_ids = np.array(self.index.author_ids_for(chunk.identities, authors), np.int32)
                per_row = author_ids[np.array(chunk.identity_index, np.int64)] if len(chunk) else author_ids
                if keep.any():
                    row = _chunk_row(chunk, per_row, keep, author_ids)
                    self.index.append_chunk(repo.id, row)
                    self.index.note_authors(repo.id, np.unique(np.concatenate(
                        [per_row[keep], np.frombuffer(row.coauthor_ids or b"", np.int32)])).tolist())
                    present = _merged(present, keys[keep])
                    parts.append(store.History.from_chunks([row], parents=True))
                frontier = _frontier(frontier, chunk.parent_oids, present)
                self.index.save_walk(repo.id, [bytes(oid).hex() for oid in frontier], exclude, estimate)
            if progress:
                done = sum(len(p) for p in parts)
                progress("index", done, max(estimate or 0, done) if estimate else 0)
        for part in parts:
            stored = stored.then(part) if stored.parent_keys is None or len(stored) == stored.parents_from \
                else _joined_with_parents(stored, part)
        log.info("%s: walked %d new commits in %.1f s", repo.name, len(stored) - first, time.monotonic() - started)
        return stored

    def _finish(self, repo: RepoRow, mirror: Mirror, tips: dict[str, bytes], old_tips: dict[str, bytes],
                mailmap_oid: str | None, mailmap_data: bytes, history: store.History,
                previous: store.Derived | None, deferred: bool = False) -> IndexOutcome:
        """Derive bits and orders over every stored row, then switch readers to them: one transaction."""
        with self.index.transaction():
            self.refresh_identities(repo.id, mailmap_data)
            before = previous.bits if previous is not None else np.zeros(0, np.uint8)
            derived = store.derive(history, store.ScopeTips.from_refs(tips), self.person_table(repo.id), previous,
                                   store.ScopeTips.from_refs(old_tips) if old_tips else None,
                                   same_people=mailmap_oid == repo.mailmap_oid)
            alive = derived.bits != 0
            was_alive = np.zeros(len(alive), bool)
            was_alive[:len(before)] = before != 0
            outcome = IndexOutcome(int(np.count_nonzero(alive & ~was_alive)), int(np.count_nonzero(was_alive & ~alive)),
                                   int(np.count_nonzero(alive)))
            skipped = int(np.count_nonzero((history.days == store.BAD_DAY) & ((derived.bits & store.IN_DEFAULT) != 0)))
            generation = self.index.finish_update(repo.id, head_ref=mirror.head_ref(), mailmap_oid=mailmap_oid,
                                                  commits=outcome.commits, skipped=skipped)
            self.index.store_derived(repo.id, derived.to_row(generation, history.chunks))
            self.index.replace_tips(repo.id, tips)
            self.index.end_walk(repo.id)
            self.index.set_other_refs_pending(repo.id, deferred)
        return dataclasses.replace(outcome, other_refs_pending=deferred)

    def rederive_people(self, repo: RepoRow, mailmap_data: bytes) -> None:
        """New identity rules (bot patterns, mailmap handling): people and the report order, no walk."""
        with self.index.transaction():
            self.refresh_identities(repo.id, mailmap_data)
            row = self.index.derived(repo.id)
            if row is None:
                return
            history = store.History.load(self.index, repo.id, row.chunks)
            derived = store.Derived.from_row(row)
            derived.report_order = store.report_order(self.person_table(repo.id), history.author_ids, history.days)
            generation = self._next_generation(repo)
            self.index.store_derived(repo.id, derived.to_row(generation, row.chunks))

    def _next_generation(self, repo: RepoRow) -> int:
        """A new generation with the repository's summary unchanged: readers reload (caller holds the transaction)."""
        return self.index.finish_update(repo.id, head_ref=repo.head_ref, mailmap_oid=repo.mailmap_oid,
                                        commits=repo.commits, skipped=repo.skipped)

    def _coauthors_complete(self, repo: RepoRow, mailmap_data: bytes) -> None:
        """Once the paths phase has read the last chunk's trailers: people for the new co-authors (when there are
        any), and a new generation so that readers see the co-authors complete (caller holds the transaction,
        the one storing the last chunk: a reader never sees co-authors without their people). The report
        order stays: it sorts authors, whose people do not change."""
        if self.index.has_placeholder_authors(repo.id):
            self.refresh_identities(repo.id, mailmap_data)
        self.index.set_derived_generation(repo.id, self._next_generation(repo))

    # -- changed paths -----------------------------------------------------------------------
    def fill_coauthors(self, repo: RepoRow, mirror: Mirror) -> int:
        """Read the co-author trailers of chunks whose paths are indexed but whose trailers are not (an index
        made by an older gad-bot): `git log --no-walk` over each such chunk's commits, one transaction per
        chunk. Returns the commits read. Chunks still without paths get theirs with the paths."""
        done = 0
        for seq in self.index.chunks_lacking_coauthors(repo.id, paths_done=True):
            stored = self.index.chunk(repo.id, seq, columns=("oids",))
            oids = np.frombuffer(stored.oids, np.uint8).reshape(-1, store.OID_BYTES)
            position = {bytes(oid): row for row, oid in enumerate(oids)}
            rows: list[np.ndarray] = []
            ids: list[np.ndarray] = []
            authors = self.index.author_ids()
            with self.index.transaction():
                for chunk in git_history.read_commits(mirror.path, [bytes(o).hex() for o in oids], chunk_size=CHUNK,
                                                      no_walk=True, scratch_dir=self.scratch_dir):
                    identity_ids = np.array(self.index.author_ids_for(chunk.identities, authors), np.int32)
                    co_rows, co_ids = _coauthors_of(chunk, identity_ids)
                    read = np.frombuffer(chunk.oids, np.uint8).reshape(-1, store.OID_BYTES)
                    rows.append(np.array([position[bytes(read[r])] for r in co_rows.tolist()], np.int64))
                    ids.append(co_ids)
                all_rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
                all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int32)
                order = np.argsort(all_rows, kind="stable")
                self.index.store_chunk_coauthors(repo.id, seq, all_rows[order].astype(np.int32).tobytes(),
                                                 all_ids[order].astype(np.int32).tobytes())
                self.index.note_authors(repo.id, np.unique(all_ids).tolist())
            done += len(oids)
        if done:
            self.rederive_people(repo, mirror.mailmap_blob()[1])  # the new co-authors need their people
            log.info("%s: co-author trailers of %d commits indexed before gad-bot read them", repo.name, done)
        return done

    def index_paths(self, repo: RepoRow, mirror: Mirror, progress: Progress | None = None) -> int:
        """Fill in the changed paths of every chunk that lacks them; return the commits done."""
        self.fill_coauthors(repo, mirror)
        todo = self.index.chunks_lacking_paths(repo.id)
        if not todo:
            return 0
        total = sum(rows for _, rows in todo)
        started = time.monotonic()
        # Paths arrive as git's bytes; each is decoded once, when first seen (most repeat).
        cache = {path.encode("utf-8", "surrogateescape"): path_id for path, path_id in self.index.all_path_ids().items()}
        authors = self.index.author_ids()
        mailmap_data = mirror.mailmap_blob()[1]
        done = 0
        workers = max(1, min(2, os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="diff-tree") as pool:
            def job(seq: int):
                chunk = self.index.chunk(repo.id, seq, columns=("oids", "coauthor_rows"))
                return chunk, _changed_paths(mirror, chunk, self.scratch_dir)

            # `workers` chunks in flight; results stored in order, each chunk its own transaction.
            futures = [pool.submit(job, seq) for seq, _ in todo[:workers]]
            for position in range(len(todo)):
                chunk, changed = futures[position].result()
                per_row = changed.paths
                if position + workers < len(todo):
                    futures.append(pool.submit(job, todo[position + workers][0]))
                with self.index.transaction():
                    new = {p for paths in per_row for p in paths if p not in cache}
                    if new:
                        named: dict[str, int] = {}
                        texts = {p: p.decode("utf-8", "replace") for p in new}
                        self.index.path_ids(texts.values(), named)
                        cache.update({p: named[text] for p, text in texts.items()})
                    stored = store.PathsOfChunk.build([sorted({cache[p] for p in paths}) for paths in per_row])
                    self.index.store_chunk_paths(repo.id, chunk.seq, stored.offsets, stored.path_ids)
                    if chunk.coauthor_rows is None:  # walked without trailers: these are its trailers
                        identity_ids = np.array(self.index.author_ids_for(changed.identities, authors), np.int32)
                        co_rows, co_ids = _coauthors_of(changed, identity_ids)
                        self.index.store_chunk_coauthors(repo.id, chunk.seq, co_rows.astype(np.int32).tobytes(),
                                                         co_ids.astype(np.int32).tobytes())
                        self.index.note_authors(repo.id, np.unique(co_ids).tolist())
                        # The chunk holding the last unread trailers completes them, whichever chunk is last
                        # in `todo` (a synced one, whose trailers came with its walk, may follow and fail).
                        if not self.index.chunks_lacking_coauthors(repo.id):
                            self._coauthors_complete(repo, mailmap_data)
                done += chunk.rows
                now = time.monotonic()
                # One line per chunk: the rate must not sink deep into a long history (it once did).
                log.debug("%s: changed paths of chunk %d (%d commits) stored at %.2f s", repo.name, chunk.seq,
                          chunk.rows, now - started)
                if progress:
                    progress("paths", done, total)
        log.info("%s: changed paths of %d commits in %.1f s", repo.name, done, time.monotonic() - started)
        self._compact_if_worth_it(repo)
        return done

    def _compact_if_worth_it(self, repo: RepoRow) -> None:
        """Drop rows no ref reaches any more and merge small chunks, once paths are complete."""
        with self.index.transaction():
            row = self.index.derived(repo.id)
            if row is None or self.index.chunks_lacking_paths(repo.id) or self.index.walk(repo.id) \
                    or self.index.chunks_lacking_coauthors(repo.id):
                return
            count = self.index.chunk_count(repo.id)
            bits = np.frombuffer(row.bits, np.uint8)
            dead = int(np.count_nonzero(bits == 0))
            if count != row.chunks or not (dead > DEAD_SHARE_TO_COMPACT * max(len(bits), 1) or count > CHUNKS_TO_COMPACT):
                return
            chunks = self.index.chunks(repo.id)
            rebuilt = list(_rechunk(chunks, bits != 0))
            self.index.replace_chunks(repo.id, rebuilt)
            history = store.History.from_chunks(rebuilt, parents=True)
            tips = store.ScopeTips.from_refs(self.index.stored_tips(repo.id))
            derived = store.derive(history, tips, self.person_table(repo.id))
            generation = self.index.finish_update(repo.id, head_ref=repo.head_ref, mailmap_oid=repo.mailmap_oid,
                                                  commits=int(np.count_nonzero(derived.bits)), skipped=repo.skipped)
            self.index.store_derived(repo.id, derived.to_row(generation, len(rebuilt)))
            log.info("%s: compacted %d chunks into %d, %d rows no longer reachable dropped", repo.name, count,
                     len(rebuilt), dead)


def _chunk_row(chunk: git_history.CommitChunk, author_ids: np.ndarray, keep: np.ndarray,
               identity_ids: np.ndarray) -> ChunkRow:
    """The rows of `chunk` that `keep` selects, as the index stores them (`identity_ids`: the author id of
    each of the chunk's identities, for its co-authors; none stored, NULL, when the walk read no trailers)."""
    counts = np.frombuffer(chunk.parent_counts, np.uint8)
    oids = np.frombuffer(chunk.oids, np.uint8).reshape(-1, store.OID_BYTES)
    parents = np.frombuffer(chunk.parent_oids, np.uint8).reshape(-1, store.OID_BYTES)
    days = np.asarray(chunk.days, np.int32)
    co_rows, co_ids = _coauthors_of(chunk, identity_ids)
    if not keep.all():
        parents = parents[np.repeat(keep, counts)]
        oids, counts, days, author_ids = oids[keep], counts[keep], days[keep], author_ids[keep]
        new_row = np.cumsum(keep) - 1  # a kept row's place among the kept ones
        kept = keep[co_rows]
        co_rows, co_ids = new_row[co_rows[kept]], co_ids[kept]
    read = chunk.coauthors_read
    return ChunkRow(seq=-1, rows=len(oids), oids=oids.tobytes(), author_ids=author_ids.astype(np.int32).tobytes(),
                    days=days.tobytes(), parent_counts=counts.tobytes(), parent_oids=parents.tobytes(),
                    coauthor_rows=co_rows.astype(np.int32).tobytes() if read else None,
                    coauthor_ids=co_ids.astype(np.int32).tobytes() if read else None)


def _coauthors_of(chunk: git_history.CommitChunk | git_history.ChangedPaths,
                  identity_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The co-author entries of a walked chunk or of a chunk's changed paths: (row, author id) arrays."""
    rows = np.array(chunk.coauthor_rows, np.int64)
    ids = identity_ids[np.array(chunk.coauthor_index, np.int64)] if len(rows) else np.zeros(0, np.int32)
    return rows, ids


def _frontier(frontier: np.ndarray, parent_oids: bytes, present: store.Lookup) -> np.ndarray:
    """(frontier + these parents) less every stored commit, each id once: an (n, 20) array."""
    parents = np.frombuffer(parent_oids, np.uint8).reshape(-1, store.OID_BYTES)
    candidates = np.concatenate([frontier, parents])
    if not len(candidates):
        return candidates
    keys = store.keys_of(candidates.tobytes())
    unseen = ~present.contains(keys)
    _, first = np.unique(keys[unseen], return_index=True)
    return candidates[unseen][first]


def _present(stored: store.History, previous: store.Derived | None) -> store.Lookup:
    """Which commits are stored, by key: the derived key order, plus any rows stored after it."""
    if previous is None or not len(previous.bits):
        return store.Lookup.build(stored.keys)
    lookup = store.Lookup.build(stored.keys[:len(previous.bits)], previous.key_order)
    extra = stored.keys[len(previous.bits):]
    return _merged(lookup, extra) if len(extra) else lookup


def _joined_with_parents(stored: store.History, part: store.History) -> store.History:
    """`stored` then `part`, keeping the parent ids `stored` already carries for its own new rows."""
    joined = stored.then(part)
    joined.parent_keys = np.concatenate([stored.parent_keys, part.parent_keys])
    joined.parents_from = stored.parents_from
    return joined


def _merged(lookup: store.Lookup, keys: np.ndarray) -> store.Lookup:
    """`lookup` plus `keys` (membership only: the rows are not needed while walking)."""
    fresh = np.sort(keys)
    at = np.searchsorted(lookup.sorted_keys, fresh)
    return store.Lookup(np.insert(lookup.sorted_keys, at, fresh), np.insert(lookup.order, at, -2))


def _changed_paths(mirror: Mirror, chunk: ChunkRow, scratch_dir: Path) -> git_history.ChangedPaths:
    """Per row of the chunk, the paths it changed as git's bytes (none for a merge), and its co-authors."""
    oids = np.frombuffer(chunk.oids, np.uint8).reshape(-1, store.OID_BYTES)
    return git_history.read_changed_paths(mirror.path, [bytes(oid).hex() for oid in oids], scratch_dir)


def _rechunk(chunks: list[ChunkRow], alive: np.ndarray):
    """The alive rows of `chunks`, re-cut into chunks of CHUNK rows, paths kept."""
    history = store.History.from_chunks(chunks, parents=True)
    oids = np.frombuffer(b"".join(c.oids for c in chunks), np.uint8).reshape(-1, store.OID_BYTES)
    parent_oids = np.frombuffer(b"".join(c.parent_oids for c in chunks), np.uint8).reshape(-1, store.OID_BYTES)
    paths = store.PathIndex.from_chunks(chunks)
    parent_alive = np.repeat(alive, history.parent_counts)
    path_alive = np.repeat(alive, np.diff(paths.offsets))
    keep = np.flatnonzero(alive)
    oids, author_ids, days, counts = oids[keep], history.author_ids[keep], history.days[keep], history.parent_counts[keep]
    parent_oids, path_ids = parent_oids[parent_alive], paths.path_ids[path_alive]
    path_counts = np.diff(paths.offsets)[keep]
    parent_at = store.parent_offsets(counts)
    path_at = store.parent_offsets(path_counts)
    co = store.Coauthors.from_chunks(chunks)
    kept = alive[co.rows]
    co_rows, co_ids = (np.cumsum(alive) - 1)[co.rows[kept]], co.author_ids[kept]
    for seq, start in enumerate(range(0, len(keep), CHUNK)):
        end = min(start + CHUNK, len(keep))
        local = (path_at[start:end + 1] - path_at[start]).astype(np.int32)
        first, last = np.searchsorted(co_rows, [start, end])
        yield ChunkRow(seq=seq, rows=end - start, oids=oids[start:end].tobytes(),
                       author_ids=author_ids[start:end].tobytes(), days=days[start:end].tobytes(),
                       parent_counts=counts[start:end].tobytes(),
                       parent_oids=parent_oids[parent_at[start]:parent_at[end]].tobytes(),
                       path_offsets=local.tobytes(), path_ids=path_ids[path_at[start]:path_at[end]].tobytes(),
                       coauthor_rows=(co_rows[first:last] - start).astype(np.int32).tobytes(),
                       coauthor_ids=co_ids[first:last].astype(np.int32).tobytes())


def _as_indexed(repo: RepoRow, walk, tips: dict[str, bytes], old_tips: dict[str, bytes], mailmap_oid) -> bool:
    """No walk under way, and the mirror's refs and mailmap are those of the last index."""
    return walk is None and tips == old_tips and mailmap_oid == repo.mailmap_oid and repo.generation > 0
