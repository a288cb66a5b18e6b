"""A repository's indexed history as arrays: chunks of commits in, scope bits and sort orders out.

The index (bot/store/index.py) keeps each repository's commits in append-only chunks, in the order git
walked them; a commit's place in that order is its *row*. This module turns chunks into numpy
arrays and derives, at the end of each walk, what reports need:

- a commit *key* per row: the first 8 bytes of its id as an int64. Keys identify a commit across
  repositories (a fork's commits are the same commits); two different commits share a key with
  probability below 1e-7 even in a pair of million-commit repositories (git's abbreviated ids rely
  on far fewer bits), and a collision inside one repository is detected and reported;
- parents as rows (CSR, with the chunks' parent counts), for reachability (bot/store/graph.py);
- scope bits per row (every ref / branches and tags / the default branch); 0 means no ref reaches
  the commit any more (a force-push, a deleted branch): it no longer counts anywhere;
- `key_order` (rows by key, for lookups) and `report_order` (rows by mailmapped person, then day:
  distinct person-days in one pass).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from . import graph
from .index import ChunkRow, DerivedRow, Index

log = logging.getLogger(__name__)

OID_BYTES = 20
IN_ALL = 1  # reachable from some ref (refs:all)
IN_DEFAULT = 2  # reachable from a branch or tag (the default scope)
IN_HEAD = 4  # reachable from the default branch (branch:HEAD)
BAD_DAY = np.int32(-(2**31))


def keys_of(oids: bytes) -> np.ndarray:
    """The int64 key of each 20-byte id in `oids`."""
    raw = np.frombuffer(oids, np.uint8).reshape(-1, OID_BYTES)[:, :8]
    return np.ascontiguousarray(raw).view(">i8").ravel().astype(np.int64)


def key_of(oid: bytes) -> int:
    return int(keys_of(oid[:OID_BYTES])[0])


@dataclass
class History:
    """Every stored row of one repository, in row order."""

    keys: np.ndarray  # int64
    author_ids: np.ndarray  # int32
    days: np.ndarray  # int32
    parent_counts: np.ndarray  # uint8
    parent_keys: np.ndarray | None = None  # int64: the parents of rows `parents_from` onwards, when loaded
    parents_from: int = 0
    chunks: int = 0

    def __len__(self) -> int:
        return len(self.keys)

    @classmethod
    def load(cls, index: Index, repo_id: int, chunks: int | None = None, *, first: int = 0,
             parents: bool = False) -> "History":
        """Chunks `first` .. `first + chunks` (all when None) of a repository, parent ids too when asked."""
        wanted = ("oids", "author_ids", "days", "parent_counts") + (("parent_oids",) if parents else ())
        rows = index.chunks(repo_id, first=first, limit=chunks, columns=wanted)
        return cls.from_chunks(rows, parents=parents)

    @classmethod
    def from_chunks(cls, rows: list[ChunkRow], *, parents: bool = False) -> "History":
        def join(attr: str, dtype) -> np.ndarray:
            parts = [np.frombuffer(getattr(r, attr), dtype) for r in rows]
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        oids = b"".join(r.oids for r in rows)
        history = cls(keys_of(oids), join("author_ids", np.int32), join("days", np.int32),
                      join("parent_counts", np.uint8), chunks=len(rows))
        if parents:
            history.parent_keys = keys_of(b"".join(r.parent_oids for r in rows))
        return history

    def then(self, later: "History") -> "History":
        """These rows followed by `later`'s; parent ids are kept for `later`'s rows (resolved ones need none)."""
        joined = History(np.concatenate([self.keys, later.keys]), np.concatenate([self.author_ids, later.author_ids]),
                         np.concatenate([self.days, later.days]),
                         np.concatenate([self.parent_counts, later.parent_counts]), chunks=self.chunks + later.chunks)
        if later.parent_keys is not None:
            joined.parent_keys, joined.parents_from = later.parent_keys, len(self) + later.parents_from
        return joined


@dataclass
class Coauthors:
    """A repository's `Co-authored-by:` entries (METRIC.md rule 7) in row order: entry i names author
    `author_ids[i]` on row `rows[i]` (ascending)."""

    rows: np.ndarray  # int64
    author_ids: np.ndarray  # int32
    complete: bool = True  # False when some chunk was stored before trailers were read

    @classmethod
    def load(cls, index: Index, repo_id: int, chunks: int) -> "Coauthors":
        return cls.from_chunks(index.chunks(repo_id, limit=chunks, columns=("coauthor_rows", "coauthor_ids")))

    @classmethod
    def from_chunks(cls, chunks: list[ChunkRow]) -> "Coauthors":
        rows, ids, base, complete = [], [], 0, True
        for chunk in chunks:
            if chunk.coauthor_rows is None:
                complete = False
            elif chunk.coauthor_rows:
                rows.append(np.frombuffer(chunk.coauthor_rows, np.int32).astype(np.int64) + base)
                ids.append(np.frombuffer(chunk.coauthor_ids, np.int32))
            base += chunk.rows
        return cls(np.concatenate(rows) if rows else np.zeros(0, np.int64),
                   np.concatenate(ids) if ids else np.zeros(0, np.int32), complete)


def parent_offsets(parent_counts: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(parent_counts) + 1, np.int64)
    np.cumsum(parent_counts, out=offsets[1:])
    return offsets


@dataclass
class Lookup:
    """Rows by commit key: `rows_of(keys)` in one vectorised binary search."""

    sorted_keys: np.ndarray
    order: np.ndarray  # rows in key order

    @classmethod
    def build(cls, keys: np.ndarray, order: np.ndarray | None = None) -> "Lookup":
        if order is None:
            order = np.argsort(keys, kind="stable").astype(np.int32)
        return cls(keys[order], order)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The row of each key, or -1 where the repository has no such commit."""
        keys = np.asarray(keys, np.int64)
        if not len(self.sorted_keys):
            return np.full(len(keys), -1, np.int64)
        at = np.searchsorted(self.sorted_keys, keys)
        at_clipped = np.minimum(at, len(self.sorted_keys) - 1)
        found = self.sorted_keys[at_clipped] == keys
        return np.where(found, self.order[at_clipped], -1).astype(np.int64)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, np.int64)
        if not len(self.sorted_keys):
            return np.zeros(len(keys), bool)
        at = np.minimum(np.searchsorted(self.sorted_keys, keys), len(self.sorted_keys) - 1)
        return self.sorted_keys[at] == keys

    def duplicates(self) -> int:
        """How many keys appear more than once (distinct commits whose ids share 8 bytes, or a stored duplicate)."""
        return int(np.count_nonzero(self.sorted_keys[1:] == self.sorted_keys[:-1])) if len(self.sorted_keys) > 1 else 0


@dataclass(frozen=True)
class ScopeTips:
    """Commit keys of the tips of each scope (METRIC.md rule 1)."""

    every: tuple[int, ...]
    default: tuple[int, ...]
    head: tuple[int, ...]

    @classmethod
    def from_refs(cls, tips: dict[str, bytes]) -> "ScopeTips":
        from .mirrors.refs import DEFAULT_SCOPE_PREFIXES

        every = tuple(sorted({key_of(t) for n, t in tips.items() if n != "HEAD"}))
        default = tuple(sorted({key_of(t) for n, t in tips.items() if n.startswith(DEFAULT_SCOPE_PREFIXES)}))
        head = (key_of(tips["HEAD"]),) if "HEAD" in tips else ()
        return cls(every, default, head)


@dataclass
class Derived:
    """The arrays derived at the end of a walk (see the module docstring)."""

    bits: np.ndarray  # uint8 per row
    parent_rows: np.ndarray  # int32 per parent entry, -1 when the parent is not stored
    key_order: np.ndarray  # int32
    report_order: np.ndarray  # int32

    def to_row(self, generation: int, chunks: int) -> DerivedRow:
        return DerivedRow(generation=generation, chunks=chunks, rows=len(self.bits), bits=self.bits.tobytes(),
                          parent_rows=self.parent_rows.astype(np.int32).tobytes(),
                          key_order=self.key_order.astype(np.int32).tobytes(),
                          report_order=self.report_order.astype(np.int32).tobytes())

    @classmethod
    def from_row(cls, row: DerivedRow) -> "Derived":
        return cls(np.frombuffer(row.bits, np.uint8), np.frombuffer(row.parent_rows, np.int32),
                   np.frombuffer(row.key_order, np.int32), np.frombuffer(row.report_order, np.int32))


def resolve_parents(keys: np.ndarray, offsets: np.ndarray, parent_keys: np.ndarray, lookup: Lookup,
                    first_row: int = 0) -> np.ndarray:
    """The row of each parent entry of rows `first_row` onwards (`parent_keys` holds just those).

    git walks a parent soon after its child, most often right after it: that guess is checked for
    every entry at once, and only the misses are looked up."""
    rows = len(keys)
    counts = np.diff(offsets[first_row:])
    guess = np.repeat(np.arange(first_row + 1, rows + 1, dtype=np.int64), counts)
    np.minimum(guess, max(rows - 1, 0), out=guess)
    result = guess.astype(np.int32)
    missed = keys[guess] != parent_keys if len(guess) else np.zeros(0, bool)
    if missed.any():
        result[missed] = lookup.rows_of(parent_keys[missed])
    return result


def report_order(person_of_author: np.ndarray, author_ids: np.ndarray, days: np.ndarray) -> np.ndarray:
    """Rows sorted by (mailmapped person, day)."""
    return np.lexsort((days, person_of_author[author_ids])).astype(np.int32)


def scope_bits(offsets: np.ndarray, parent_rows: np.ndarray, lookup: Lookup, tips: ScopeTips) -> np.ndarray:
    """Scope membership of every row, by reachability from each scope's tips."""
    bits = np.zeros(len(offsets) - 1, np.uint8)
    for bit, keys in ((IN_ALL, tips.every), (IN_DEFAULT, tips.default), (IN_HEAD, tips.head)):
        if keys:
            starts = lookup.rows_of(np.array(keys, np.int64))
            bits[reachable(offsets, parent_rows, starts[starts >= 0])] |= bit
    return bits


def _held_parents(offsets: np.ndarray, parent_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parents CSR without the parents the store does not hold (a damaged or grafted history)."""
    if len(parent_rows) and int(parent_rows.min()) < 0:
        valid = parent_rows >= 0
        counts = np.add.reduceat(valid.astype(np.int64), offsets[:-1]) if len(valid) else np.zeros(0, np.int64)
        counts[offsets[:-1] == offsets[1:]] = 0  # reduceat gives the next element for empty segments
        offsets = parent_offsets(counts)
        parent_rows = parent_rows[valid]
    return offsets, parent_rows.astype(np.int32)


def reachable(offsets: np.ndarray, parent_rows: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """graph.reachable over the parents the store holds."""
    return graph.reachable(*_held_parents(offsets, parent_rows), starts)


def consecutive_ranges(offsets: np.ndarray, parent_rows: np.ndarray,
                       tips: list[int]) -> tuple[list[np.ndarray], np.ndarray]:
    """graph.consecutive_ranges (git's `t0`, `t0..t1`, `t1..t2`, ... as rows, and the last tip's reach) over the
    parents the store holds."""
    return graph.consecutive_ranges(*_held_parents(offsets, parent_rows), tips)


def derive(history: History, tips: ScopeTips, person_of_author: np.ndarray, previous: Derived | None = None,
           previous_tips: ScopeTips | None = None, same_people: bool = False) -> Derived:
    """Everything `Derived` holds for `history`. With `previous` (derived over the first rows, which are
    unchanged), only the rows appended since are sorted and resolved, and scope bits grow by a short
    propagation from the new tips when no tip went backwards (a full search otherwise). `history`
    must hold parent ids from `len(previous.bits)` on (all of them without `previous`)."""
    reuse = previous is not None and 0 < len(previous.bits) <= len(history)
    old_rows = len(previous.bits) if reuse else 0
    fresh = np.arange(old_rows, len(history), dtype=np.int32)
    if reuse:
        fresh_sorted = fresh[np.argsort(history.keys[fresh], kind="stable")]
        key_order = np.insert(previous.key_order, np.searchsorted(history.keys[previous.key_order],
                                                                  history.keys[fresh_sorted]), fresh_sorted)
    else:
        key_order = np.argsort(history.keys, kind="stable")
    lookup = Lookup.build(history.keys, key_order.astype(np.int32))
    if lookup.duplicates():
        log.warning("%d commits share an 8-byte id prefix with another commit of the same repository",
                    lookup.duplicates())
    offsets = parent_offsets(history.parent_counts)
    if history.parent_keys is None or history.parents_from > old_rows:
        raise ValueError("derive needs the parent ids of every row not derived before")
    first_fresh_parent = int(offsets[old_rows])
    skip = first_fresh_parent - int(offsets[history.parents_from])
    fresh_parents = resolve_parents(history.keys, offsets, history.parent_keys[skip:], lookup, first_row=old_rows)
    parent_rows = np.concatenate([previous.parent_rows[:first_fresh_parent], fresh_parents]) if reuse else fresh_parents
    parent_rows = parent_rows.astype(np.int32, copy=False)
    bits = None
    if reuse and previous_tips is not None:
        bits = grown_scope_bits(offsets, parent_rows, lookup, previous.bits, tips, previous_tips)
    if bits is None:
        bits = scope_bits(offsets, parent_rows, lookup, tips)
    if reuse and same_people:
        people = person_of_author[history.author_ids]
        composite = (people.astype(np.int64) << 32) | (history.days.astype(np.int64) + 2**31)  # orders as lexsort does
        fresh_sorted = fresh[np.lexsort((history.days[fresh], people[fresh]))]
        order = np.insert(previous.report_order, np.searchsorted(composite[previous.report_order],
                                                                 composite[fresh_sorted], side="right"), fresh_sorted)
    else:
        order = report_order(person_of_author, history.author_ids, history.days)
    return Derived(bits, parent_rows, key_order.astype(np.int32), order.astype(np.int32))


def grown_scope_bits(offsets: np.ndarray, parent_rows: np.ndarray, lookup: Lookup, old_bits: np.ndarray,
                     tips: ScopeTips, old_tips: ScopeTips, limit: int = 20_000) -> np.ndarray | None:
    """Scope bits after a sync in which every scope's old tips are still reached, or None.

    A scope's commits are an ancestor-closed set, so when every old tip is reached from the new tips,
    the new set is the old one plus what a propagation from the new tips meets before it enters the old
    set. That propagation is short after an ordinary push (the new commits); it proves the old tips are
    reached when it meets each of them (or they are new tips too). Otherwise, or past `limit` steps,
    None: the caller searches the whole graph.
    """
    rows = len(offsets) - 1
    bits = np.zeros(rows, np.uint8)
    bits[:len(old_bits)] = old_bits
    for bit, new_keys, old_keys in ((IN_ALL, tips.every, old_tips.every), (IN_DEFAULT, tips.default, old_tips.default),
                                    (IN_HEAD, tips.head, old_tips.head)):
        if new_keys == old_keys:
            continue
        inside = (bits & bit) != 0
        starts = lookup.rows_of(np.array(new_keys, np.int64))
        starts = np.unique(starts[starts >= 0])
        added, met = _propagate(offsets, parent_rows, inside, starts, limit)
        if added is None:
            return None
        old_starts = lookup.rows_of(np.array(old_keys, np.int64))
        reached = np.zeros(rows, bool)
        reached[np.concatenate([met, starts])] = True
        if not reached[old_starts[old_starts >= 0]].all():
            return None  # a tip went backwards or away: some commits may have left the scope
        bits[added] |= bit
    return bits


def _propagate(offsets: np.ndarray, parent_rows: np.ndarray, inside: np.ndarray, starts: np.ndarray,
               limit: int) -> tuple[np.ndarray | None, np.ndarray]:
    """Rows reached from `starts` without entering `inside`, and the `inside` rows met on the way.

    A push adds a line or a few of commits, so the frontier is mostly a single row: such steps are
    plain Python on lists (a numpy call costs more than the step); wide frontiers go through numpy.
    """
    rows = len(inside)
    added = np.zeros(rows, bool)
    met: list[int] = starts[inside[starts]].tolist()
    frontier = starts[~inside[starts]]
    added[frontier] = True
    steps = 0
    while len(frontier):
        steps += 1
        if steps > limit:
            return None, np.zeros(0, np.int64)
        if len(frontier) <= 8:
            found: set[int] = set()
            for row in frontier.tolist():
                for parent in parent_rows[offsets[row]:offsets[row + 1]].tolist():
                    if parent < 0:
                        continue
                    if inside[parent]:
                        met.append(parent)
                    elif not added[parent]:
                        found.add(parent)
            frontier = np.fromiter(found, np.int64, len(found))
        else:
            lengths = offsets[frontier + 1] - offsets[frontier]
            total = int(lengths.sum())
            begin = np.repeat(offsets[frontier] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
            parents = parent_rows[np.arange(total) + begin]
            parents = parents[parents >= 0]
            met.extend(parents[inside[parents]].tolist())
            frontier = np.unique(parents[~inside[parents] & ~added[parents]])
        added[frontier] = True
    return added, np.array(met, np.int64)


@dataclass
class PathIndex:
    """Which paths each row changed, as CSR over the repository's rows (merges change none)."""

    offsets: np.ndarray  # int64, rows + 1
    path_ids: np.ndarray  # int32
    entry_rows: np.ndarray | None = None  # int32 per entry, built on first use

    @classmethod
    def from_chunks(cls, rows: list[ChunkRow]) -> "PathIndex":
        offsets = [np.zeros(1, np.int64)]
        ids = []
        base = 0
        for chunk in rows:
            local = np.frombuffer(chunk.path_offsets, np.int32).astype(np.int64)
            offsets.append(local[1:] + base)
            base += int(local[-1])
            ids.append(np.frombuffer(chunk.path_ids, np.int32))
        return cls(np.concatenate(offsets), np.concatenate(ids) if ids else np.zeros(0, np.int32))

    def rows_touching(self, include: np.ndarray | None, exclude: np.ndarray | None, table_size: int) -> np.ndarray:
        """Rows that changed a path under `include` (any path when None) that is not under `exclude`."""
        hit = np.ones(table_size, bool) if include is None else np.zeros(table_size, bool)
        if include is not None:
            hit[include] = True
        if exclude is not None:
            hit[exclude] = False
        if self.entry_rows is None:  # the row of each entry, once per snapshot
            self.entry_rows = np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int32), np.diff(self.offsets))
        touched = np.zeros(len(self.offsets) - 1, bool)
        touched[self.entry_rows[hit[self.path_ids]]] = True
        return touched


@dataclass
class PathsOfChunk:
    """A chunk's changed paths as the CSR pair the index stores."""

    offsets: bytes
    path_ids: bytes

    @classmethod
    def build(cls, per_row: list[list[int]]) -> "PathsOfChunk":
        counts = np.fromiter((len(p) for p in per_row), np.int64, len(per_row))
        offsets = np.zeros(len(per_row) + 1, np.int32)
        np.cumsum(counts, out=offsets[1:])
        flat = np.fromiter((i for p in per_row for i in p), np.int32, int(counts.sum()))
        return cls(offsets.tobytes(), flat.tobytes())


@dataclass
class Snapshot:
    """Everything read for one repository at one generation (the engine caches it per generation)."""

    history: History
    derived: Derived
    extras: dict = field(default_factory=dict)  # lazily loaded: graph offsets, path index, lookup
