"""`by:release`: a repository's tags as consecutive releases, each the commits git's `previous..this` lists.

Pure: the repository's tags (short name -> store row) in, the releases to count out, in version order.
Which tags are releases: by default the tags that look like versions (DEFAULT_TAGS) of the family most used
(`v` of v2.1 beside `release-` of release-14.2: refs.family), since two families sorted together make rows
such as `v2.1..release-14.2` that no one released; `tags:GLOB` picks others (fnmatch on the tag name,
case-sensitive as git's ref names are). Pre-releases (`-rc1`, `-beta`,
`1.0a1`: refs.PRERELEASE_WORDS) fold into the release that follows them, since that release's range
holds their commits, unless `prereleases:on`; the newest pre-releases with no release after them yet are
one row, under the newest of them. docs/metric.md defines every row.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from .refs import family, is_prerelease, version_key

if TYPE_CHECKING:
    from ..errors import QueryError

# A version, perhaps after a word: `v1.2.3`, `1.2`, `V_9_5_P1`, `release-2.0`, `gstreamer-1.22.0`, `v2.0-rc1`.
# A tag with a `/` (`debian/1.2-1`, a monorepo's `pkg/v1.0`) is another series: `tags:` names it.
# One word and at most one `-` or `_`, then a number, then only version characters: no nested repetition, so
# a hostile tag name is matched in linear time. One word only: OpenSSH's markers PRE_IPV6, POST_KRB4_REMOVAL
# and AFTER_KRB5_GSSAPI_MERGE (two words before their first digit) are no releases, and counted as ones they
# made V_5_0_P1's row everything since 2003.
DEFAULT_TAGS = re.compile(r"[A-Za-z]*[-_]?\d[-._~+A-Za-z0-9]*")
DEFAULT_TAGS_WORDS = "tags that look like versions (`v1.2.3`, `1.2`, `V_9_5_P1`, `release-2.0`; no `/`)"
# A version whose last part is a placeholder (`2.0.x`, `v1.x`, `3.X`) names a maintenance branch, not a release:
# flask tags `2.0.x` beside `2.0.0`, and taken for a release it sorted before `2.0.0` and left that row empty.
# A release's series, `X.Y` of its first two numbers (`V_9_5_P1` is 9.5): `releases:series` folds a series'
# patch releases into one row.
_SERIES = re.compile(r"\D*?(\d+)(?:[._-](\d+))?")


@dataclass(frozen=True)
class Tagged:
    """A release to count: its tag's short name and the store row of the commit it names."""

    name: str
    row: int
    prerelease: bool = False
    folded: int = 1  # with `releases:series`: the releases of its series this row counts (it is the newest)


def is_release_tag(name: str, glob: str | None) -> bool:
    """Whether a tag counts as a release: it matches `tags:GLOB`, or without one looks like a version; a
    placeholder (`2.0.x`) never does, unless the glob itself ends in the placeholder (`tags:*.x`)."""
    if is_placeholder(name) and not (glob is not None and glob.rstrip("*?").lower().endswith("x")):
        return False
    if glob is not None:
        return fnmatch.fnmatchcase(name, glob)
    return DEFAULT_TAGS.fullmatch(name) is not None


def is_placeholder(name: str) -> bool:
    """`2.0.x`, `v1.x`, `release-3.X`: a tag naming a branch of releases to come, not a release."""
    body = name.rstrip("xX")  # string work, no pattern: a hostile tag name costs linear time
    return len(body) < len(name) and len(body) >= 2 and body[-1] in "._-" and body[-2].isdigit()


def series_of(name: str) -> str:
    """The `X.Y` series of a release (`v2.1.3` -> `2.1`, `V_9_5_P1` -> `9.5`, `v5` -> `5`), for `releases:series`."""
    match = _SERIES.match(name)
    if match is None or match.group(1) is None:
        return name
    return match.group(1) if match.group(2) is None else f"{int(match.group(1))}.{int(match.group(2))}"


def placeholder_note(names: Iterable[str], glob: str | None, most: int = 3) -> str | None:
    """'`2.0.x`, `2.1.x` and 3 more end in a placeholder: they name maintenance branches, not releases, so
    they are no rows.' (None when no tag does, or the glob asked for them)."""
    from ..errors import literal

    found = sorted((n for n in names if is_placeholder(n) and (glob is None or fnmatch.fnmatchcase(n, glob))
                    and not is_release_tag(n, glob)), key=version_key)
    if not found:
        return None
    shown = [literal(n) for n in found[:most]] + ([f"{len(found) - most:,} more"] if len(found) > most else [])
    one = len(found) == 1
    return (f"{_listed(shown, 'and')} end{'s' * one} in a placeholder (`x`): {'it names a branch' if one else 'they name branches'} "
            f"of releases to come, not {'a release' if one else 'releases'}, so {'it gets' if one else 'they get'} no row.")


def families(names: Iterable[str]) -> list[tuple[str, int]]:
    """The families of `names` (refs.family) with how many of them each has, most used first, then by name."""
    return sorted(Counter(family(name) for name in names).items(), key=lambda counted: (-counted[1], counted[0]))


def family_glob(name: str) -> str:
    """The `tags:` glob that picks a family's tags and no other's: its text, then a digit (`v[0-9]*`,
    `release-[0-9]*`, `[0-9]*` for bare numbers). `v*` would take `vendor-2.0` and a `very-first` tag too."""
    return f"{name}[0-9]*"


def left_out_note(ranked: list[tuple[str, int]], most: int = 3) -> str | None:
    """'Releases of the `v[0-9]*` family (41 tags); 12 `release-[0-9]*` tags left out: ask with
    `tags:release-[0-9]*`.'; None with one family (`ranked`: `families`, the first the one counted). A family
    whose glob `tags:` would refuse (a tag's text before its number is unbounded) is counted, never spelled out."""
    from ..errors import literal
    from .query import MAX_TAGS_GLOB

    if len(ranked) < 2:
        return None
    typable = lambda name: len(family_glob(name)) <= MAX_TAGS_GLOB  # noqa: E731
    (kept, count), others = ranked[0], ranked[1:]
    named = [(name, n) for name, n in others if typable(name)][:most]
    told = [f"{n:,} {literal(family_glob(name))}" for name, n in named]
    rest = sum(n for _, n in others) - sum(n for _, n in named)
    if rest:  # the least used families, and the ones too long to type: counted, not named
        told.append(f"{rest:,} more")
    asks = [literal("tags:" + family_glob(name)) for name, _ in named]
    which = f"the {literal(family_glob(kept))} family" if typable(kept) else "the family most used"
    return (f"Releases of {which} ({count:,} tag{'s' * (count != 1)}); "
            f"{_listed(told, 'and')} tag{'s' * (sum(n for _, n in others) != 1)} left out"
            + (f": ask with {_listed(asks, 'or')}." if asks else "."))


def _listed(items: list[str], last: str) -> str:
    """'a', 'a and b', 'a, b and c' (`last`: the word before the last item)."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


class Releases(NamedTuple):
    """The releases to count, oldest version first, and the notes on the tags left out (None: none were)."""

    tags: list[Tagged]
    left_out: str | None
    placeholders: str | None = None


def releases(tags: dict[str, int], glob: str | None = None, prereleases: bool = False,
             series: bool = False) -> Releases:
    """The releases among `tags` (short name -> row; -1 for a tag whose commit is not indexed), oldest version
    first, pre-releases folded unless asked; without `glob`, of the family most used only; with `series`, the
    newest release of each `X.Y` series only (its row then counts the whole series: previous series' newest..it).
    A tag of a blob or a tree never reaches here (Mirror.ref_tips peels tags to commits and skips the rest)."""
    named = [name for name, row in tags.items() if row >= 0 and is_release_tag(name, glob)]
    placeholders = placeholder_note([name for name, row in tags.items() if row >= 0], glob)
    note = None
    if glob is None and named:
        ranked = families(named)
        named = [name for name in named if family(name) == ranked[0][0]]
        note = left_out_note(ranked)
    # (key, name): `v01` and `v1` have one key, and names are unique
    keyed = [t for _, _, t in sorted((version_key(name), name, Tagged(name, tags[name], is_prerelease(name)))
                                     for name in named)]
    if prereleases:
        return Releases(_newest_of_each_series(keyed) if series else keyed, note, placeholders)
    kept = [t for t in keyed if not t.prerelease]
    # the newest pre-releases, after every release, have no release to fold into yet: the newest is a row
    waiting = list(itertools.takewhile(lambda t: t.prerelease, reversed(keyed)))
    found = kept + waiting[:1]
    return Releases(_newest_of_each_series(found) if series else found, note, placeholders)


def _newest_of_each_series(keyed: list[Tagged]) -> list[Tagged]:
    """The last release of each run of one series in version order (2.0.0, 2.0.1, 2.1.0 -> 2.0.1, 2.1.0), so that
    consecutive ranges between them are whole series: `2.0.1..2.1.0` is what series 2.1 added."""
    out: list[Tagged] = []
    for tag in keyed:
        if out and series_of(out[-1].name) == series_of(tag.name):
            out[-1] = Tagged(tag.name, tag.row, tag.prerelease, out[-1].folded + 1)
        else:
            out.append(tag)
    return out


@dataclass(frozen=True)
class Window:
    """Which releases a report shows: positions in the version-ordered list, and how many it leaves out."""

    shown: list[int]  # positions of the rows, oldest version first
    first: int  # the first position whose range is computed (the predecessor of the oldest row, if any)
    more: int  # releases the row limit left out (older than the rows shown)


def window(days: list, since, until, limit: int) -> Window:
    """The newest `limit` releases whose tag's day lies within since..until (either may be None), in version
    order; `days` holds each release's day (None: an impossible date, shown whatever the period)."""
    inside = [i for i, day in enumerate(days)
              if day is None or ((since is None or day >= since) and (until is None or day <= until))]
    shown = inside[-limit:] if limit else []
    return Window(shown, max(0, shown[0] - 1) if shown else 0, len(inside) - len(shown))


def same_commit_note(pairs: list[tuple[str, str]], most: int = 3) -> str | None:
    """Rows that are zero because their tag names the previous release's commit (openssh-portable's V_10_0_P2
    on V_10_0_P1's): said, so that a zero does not read as a release without work. `pairs`: (tag, previous)."""
    from ..errors import literal

    if not pairs:
        return None
    told = [f"{literal(tag)} names the same commit as {literal(previous)}" for tag, previous in pairs[:most]]
    if len(pairs) > most:
        told.append(f"{len(pairs) - most:,} more tags on the commit of the release before them")
    return f"{', and '.join(told)}, so {'its row counts' if len(pairs) == 1 else 'their rows count'} nothing."


def no_release_error(repo: str, tag_names: list[str], glob: str | None) -> "QueryError":
    """'`web` has no tags that look like versions; its tags (newest first): ...; name them with `tags:GLOB`'."""
    from ..errors import QueryError, literal

    newest = sorted(tag_names, key=version_key, reverse=True)
    shown = ", ".join(literal(t) for t in newest[:6]) + (f" and {len(newest) - 6} more" if len(newest) > 6 else "")
    which = f"no tag matching {literal('tags:' + glob)}" if glob else "no tags that look like versions"
    if not newest:
        return QueryError(f"{literal(repo)} has no tags, so `by:release` has no releases to count; "
                          f"`by:year` or `range:A..B` with commit ids break its history down instead.")
    return QueryError(f"{literal(repo)} has {which}; its tags (newest first) are {shown}. Name the releases with "
                      f"`tags:GLOB`, e.g. {literal('tags:' + _glob_for(newest[0]))}.")


def none_in_period_error(repo: str, nearest: str, nearest_day, since, until) -> "QueryError":
    """'No release of `web` was tagged from 2025-01-01 on; its newest, `v2.0`, was tagged on 2022-12-01.' (its
    oldest for a period with only `until:`)."""
    from ..errors import QueryError, literal

    if since and until:
        period = f"between {since.isoformat()} and {until.isoformat()}"
    else:
        period = f"from {since.isoformat()} on" if since else f"by {until.isoformat()}"
    when = f", was tagged on {nearest_day.isoformat()}" if nearest_day else ""
    which = "newest" if since else "oldest"
    return QueryError(f"No release of {literal(repo)} was tagged {period}; its {which}, {literal(nearest)}{when}. "
                      "Widen `since:`/`until:`, or leave them out for every release.")


def _glob_for(tag: str) -> str:
    """A glob that would take `tag` and its siblings: its text up to the first digit, then `*`."""
    return (family(tag) or tag[:1]) + "*"
