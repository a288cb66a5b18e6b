"""The fast path: 2GAD over per-repository numpy columns, in milliseconds for a million commits.

numpy lives here. The arithmetic is the same as bot/metric.py's (tests compare them on
random histories): a record is (person, day, commit); GAD counts distinct (person, day).
A repository's rows are stored sorted by (mailmapped person, day), so that for one
repository the selected keys stay sorted and distinct pairs are counted in one pass.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from ..metric import Row, Totals
from .periods import bucket_label, from_epoch_day

BAD_DAY = np.int32(-(2**31))
DAY_BITS = 32
EPOCH_MONDAY_OFFSET = 3  # 1970-01-01 was a Thursday: (day + 3) // 7 counts Monday-based weeks


@dataclass
class RepoColumns:
    """One repository's commits as columns, plus its author -> person lookup tables."""

    repo_id: int
    name: str
    generation: int
    commit_ids: np.ndarray  # int64
    author_ids: np.ndarray  # int32
    days: np.ndarray  # int32, BAD_DAY for impossible dates
    bits: np.ndarray  # uint8
    person_mm: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))  # indexed by author id
    person_raw: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    bot_mm: np.ndarray = field(default_factory=lambda: np.zeros(1, bool))
    bot_raw: np.ndarray = field(default_factory=lambda: np.zeros(1, bool))
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # the store's row of each entry
    store: object = None  # the bot.store.store.Snapshot these columns were taken from (graph, paths: loaded lazily)
    automated_mm: np.ndarray = field(default_factory=lambda: np.zeros(1, bool))  # rule 7, indexed by author id
    automated_raw: np.ndarray = field(default_factory=lambda: np.zeros(1, bool))
    coauthors: object = None  # bot.store.store.Coauthors: the Co-authored-by entries in store row order

    @classmethod
    def from_store(cls, repo_id: int, name: str, generation: int, keys: np.ndarray, author_ids: np.ndarray,
                   days: np.ndarray, bits: np.ndarray, order: np.ndarray, author_map) -> "RepoColumns":
        """The store's row-order arrays, taken in `order` (rows by mailmapped person, then day)."""
        columns = cls(repo_id, name, generation, keys[order], author_ids[order], days[order], bits[order],
                      rows=np.asarray(order))
        columns.set_authors(author_map)
        return columns

    def in_rows(self, mask_by_row: np.ndarray) -> np.ndarray:
        """A per-row mask of the store (e.g. reachability) as a mask over these columns."""
        return mask_by_row[self.rows]

    def set_authors(self, author_map) -> None:
        table = np.array(list(author_map), dtype=np.int64).reshape(-1, 7)
        size = int(max(table[:, 0].max(initial=0), self.author_ids.max(initial=0))) + 1
        self.person_mm = np.zeros(size, np.int64)
        self.person_raw = np.zeros(size, np.int64)
        self.bot_mm = np.zeros(size, bool)
        self.bot_raw = np.zeros(size, bool)
        self.automated_mm = np.zeros(size, bool)
        self.automated_raw = np.zeros(size, bool)
        ids = table[:, 0]
        self.person_mm[ids], self.person_raw[ids] = table[:, 1], table[:, 2]
        self.bot_mm[ids], self.bot_raw[ids] = table[:, 3].astype(bool), table[:, 4].astype(bool)
        self.automated_mm[ids], self.automated_raw[ids] = table[:, 5].astype(bool), table[:, 6].astype(bool)

    def ordered(self, mailmap: bool) -> "RepoColumns":
        """These columns sorted by (person, day) for the mailmap mode asked (cached): distinct pairs in one pass."""
        if mailmap:
            return self
        cached = getattr(self, "_raw_order", None)
        if cached is None:
            order = np.lexsort((self.days, self.person_raw[self.author_ids]))
            cached = RepoColumns(self.repo_id, self.name, self.generation, self.commit_ids[order],
                                 self.author_ids[order], self.days[order], self.bits[order],
                                 self.person_mm, self.person_raw, self.bot_mm, self.bot_raw, self.rows[order],
                                 self.store)
            cached._raw_order = cached  # already in raw order
            self._raw_order = cached
            self._raw_permutation = order
        return cached


@dataclass(frozen=True)
class Filter:
    """What a Query asks of each repository's rows."""

    scope_bit: int
    since_day: int | None = None
    until_day: int | None = None
    mailmap: bool = True
    bots: bool = False
    allowed_people: np.ndarray | None = None  # bool, indexed by person id; None: everyone


@dataclass
class Selection:
    """The records of one repository that passed every filter."""

    name: str
    persons: np.ndarray
    days: np.ndarray
    commit_ids: np.ndarray
    sorted_pairs: bool  # (persons, days) already sorted: distinct pairs need no sort
    skipped: int
    keys: np.ndarray | None = None  # person << 32 | day per record, when already computed


@dataclass
class _Counted:
    """The rows of one scope that can count at all (no bot, a possible day), cached per columns object:
    every query with that scope starts from here instead of masking a million rows again."""

    index: np.ndarray  # positions in the columns
    persons: np.ndarray  # int64
    days: np.ndarray  # int32
    keys: np.ndarray  # int64, person << 32 | day (sorted: the columns are)
    commit_ids: np.ndarray
    bad_index: np.ndarray  # positions of rows left out only for an impossible day
    slot: np.ndarray  # per position of the columns, its place in `index`, or -1


def _counted(columns: RepoColumns, scope_bit: int | None, mailmap: bool, bots: bool) -> _Counted:
    cache = columns.__dict__.setdefault("_counted", {})
    key = (scope_bit, mailmap, bots)
    found = cache.get(key)
    if found is not None:
        return found
    mask = np.ones(len(columns.days), bool) if scope_bit is None else (columns.bits & scope_bit) != 0
    if not bots:
        mask &= ~(columns.bot_mm if mailmap else columns.bot_raw)[columns.author_ids]
    bad = columns.days == BAD_DAY
    bad_index = np.flatnonzero(mask & bad)
    index = np.flatnonzero(mask & ~bad)
    persons = (columns.person_mm if mailmap else columns.person_raw)[columns.author_ids[index]]
    days = columns.days[index]
    keys = (persons.astype(np.int64) << DAY_BITS) | days.astype(np.int64)
    slot = np.full(len(columns.days), -1, np.int64)
    slot[index] = np.arange(len(index))
    found = cache[key] = _Counted(index, persons, days, keys, columns.commit_ids[index], bad_index, slot)
    return found


def select(columns: RepoColumns, flt: Filter, extra_mask: np.ndarray | None = None) -> Selection:
    """Apply scope, bots, period and author filters (METRIC.md rules 1-4) to one repository.

    `extra_mask` (a branch's or a path's commits, scope included) replaces the scope bit."""
    if not flt.mailmap:
        raw = columns.ordered(mailmap=False)
        if extra_mask is not None and raw is not columns:
            extra_mask = extra_mask[columns._raw_permutation]
        columns = raw
    counted = _counted(columns, None if extra_mask is not None else flt.scope_bit, flt.mailmap, flt.bots)
    if extra_mask is not None:
        # Through the positions the mask selects: a subsystem's commits are a small share of the rows.
        chosen = counted.slot[np.flatnonzero(extra_mask)]
        keep = np.zeros(len(counted.index), bool)
        keep[chosen[chosen >= 0]] = True
        skipped = int(np.count_nonzero(extra_mask[counted.bad_index]))
    else:
        keep = None
        skipped = len(counted.bad_index)
    keep = _within_period(counted.days, flt, keep)
    persons = counted.persons if keep is None else counted.persons[keep]
    if flt.allowed_people is not None:
        allowed = flt.allowed_people[persons]  # the engine sizes the table to cover every person id
        keep = allowed if keep is None else _refine(keep, allowed)
        persons = persons[allowed]
    if keep is None:
        return Selection(columns.name, persons, counted.days, counted.commit_ids, True, skipped, counted.keys)
    return Selection(columns.name, persons, counted.days[keep], counted.commit_ids[keep], True, skipped,
                     counted.keys[keep])


def _within_period(days: np.ndarray, flt: Filter, keep: np.ndarray | None) -> np.ndarray | None:
    """`keep` narrowed to the days inside since:/until: (None: every row, when there is neither)."""
    for bound, compare in ((flt.since_day, np.greater_equal), (flt.until_day, np.less_equal)):
        if bound is not None:
            inside = compare(days, bound)
            keep = inside if keep is None else keep & inside
    return keep


MERGED_BYTES_PER_ROW = 32  # a key, a person and a commit id (int64 each), a day and by:repo's place (int32 each)


@dataclass
class Merged:
    """The rows that can count (one scope, mailmap mode and bots setting) of several repositories that share
    no commit, as one selection sorted by (person, day) key. Made once per set of snapshots: a question over
    a project of thousands of repositories is then a mask over it, and its distinct pairs need no sort."""

    name: str
    keys: np.ndarray  # int64, sorted
    persons: np.ndarray  # int64
    days: np.ndarray  # int32
    commit_ids: np.ndarray  # int64; no id twice: the repositories share no commit
    skipped: int  # rows left out for an impossible day
    # by:repo: each sorted row's place in repository order (each repository's sorted keys one after another: the
    # order they were merged from), the number of each repository's rows, their names. 4 bytes a row, not a second
    # copy of the keys: the merged rows must fit half the query cache (8,000 x 100 commits: 25.6 of 28 MB)
    place: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    repo_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    names: tuple[str, ...] = ()


def merge(columns_list: list[RepoColumns], scope_bit: int, mailmap: bool, bots: bool) -> Merged:
    """The repositories' counted rows as one Merged (the caller knows that they share no commit)."""
    parts = [_counted(c.ordered(mailmap), scope_bit, mailmap, bots) for c in columns_list]
    keys = np.concatenate([p.keys for p in parts])
    order = np.argsort(keys, kind="stable")
    return Merged(f"{len(parts)} repositories", keys[order], np.concatenate([p.persons for p in parts])[order],
                  np.concatenate([p.days for p in parts])[order], np.concatenate([p.commit_ids for p in parts])[order],
                  sum(len(p.bad_index) for p in parts), place=order.astype(np.int32),
                  repo_rows=np.array([len(p.keys) for p in parts], np.int64),
                  names=tuple(c.name for c in columns_list))


def _merged_keep(merged: Merged, flt: Filter) -> np.ndarray | None:
    keep = _within_period(merged.days, flt, None)
    if flt.allowed_people is not None:
        allowed = flt.allowed_people[merged.persons]
        keep = allowed if keep is None else keep & allowed
    return keep


def select_merged(merged: Merged, flt: Filter) -> Selection:
    """`select` over a Merged (scope, mailmap and bots are the Merged's): the period and author filters, one
    selection whose (person, day) pairs stay sorted."""
    keep = _merged_keep(merged, flt)
    if keep is None:
        return Selection(merged.name, merged.persons, merged.days, merged.commit_ids, True, merged.skipped,
                         merged.keys)
    return Selection(merged.name, merged.persons[keep], merged.days[keep], merged.commit_ids[keep], True,
                     merged.skipped, merged.keys[keep])


@dataclass
class CoauthorPart:
    """METRIC.md rule 7 in one repository: the co-author records that count, and the commits (ids) among
    those rules 1-3 count that name any co-author at all (automated ones too)."""

    selection: Selection
    naming: np.ndarray  # int64 commit ids


def coauthor_select(columns: RepoColumns, flt: Filter, extra_mask: np.ndarray | None = None) -> CoauthorPart:
    """Rule 7's records: each co-author of a commit that rules 1-3 count (in scope or `extra_mask`, its author
    not a bot, a possible day, inside the period) gives (co-author, the commit's author day, the commit).
    Co-authors that are bots or automated are left out (kept with bots:on); `author:` applies to them as
    to authors. `columns` are the mailmap-ordered ones `select` was given (and `extra_mask` is in their order)."""
    co = columns.coauthors
    if co is None or not co.complete or not len(co.rows):  # a count of some chunks' trailers would mislead
        return _no_coauthors(columns)
    counted = (columns.bits & flt.scope_bit) != 0 if extra_mask is None else extra_mask.copy()
    if not flt.bots:
        counted &= ~(columns.bot_mm if flt.mailmap else columns.bot_raw)[columns.author_ids]
    counted &= columns.days != BAD_DAY
    if flt.since_day is not None:
        counted &= columns.days >= flt.since_day
    if flt.until_day is not None:
        counted &= columns.days <= flt.until_day
    in_rows = np.zeros(len(columns.rows), bool)
    in_rows[columns.rows] = counted  # by store row, the order the co-author entries are in
    entries = np.flatnonzero(in_rows[co.rows])
    row_days, row_commits = _row_order(columns)
    naming = sorted_distinct(row_commits[co.rows[entries]])
    authors = co.author_ids[entries]
    keep = np.ones(len(entries), bool)
    if not flt.bots:
        keep = ~(columns.bot_mm | columns.automated_mm if flt.mailmap else columns.bot_raw | columns.automated_raw)[authors]
    persons = (columns.person_mm if flt.mailmap else columns.person_raw)[authors]
    if flt.allowed_people is not None:
        keep &= flt.allowed_people[persons]
    rows = co.rows[entries[keep]]
    return CoauthorPart(Selection(columns.name, persons[keep], row_days[rows], row_commits[rows], False, 0), naming)


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted: one sort and a comparison of neighbours. Not np.unique: since numpy 2.3
    it hashes, 20-40x slower than a sort on the 600,000 int64 keys of a 2,000-repository project
    (bench_project.py, docs/benchmarks.md)."""
    return _distinct_of_sorted(np.sort(values))


def _distinct_of_sorted(ordered: np.ndarray) -> np.ndarray:
    """Sorted values, each once: a comparison of neighbours."""
    if len(ordered) < 2:
        return ordered
    fresh = np.empty(len(ordered), bool)
    fresh[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    return ordered[fresh]


def has_repeats(values: np.ndarray) -> bool:
    """Whether any value occurs twice (a commit in two repositories of one query: a fork, a copy)."""
    ordered = np.sort(values)
    return bool(len(ordered) > 1 and (ordered[1:] == ordered[:-1]).any())


def first_occurrences(values: np.ndarray) -> np.ndarray:
    """The position of each distinct value's first occurrence (np.unique's return_index, by sorting);
    every position when no value repeats, the common case, which needs no argsort."""
    if not has_repeats(values):
        return np.arange(len(values))
    order = np.argsort(values, kind="stable")  # stable: the first of each run of equal values is the first seen
    ordered = values[order]
    fresh = np.ones(len(order), bool)
    fresh[1:] = ordered[1:] != ordered[:-1]
    return order[fresh]


def _no_coauthors(columns: RepoColumns) -> CoauthorPart:
    """The empty part of a repository without co-authors, made once per columns object (most repositories:
    a project report asks each of its thousands; nothing ever writes into a part)."""
    found = columns.__dict__.get("_no_coauthors")
    if found is None:
        nothing = np.zeros(0, np.int64)
        found = CoauthorPart(Selection(columns.name, nothing, np.zeros(0, np.int32), nothing, False, 0), nothing)
        columns.__dict__["_no_coauthors"] = found
    return found


def distinct_count(parts: list[np.ndarray]) -> int:
    """How many distinct values the arrays hold together."""
    return _distinct_count(np.concatenate(parts)) if parts else 0


def days_added(author_keys: np.ndarray, co_selections: list[Selection]) -> int:
    """Active days the co-author records add to the authors' (sorted, distinct) pair keys."""
    if not co_selections:
        return 0
    co_keys = sorted_distinct(np.concatenate([(s.persons.astype(np.int64) << DAY_BITS) | s.days.astype(np.int64)
                                        for s in co_selections]))
    if not len(author_keys):
        return int(len(co_keys))
    at = np.minimum(np.searchsorted(author_keys, co_keys), len(author_keys) - 1)
    return int(np.count_nonzero(author_keys[at] != co_keys))


def _row_order(columns: RepoColumns) -> tuple[np.ndarray, np.ndarray]:
    """Days and commit ids by store row (the columns hold them by person), built once per columns object."""
    cached = columns.__dict__.get("_by_row")
    if cached is None:
        days = np.empty(len(columns.rows), np.int32)
        commits = np.empty(len(columns.rows), np.int64)
        days[columns.rows], commits[columns.rows] = columns.days, columns.commit_ids
        cached = columns.__dict__["_by_row"] = (days, commits)
    return cached


def _refine(keep: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """`keep` narrowed by `allowed`, a mask over the rows `keep` selects."""
    narrowed = keep.copy()
    narrowed[np.flatnonzero(keep)[~allowed]] = False
    return narrowed


def _pair_keys(selections: list[Selection]) -> np.ndarray:
    """Distinct (person, day) pairs as sorted int64 keys: person << 32 | day."""
    if not selections:
        return np.zeros(0, np.int64)

    def keys_of(s: Selection) -> np.ndarray:
        return s.keys if s.keys is not None else (s.persons.astype(np.int64) << DAY_BITS) | s.days.astype(np.int64)

    if len(selections) == 1 and selections[0].sorted_pairs:
        return _distinct_of_sorted(keys_of(selections[0]))
    return sorted_distinct(np.concatenate([keys_of(s) for s in selections]))


def _distinct_count(values: np.ndarray) -> int:
    return int(len(sorted_distinct(values)))


def totals(selections: list[Selection], *, disjoint: bool = False) -> tuple[Totals, np.ndarray]:
    """Totals over the union of the selections (METRIC.md rules 5, 6), and the distinct pair keys.

    disjoint=True: the caller knows that no commit is in two selections (no fork or copy among the
    repositories), so their commits add up without a sort of them all. The same holds for by_period,
    by_person and by_org."""
    keys = _pair_keys(selections)
    developers = len(distinct_persons(keys))  # the keys are sorted by (person, day)
    if len(selections) == 1 or disjoint:
        commits = sum(len(s.commit_ids) for s in selections)  # a repository lists each commit once
    else:
        commits = _distinct_count(np.concatenate([s.commit_ids for s in selections]))
    return Totals(person_days=int(len(keys)), developers=developers, commits=commits), keys


def _bucket_of_day(first: int, last: int, bucket: str) -> np.ndarray:
    """The bucket number (ordered like time) of every day from `first` to `last`, epoch days."""
    days = np.arange(first, last + 1, dtype=np.int64)
    if bucket == "week":
        return (days + EPOCH_MONDAY_OFFSET) // 7
    months = days.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)
    if bucket == "month":
        return months
    if bucket == "quarter":
        return months // 3
    return months // 12


def _buckets(days: np.ndarray, bucket: str) -> np.ndarray:
    """Each epoch day's bucket as an integer that orders like time (a lookup over the days spanned)."""
    days = days.astype(np.int64, copy=False)
    if not len(days):
        return days
    low = int(days.min())
    return _bucket_of_day(low, int(days.max()), bucket)[days - low]


def _bucket_start(number: int, bucket: str) -> date:
    if bucket == "week":
        return from_epoch_day(number * 7 - EPOCH_MONDAY_OFFSET)
    months = number * {"month": 1, "quarter": 3, "year": 12}[bucket]
    return date(1970 + months // 12, months % 12 + 1, 1)


def _per_bucket(days: np.ndarray, bucket: str, low: int, size: int) -> np.ndarray:
    """How many of `days` fall in each of `size` buckets from bucket `low`: counted per day first
    (a bincount over a million records), then per bucket over the few thousand days spanned."""
    if not len(days):
        return np.zeros(size, np.int64)
    first, last = int(days.min()), int(days.max())
    per_day = np.bincount(days - first, minlength=last - first + 1)
    buckets = _bucket_of_day(first, last, bucket) - low
    inside = (buckets >= 0) & (buckets < size)
    return np.bincount(buckets[inside], weights=per_day[inside], minlength=size).astype(np.int64)


def by_period(selections: list[Selection], keys: np.ndarray, bucket: str, *, first_day: int | None = None,
              last_day: int | None = None, person_days_only: bool = False, disjoint: bool = False) -> list[Row]:
    """One row per period (empty periods between the first and last included, with zeros).

    `person_days_only` (for trends) skips developers and commits, the costly part.
    """
    pair_days = (keys & 0xFFFFFFFF).astype(np.int64)
    if not len(pair_days) and first_day is None:
        return []
    low = high = None
    if len(pair_days):
        low = int(_buckets(pair_days[[int(pair_days.argmin())]], bucket)[0])
        high = int(_buckets(pair_days[[int(pair_days.argmax())]], bucket)[0])
    if first_day is not None:
        low = int(_buckets(np.array([first_day]), bucket)[0])
    if last_day is not None:
        high = int(_buckets(np.array([last_day]), bucket)[0])
    if low is None or high is None or high < low:
        return []
    size = high - low + 1
    person_days = _per_bucket(pair_days, bucket, low, size)
    if person_days_only:
        developers = commits = np.zeros(size, np.int64)
    else:
        # Distinct (person, bucket) pairs. The keys are sorted by (person, day) and a bucket never
        # goes back in time, so (person, bucket) is sorted too: an adjacent-difference mask counts
        # them without a sort or hash (np.unique was most of a by:month report on 1M commits).
        pair_buckets = _buckets(pair_days, bucket)
        in_range = (pair_buckets >= low) & (pair_buckets <= high)
        persons = keys[in_range] >> DAY_BITS
        buckets = pair_buckets[in_range] - low
        fresh = np.ones(len(persons), bool)
        if len(persons) > 1:
            fresh[1:] = (persons[1:] != persons[:-1]) | (buckets[1:] != buckets[:-1])
        developers = np.bincount(buckets[fresh], minlength=size)
        record_days = np.concatenate([s.days for s in selections]) if selections else np.zeros(0, np.int32)
        if len(selections) > 1 and not disjoint:  # a commit in several repositories counts once
            record_days = record_days[first_occurrences(np.concatenate([s.commit_ids for s in selections]))]
        commits = _per_bucket(record_days.astype(np.int64, copy=False), bucket, low, size)
    return [Row(label, Totals(n, d, c), first_day=start) for (start, label), n, d, c in
            zip(map(_bucket_name, range(low, low + size), [bucket] * size), person_days.tolist(),
                developers.tolist(), commits.tolist())]


@functools.lru_cache(maxsize=2048)
def _bucket_name(number: int, bucket: str) -> tuple[date, str]:
    """A bucket's first day and label, each made once (naming 183 months was half of a trend's time, issue 34's
    by:team benchmark); per bucket rather than per span, so that questions of many periods share them and the
    cache stays a few hundred small entries."""
    start = _bucket_start(number, bucket)
    return start, bucket_label(start, bucket)


def distinct_persons(keys: np.ndarray) -> np.ndarray:
    """The persons of sorted (person, day) keys, each once."""
    persons = keys >> DAY_BITS
    if len(persons) < 2:
        return persons
    return persons[np.concatenate(([True], persons[1:] != persons[:-1]))]


def _per_person(selections: list[Selection], keys: np.ndarray, *,
                disjoint: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(person ids, their active days, their commits) over sorted (person, day) keys, each person once."""
    persons = keys >> DAY_BITS  # sorted: keys are sorted by (person, day)
    starts = np.flatnonzero(np.concatenate(([True], persons[1:] != persons[:-1])))
    ids = persons[starts]
    person_days = np.diff(np.append(starts, len(persons)))
    all_persons = np.concatenate([s.persons for s in selections]).astype(np.int64)
    all_commits = None if disjoint else np.concatenate([s.commit_ids for s in selections])
    if all_commits is not None and len(selections) > 1 and has_repeats(all_commits):
        # a commit in several repositories counts once per person (its mailmap may differ between them)
        order = np.lexsort((all_commits, all_persons))
        persons_sorted, commits_sorted = all_persons[order], all_commits[order]
        fresh = np.ones(len(order), bool)
        fresh[1:] = (persons_sorted[1:] != persons_sorted[:-1]) | (commits_sorted[1:] != commits_sorted[:-1])
        all_persons = persons_sorted[fresh]
    commit_counts = np.bincount(all_persons, minlength=int(ids.max()) + 1)[ids]
    return ids, person_days, commit_counts


def by_person(selections: list[Selection], keys: np.ndarray, names: dict[int, str], *,
              disjoint: bool = False) -> list[Row]:
    """One row per person, in the order of their ids: the report puts every breakdown of people in metric's
    table_order, once."""
    if not len(keys):
        return []
    ids, person_days, commit_counts = _per_person(selections, keys, disjoint=disjoint)
    return [Row(names.get(p, f"person {p}"), Totals(n, 1, c))
            for p, n, c in zip(ids.tolist(), person_days.tolist(), commit_counts.tolist())]


@dataclass(frozen=True, eq=False)
class TeamPairs:
    """Every (team, person id) pair of by:team's groups, each once, sorted: what by_team looks up in one pass. Made
    once per listing of the groups and snapshot (the engine keeps it beside the groups' matches)."""
    labels: tuple[str, ...]
    team_of: np.ndarray  # int64, an index into labels
    member: np.ndarray  # int64 person ids

    @classmethod
    def of(cls, teams: list[tuple[str, tuple[int, ...]]]) -> "TeamPairs":
        team_of = np.repeat(np.arange(len(teams), dtype=np.int64), [len(ids) for _, ids in teams])
        member = (np.concatenate([np.asarray(ids, np.int64) for _, ids in teams]) if teams
                  else np.zeros(0, np.int64))
        pairs = np.unique((team_of << 32) | member)  # a member listed twice counts once
        return cls(tuple(label for label, _ in teams), pairs >> 32, pairs & 0xFFFFFFFF)

    def members_of(self, team: int) -> np.ndarray:
        return self.member[self.team_of == team]


def by_team(selections: list[Selection], keys: np.ndarray, teams: TeamPairs, rest: str, *,
            disjoint: bool = False, shared_commits: bool = False) -> list[Row]:
    """One row per team with someone in the keys: its people's active days summed (each (person, day) pair is one
    person's, so a team's is the sum of its people's), its developers, its commits; then the row `rest` of the
    people in no team. A person in two teams counts in both. shared_commits (co-authors counted): a commit may be
    in two people's records, so a team's commits are counted distinct over its records instead of summed."""
    if not len(keys):
        return []
    ids, person_days, commit_counts = _per_person(selections, keys, disjoint=disjoint)
    # every team at once (a loop of np.isin per team cost 6.56x a plain report at 200 groups, issue 34): each
    # (team, member) pair looked up among the scope's sorted persons, then summed per team by bincount
    at = np.minimum(np.searchsorted(ids, teams.member), len(ids) - 1)
    found = ids[at] == teams.member
    team_of, at = teams.team_of[found], at[found]
    in_a_team = np.zeros(len(ids), bool)
    in_a_team[at] = True
    others = ~in_a_team
    if shared_commits:
        def distinct_commits(members: np.ndarray) -> int:
            return _distinct_count(np.concatenate([s.commit_ids[np.isin(s.persons, members)] for s in selections]))

        rows = []
        for i, label in enumerate(teams.labels):
            members = ids[at[team_of == i]]
            if len(members):
                rows.append(Row(label, Totals(int(person_days[np.isin(ids, members)].sum()), len(members),
                                              distinct_commits(members))))
        if others.any():
            rows.append(Row(rest, Totals(int(person_days[others].sum()), int(others.sum()),
                                         distinct_commits(ids[others]))))
        return rows
    n = len(teams.labels)
    developers = np.bincount(team_of, minlength=n)
    days = np.bincount(team_of, weights=person_days[at], minlength=n)
    commits = np.bincount(team_of, weights=commit_counts[at], minlength=n)
    rows = [Row(label, Totals(d, p, c)) for label, d, p, c in
            zip(teams.labels, days.astype(np.int64).tolist(), developers.tolist(), commits.astype(np.int64).tolist())
            if p]
    if others.any():
        rows.append(Row(rest, Totals(int(person_days[others].sum()), int(others.sum()),
                                     int(commit_counts[others].sum()))))
    return rows


def keep(selection: Selection, mask: np.ndarray) -> Selection:
    """The selection's records where `mask` holds (e.g. `org:`); (person, day) order is kept."""
    return Selection(selection.name, selection.persons[mask], selection.days[mask], selection.commit_ids[mask],
                     sorted_pairs=selection.sorted_pairs, skipped=selection.skipped,
                     keys=None if selection.keys is None else selection.keys[mask])


def by_repo(selections: list[Selection], names: list[str]) -> list[Row]:
    """One row per repository of `names` (in their order), over its selections (its authors' and, with co-authors,
    theirs): grouped in one pass, so thousands of repositories cost linear time (a scan of every selection per
    repository was N^2: 4.3 s at 8,000, issue 32)."""
    grouped: dict[str, list[Selection]] = {name: [] for name in names}
    for selection in selections:
        grouped.setdefault(selection.name, []).append(selection)
    return [Row(name, totals(grouped[name])[0]) for name in dict.fromkeys(names)]


def by_repo_merged(merged: Merged, flt: Filter) -> list[Row]:
    """by:repo over a Merged, every repository's row in a few passes over all rows (no loop per repository): the
    rows kept by the period and author filters, in repository order, each repository's distinct (person, day)
    pairs and persons counted where its sorted keys change."""
    keep = _merged_keep(merged, flt)
    keys = np.empty(len(merged.keys), np.int64)
    keys[merged.place] = merged.keys  # back in repository order, each repository's keys sorted
    rows = merged.repo_rows
    if keep is not None:
        kept = np.zeros(len(keys), bool)
        kept[merged.place[keep]] = True  # each sorted row's place in repository order
        ends = np.cumsum(rows)
        counted = np.concatenate([[0], np.cumsum(kept)])
        rows = counted[ends] - counted[ends - rows]
        keys = keys[kept]
    person_days, developers = _segment_counts(keys, rows)
    # already in the table's order (metric.table_order: most active days, most commits, then by name), sorted here
    # over arrays: a key function called 8,000 times cost more than the counting
    rank = merged.__dict__.get("_name_rank")
    if rank is None:
        rank = merged.__dict__["_name_rank"] = np.argsort(np.argsort(np.array(merged.names, dtype=object),
                                                                     kind="stable"), kind="stable")
    order = np.lexsort((rank, -rows, -np.asarray(person_days, np.int64))).tolist()
    names, commits = merged.names, rows.tolist()
    return [Row(names[i], Totals(person_days[i], developers[i], commits[i])) for i in order]


def _segment_counts(keys: np.ndarray, lengths: np.ndarray) -> tuple[list[int], list[int]]:
    """Per segment of `keys` (consecutive, of `lengths`; each sorted), its distinct keys and distinct persons."""
    starts = np.cumsum(lengths) - lengths
    ends = starts + lengths
    firsts = starts[lengths > 0]
    counts = []
    # a flag per value and one running count in place: int64 ones, a copy and np.concatenate per pass over 800,000
    # keys were most of by:repo at 8,000 repositories (bench_project.py)
    new = np.empty(len(keys), bool)
    running = np.zeros(len(keys) + 1, np.int64)
    for values in (keys, keys >> DAY_BITS):
        if len(values):
            new[0] = True
            np.not_equal(values[1:], values[:-1], out=new[1:])
            new[firsts] = True  # a segment's first value is new whatever came before it
            np.cumsum(new, out=running[1:])
        counts.append((running[ends] - running[starts]).tolist())
    return counts[0], counts[1]


def by_org(selections: list[Selection], keys: np.ndarray, table, *, disjoint: bool = False) -> list[Row]:
    """One row per organization (bot/orgs.OrgTable), most person-days first (ties by name).

    Each distinct (person, day) pair belongs to exactly one organization (the person's on that day),
    so organizations' person-days add up to the total, and each is the sum of its people's."""
    if not len(keys):
        return []
    persons = keys >> DAY_BITS
    orgs = table.orgs_of(persons, keys & 0xFFFFFFFF)
    size = len(table.names)
    person_days = np.bincount(orgs, minlength=size)
    # developers: distinct (org, person); a person who changed organization counts in each. The keys are
    # sorted by person, and without dated rules a person has one organization: a change of person or of
    # organization between neighbours starts a new pair. People with dated rules (a few) are counted apart,
    # as they may come back to an earlier organization.
    fresh = np.ones(len(persons), bool)
    fresh[1:] = (persons[1:] != persons[:-1]) | (orgs[1:] != orgs[:-1])
    dated = table.dated_mask(persons)
    developers = np.zeros(size, np.int64)
    if dated is not None:
        fresh &= ~dated
        again = sorted_distinct((orgs[dated].astype(np.int64) << 32) | persons[dated]) >> 32
        developers += np.bincount(again, minlength=size)
    developers += np.bincount(orgs[fresh], minlength=size)
    record_persons = np.concatenate([s.persons for s in selections])
    record_days = np.concatenate([s.days for s in selections])
    if len(selections) > 1 and not disjoint:  # a commit in several repositories counts once
        first = first_occurrences(np.concatenate([s.commit_ids for s in selections]))
        record_persons, record_days = record_persons[first], record_days[first]
    commits = np.bincount(table.orgs_of(record_persons, record_days), minlength=size)
    rows = [Row(table.names[i], Totals(int(person_days[i]), int(developers[i]), int(commits[i])))
            for i in np.flatnonzero(person_days).tolist()]
    rows.sort(key=lambda r: (-r.totals.person_days, r.key))
    return rows
