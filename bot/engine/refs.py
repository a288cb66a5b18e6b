"""Naming commits as git does, for `range:A..B`: ref names and abbreviated commit ids, against the index.

Pure: stored ref tips (`Index.stored_tips`) and the repository's commit keys in, rows or one
sentence out. A name is tried as git tries it (`git help revisions`): NAME, refs/NAME,
refs/tags/NAME, refs/heads/NAME, refs/remotes/NAME, refs/remotes/NAME/HEAD; then as a commit id
(4 to 40 hex digits) among the repository's commits.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import QueryError, literal

if TYPE_CHECKING:  # numpy is loaded by the two functions that use it: `gad-bot help` reads version_key alone
    import numpy as np

_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")
KEY_HEX = 16  # a commit key is the first 8 bytes of its id (bot/store/store.py)


def candidates(name: str) -> tuple[str, ...]:
    """The full ref names git tries for `name`, in git's order."""
    return (name, f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}", f"refs/remotes/{name}",
            f"refs/remotes/{name}/HEAD")


def short_name(ref: str) -> str:
    for prefix in ("refs/tags/", "refs/heads/", "refs/remotes/", "refs/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


# Words that mark a pre-release after a version's numbers (`v2.0-rc1`, `1.0b2`, `v3.0.0-beta.1`); any other
# suffix (`V_9_5_P1`: OpenSSH's patch 1) comes after the release it qualifies. docs/metric.md lists them.
PRERELEASE_WORDS = frozenset({"rc", "alpha", "beta", "pre", "preview", "dev", "a", "b", "snapshot", "nightly"})


def _is_prerelease_part(part: str) -> bool:
    """A text part between a version's numbers that makes it a pre-release: a listed word, or Debian's `~`."""
    return part.startswith("~") or part.strip("-~_.+").lower() in PRERELEASE_WORDS


def is_prerelease(name: str) -> bool:
    """`v2.0-rc1`, `1.0b2`, `v3.0.0-beta.1`, `4.0~pre1`: a pre-release (text before the first number never is)."""
    parts = re.split(r"\d+", name)
    return any(_is_prerelease_part(part) for part in parts[1:] if part)


_SEPARATORS = ".-_~+"  # between the numbers of a version: `1.2`, `V_9_5`, `1-2`


def family(name: str) -> str:
    """A tag's family: its text before the first number (`v` of v2.1, `release-` of release-14.2, `V_` of
    V_3_6_P1, nothing of 1.2). One family numbers one history; two families (v2.1 beside release-14.2) do not."""
    return re.match(r"\D*", name).group()


def version_key(name: str) -> tuple:
    """Sorts tag names as versions: v1.9 < v1.10 < v2.0-rc1 < v2.0 < V_2_0_P1 < v2.0.1 (a pre-release before
    its release, any other suffix after it). Text before the first number (`v`, `release-`) only breaks ties,
    so that `1.0`, `v1.1` and `release-1.2` still sort by their numbers."""
    prefix = family(name)
    key: list = []
    for part in re.split(r"(\d+)", name[len(prefix):]):
        if part.isdigit():
            key.append((1, int(part), ""))
        elif part.strip(_SEPARATORS):  # a pre-release word comes before the end of the name, any other text
            # after it but before a further number: V_3_6 < V_3_6_P1 < V_3_6_1 (a separator alone is no text:
            # compared with `_P`, the `_` of V_3_6_1_P1 put 3.6.1p1 before 3.6p1)
            key.append((0 if _is_prerelease_part(part) else 0.75, 0, part))
    key.append((0.5, 0, ""))  # the end of the name: after pre-release suffixes, before "_P1" or ".1"
    key.append((3, 0, prefix))
    return tuple(key)


def key_range(prefix: str) -> tuple[int, int]:
    """The signed int64 keys whose hex form starts with `prefix` (at most 16 digits), inclusive."""
    prefix = prefix.lower()[:KEY_HEX]
    low = int(prefix.ljust(KEY_HEX, "0"), 16)
    high = int(prefix.ljust(KEY_HEX, "f"), 16)
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    return signed(low), signed(high)  # never straddles the sign: the top bit is in the first digit


def rows_for_prefix(sorted_keys: np.ndarray, order: np.ndarray, prefix: str) -> np.ndarray:
    """Rows whose commit key starts with the hex `prefix` (a key lookup: `store.Lookup`)."""
    import numpy as np

    low, high = key_range(prefix)
    start = int(np.searchsorted(sorted_keys, low, side="left"))
    stop = int(np.searchsorted(sorted_keys, high, side="right"))
    return np.asarray(order[start:stop], np.int64)


def unknown_ref_error(repo: str, name: str, tips: dict[str, bytes]) -> QueryError:
    """'`web` has no tag, branch or commit `v2.2`; nearest: `v2.1`, `v2.0` ...' (tags sorted by version)."""
    tags = sorted({short_name(n) for n in tips if n.startswith("refs/tags/")}, key=version_key, reverse=True)
    branches = sorted({short_name(n) for n in tips if n.startswith("refs/heads/")})
    # a version typed short (`2.40` for v2.40.0): the tags whose numbers begin with the same numbers,
    # oldest first, lead (spelling alone would offer v2.4.5 and v2.45.4 before v2.40.0)
    numbers = re.findall(r"\d+", name)
    same_version = sorted((t for t in tags if numbers and re.findall(r"\d+", t)[:len(numbers)] == numbers),
                          key=version_key)[:3]
    close = list(dict.fromkeys(same_version + difflib.get_close_matches(name, tags + branches, n=5, cutoff=0.6)))[:5]
    # ref names are the repository's (anyone who can push): each a code span that cannot be closed early
    if same_version:
        hint = "nearest: " + ", ".join(literal(c) for c in close)
    elif close:
        close_tags = sorted((c for c in close if c in tags), key=version_key, reverse=True)
        hint = "nearest: " + ", ".join(literal(c) for c in close_tags + [c for c in close if c not in tags])
    elif tags or branches:
        shown = ["tags (newest first) " + ", ".join(literal(t) for t in tags[:6]) + (" ..." if len(tags) > 6 else "")
                 ] if tags else []
        if branches:
            shown.append("branches " + ", ".join(literal(b) for b in branches[:6])
                         + (" ..." if len(branches) > 6 else ""))
        hint = "its " + "; ".join(shown)
    else:
        hint = "it has no tags or branches"
    return QueryError(f"{literal(repo)} has no tag, branch or commit {literal(name)}; {hint}.")


def resolve(repo: str, name: str, tips: dict[str, bytes], rows_of_oid: Callable[[bytes], int],
            rows_of_prefix: Callable[[str], np.ndarray], full_oid_of_row: Callable[[int], bytes]) -> int:
    """The store row of the commit `name` denotes in `repo`, or QueryError saying what to type instead."""
    for ref in candidates(name):
        if ref in tips:
            row = rows_of_oid(tips[ref])
            if row < 0:
                raise QueryError(f"`{name}` in `{repo}` points at a commit gad-bot has not indexed yet; "
                                 f"run `sync {repo}` or ask again in a minute.")
            return row
    if _HEX.match(name):
        rows = rows_of_prefix(name)
        if len(name) > KEY_HEX:
            import numpy as np

            rows = np.array([r for r in rows.tolist() if full_oid_of_row(r).hex().startswith(name.lower())], np.int64)
        if len(rows) == 1:
            return int(rows[0])
        if len(rows) > 1:
            raise QueryError(f"`{name}` is ambiguous in `{repo}`: {len(rows)} commit ids start with it; "
                             "type more of the id.")
    raise unknown_ref_error(repo, name, tips)
