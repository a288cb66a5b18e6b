"""by:release's rows: each release's commits (git's `previous..this` over the indexed graph) and its figures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import columns as col
from ..errors import QueryError, literal
from ..metric import Release, Row
from ..store import store
from ..store.index import RepoRow
from ..store.store import IN_HEAD
from .periods import from_epoch_day
from .query import Query
from .snapshots import Snapshots, snapshot_key


@dataclass(frozen=True)
class ReleaseRanges:
    """by:release's rows before counting: each release with its commits (store rows), their union, what is left out."""

    shown: list  # (metric.Release, np.ndarray of store rows), oldest version first
    union: np.ndarray  # per store row: in any shown release's range (the report's total counts these)
    more: int  # releases the row limit left out
    notes: tuple[str, ...] = ()  # rows zero by construction; the default branch's commits in no release yet


def refuse_releases_of_several(repos: list[RepoRow], query: Query) -> None:
    """by:release counts one repository's releases: refuse a project or several repositories."""
    if len(repos) != 1:
        raise QueryError(f"`by:release` breaks one repository's history into its releases, and "
                         f"{literal(', '.join(query.repos))} holds {len(repos)}; ask for one of them, e.g. "
                         f"{literal(repos[0].name + ' by:release')}.")


def release_ranges(snapshots: Snapshots, repo: RepoRow, columns: col.RepoColumns, query: Query) -> "ReleaseRanges":
    """The releases a by:release report shows and each one's commits (git's `previous..this`), by store row."""
    from . import releases
    from .query import MAX_RELEASE_ROWS

    offsets, parents, lookup = snapshots.graph(columns)

    def sorted_releases() -> "releases.Releases":  # 10,000 tags take ~0.15 s to sort by version: once per snapshot
        tags = {name.removeprefix("refs/tags/"): oid for name, oid in snapshots.index.stored_tips(repo.id).items()
                if name.startswith("refs/tags/")}
        names = list(tags)
        rows = lookup.rows_of(np.array([store.key_of(tags[n]) for n in names], np.int64)) if names else []
        found = releases.releases(dict(zip(names, (int(r) for r in rows))), query.tags, query.prereleases,
                                  query.release_series)
        if not found.tags:
            raise releases.no_release_error(repo.name, names, query.tags)
        return found

    found, left_out, placeholders = snapshots.masks.get_or_compute(
        snapshot_key(columns, "release tags", query.tags, query.prereleases, query.release_series), sorted_releases)
    days = columns.store.history.days
    day_of = [from_epoch_day(int(days[t.row])) if days[t.row] != col.BAD_DAY else None for t in found]
    window = releases.window(day_of, query.since, query.until, query.top or MAX_RELEASE_ROWS)
    if not window.shown:
        nearest = 0 if query.since is None else -1  # until: alone is before the oldest release, else after
        raise releases.none_in_period_error(repo.name, found[nearest].name, day_of[nearest], query.since, query.until)
    tips = [t.row for t in found[window.first:window.shown[-1] + 1]]
    # each release's commits, and what the last tip reaches: the newest release's, when it is a row
    members, last_reach = snapshots.masks.get_or_compute(snapshot_key(columns, "releases", tuple(tips)),
                                                     lambda: store.consecutive_ranges(offsets, parents, tips))
    shown = []
    union = np.zeros(len(offsets) - 1, bool)
    for at in window.shown:
        tag = found[at]
        before = found[at - 1] if at else None
        shown.append((Release(tag.name, before.name if before else None, day_of[at],
                              day_of[at - 1] if before else None, tag.prerelease,
                              releases.series_of(tag.name) if query.release_series else None, tag.folded),
                      members[at - window.first]))
        union[members[at - window.first]] = True
    notes = [left_out, placeholders, releases.same_commit_note([(found[at].name, found[at - 1].name) for at in window.shown
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


def release_rows(snapshots: Snapshots, repo: RepoRow, columns: col.RepoColumns, query: Query, flt: col.Filter,
                  released: "ReleaseRanges", org_table) -> list:
    """One row per release: its range's figures with every other token applied, as `range:` counts them."""
    extras = columns.store.extras
    if "positions" not in extras:  # each store row's place in the columns: a release's few commits are
        position = np.full(len(released.union), -1, np.int64)  # marked without a gather of every row
        position[columns.rows] = np.arange(len(columns.rows))
        extras["positions"] = position
    position = extras["positions"]
    touching = snapshots.path_mask(repo, columns, query) if query.paths or query.exclude_paths else None
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
        key = f"{release.series} ({release.tag})" if release.series else release.tag  # the series, to its newest
        out.append(Row(key, col.totals(parts)[0], release=release))
    return out


def trimmed_note(columns: col.RepoColumns, released: "ReleaseRanges", query: Query, most: int = 3) -> str | None:
    """since:/until: pick releases by their tag's day and also bound the days counted inside each: a release whose
    range holds commits authored outside the period is counted in part. Said, with how many commits, since a row
    cut that way used to read as the release's whole work."""
    if query.since is None and query.until is None:
        return None
    from .periods import to_epoch_day

    days = columns.store.history.days
    low = to_epoch_day(query.since) if query.since else None
    high = to_epoch_day(query.until) if query.until else None
    cut = []
    for release, members in released.shown:
        member_days = days[members]
        member_days = member_days[member_days != col.BAD_DAY]
        outside = np.zeros(len(member_days), bool)
        if low is not None:
            outside |= member_days < low
        if high is not None:
            outside |= member_days > high
        if outside.any():
            cut.append((release.tag, int(outside.sum())))
    if not cut:
        return None
    told = [f"{literal(name)} {n:,} commit{'s' * (n != 1)}" for name, n in cut[:most]]
    if len(cut) > most:
        told.append(f"{len(cut) - most:,} more release{'s' * (len(cut) - most != 1)}")
    period = " and ".join(t for t in (f"since:{query.since.isoformat()}" if query.since else "",
                                      f"until:{query.until.isoformat()}" if query.until else "") if t)
    return (f"{period} also bound{'s' * (' and ' not in period)} the days counted inside each release, so rows count "
            f"their ranges in part, leaving out commits authored outside the period ({', '.join(told)}); leave "
            "since:/until: out for whole releases, and pick the newest with top:N.")


def typical_release(rows: list, series: bool = False):
    """The median 2GAD and interval of the release rows shown, with their quartiles (metric.TypicalRelease);
    the first release (everything before it) is left out; None when no other row is shown."""
    from ..metric import Quartiles, TypicalRelease

    counted = [row for row in rows if row.release is not None and row.release.previous is not None]
    if not counted:
        return None
    # a release tagged on an older commit than the one before it in version order (a back-port) has no interval of
    # its own to speak of: its negative one is left out of the typical interval
    intervals = [row.release.interval_days for row in counted
                 if row.release.interval_days is not None and row.release.interval_days >= 0]
    return TypicalRelease(two_gad=Quartiles.of(row.totals.two_gad for row in counted),
                          interval_days=Quartiles.of(intervals), releases=len(counted),
                          left_out_first=len(counted) < len(rows), series=series)
