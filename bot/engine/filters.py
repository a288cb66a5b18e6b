"""Filters that match nothing: `path:nosuch` or `author:nobody@x` is a typo, not a quiet period.

Without this check both answer "2GAD 0 person-days", which reads as "no effort". Engine.report
calls `check_filters` before counting: a `path:` prefix that no commit of the repositories ever
changed, or an `author:` glob that matches none of their authors, is refused with one sentence
naming the nearest paths or authors. A filter that matches history outside the chosen period is
fine: that is a quiet period, and the figures say so.

The engine says whether a prefix was ever changed (`touched`, from its path masks, cached per
snapshot); the authors come from the repositories' author tables. Suggestions are computed only
for a filter that failed.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..errors import QueryError, command, did_you_mean, nearest

if TYPE_CHECKING:
    from ..store.index import Index, RepoRow
    from .query import Query

SHOWN = 5  # paths or authors named in a refusal


def _names(repos: list["RepoRow"]) -> str:
    shown = ", ".join(f"`{r.name}`" for r in repos[:3])
    return shown + (f" and {len(repos) - 3} more" if len(repos) > 3 else "")


def _siblings(index: "Index", prefix: str) -> list[str]:
    """Known path prefixes at the depth of `prefix`, inside its deepest known parent directory."""
    parts = prefix.split("/")
    for depth in range(len(parts) - 1, -1, -1):
        parent = "/".join(parts[:depth])
        if parent:  # the file `parent` or anything in the directory `parent/` ('0' sorts right after '/')
            rows = index.execute("SELECT path FROM paths WHERE path >= ? AND path < ?", (parent + "/", parent + "0"))
        else:
            rows = index.execute("SELECT path FROM paths")
        found = {"/".join(path.split("/")[:depth + 1]) for (path,) in rows if path.count("/") >= depth}
        if found:
            return sorted(found)
    return []


def _check_path(index: "Index", repos: list["RepoRow"], prefix: str, negated: bool,
                touched: Callable[[str], bool]) -> None:
    if touched(prefix):
        return
    token = f"path:{'!' if negated else ''}"
    # paths are shared by every repository: keep the candidates these repositories changed
    siblings = _siblings(index, prefix)
    close = [c for c in nearest(prefix, siblings, n=5, cutoff=0.5) if touched(c)][:1]
    if close:
        hint = did_you_mean(close, "`" + token + "{}`")
    else:
        shown = [c for c in siblings[:4 * SHOWN] if touched(c)][:SHOWN]
        hint = ("paths there include " + ", ".join(f"`{c}`" for c in shown) + "." if shown else
                "check the spelling; paths are relative to the repository's root, e.g. `path:src/net`.")
    raise QueryError(f"`{token}{prefix}` matches no file that {_names(repos)} ever changed, so it would count "
                     f"nothing; {hint}")


def _people(index: "Index", repos: list["RepoRow"], mailmap: bool) -> dict[str, bool]:
    """{person (e-mail): is a bot} of every author of these repositories."""
    person, bot = ("person_mm", "bot_mm") if mailmap else ("person_raw", "bot_raw")
    marks = ",".join("?" * len(repos))
    people: dict[str, bool] = {}
    for email, is_bot in index.execute(
            f"SELECT p.email, ra.{bot} FROM repo_authors ra JOIN people p ON p.id = ra.{person} "
            f"WHERE ra.repo_id IN ({marks})", [r.id for r in repos]):
        people[email] = people.get(email, True) and bool(is_bot)
    return people


def _check_authors(index: "Index", repos: list["RepoRow"], query: "Query") -> None:
    people = _people(index, repos, query.mailmap)
    for glob in query.authors:
        matched = [p for p in people if fnmatch.fnmatchcase(p, glob)]
        if matched and (query.bots or not all(people[p] for p in matched)):
            continue
        if matched:  # only bots, who are left out by default
            raise QueryError(f"`author:{glob}` matches only bot authors, who are left out by default; "
                             "add `bots:on` to count them.")
        plain = glob.replace("*", "").replace("?", "")
        close = nearest(plain, [p for p in people if query.bots or not people[p]], n=1, cutoff=0.5)
        hint = did_you_mean(close, "`author:{}`") if close else \
            f"authors are mailmapped, lower-cased e-mails: {command(repos[0].name + ' by:person')} lists them."
        raise QueryError(f"`author:{glob}` matches nobody who committed to {_names(repos)}, so it would count "
                         f"nothing; {hint}")


def check_filters(index: "Index", repos: Iterable["RepoRow"], query: "Query",
                  touched: Callable[[str], bool]) -> None:
    """Refuse (QueryError) a `path:` or `author:` filter that matches nothing in these repositories.

    `touched(prefix)` says whether any commit of the repositories changed a path under `prefix`.
    """
    repos = list(repos)
    if not repos:
        return
    for prefix in query.paths:
        _check_path(index, repos, prefix, False, touched)
    for prefix in query.exclude_paths:  # excluding what was never there is a typo too
        _check_path(index, repos, prefix, True, touched)
    if query.authors:
        _check_authors(index, repos, query)
