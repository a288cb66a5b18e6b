"""Filters that match nothing: `path:nosuch` or `author:nobody@x` is a typo, not a quiet period.

Without this check both answer "2GAD 0 person-days", which reads as "no effort". Engine.report
calls `check_filters` before counting: a `path:` prefix that no commit of the repositories ever
changed is refused with one sentence naming the nearest paths. `check_authors` follows, before any
scope is worked out: an `author:` glob that matches only bots is refused at once; one that matches
none of the repositories' authors is refused too, once the scope is known and before anything is
counted (`UnmatchedAuthor.refusal`), offering the nearest person active in the scope asked (period,
range, branch, `path:`, `org:`), not someone from elsewhere in history. A filter that matches history outside the chosen scope is a quiet
period, not a typo: the answer counts 0, and `author_zero_words` says where those people did commit
("a@x.org committed to `web`, but not since 2024-01-01: last on 2023-05-02").

The engine says whether a prefix was ever changed (`touched`, from its path masks, cached per
snapshot) and who is active in the scope (`Active`); the authors come from the repositories' author
tables. Suggestions are computed only for a filter that failed.
"""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass
from glob import escape as glob_escape
from collections.abc import Callable, Iterable
from datetime import date
from typing import TYPE_CHECKING

from ..errors import QueryError, command, did_you_mean, literal, nearest

if TYPE_CHECKING:
    from ..store.index import Index, RepoRow
    from .query import Query

SHOWN = 5  # paths or authors named in a refusal
SCOPE_CANDIDATES = 20  # the nearest people of all history among whom one active in the scope is looked for


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


# {e-mail: (first day, last day)} of the people active in a question's scope, every filter but `author:`
# applied: `active(globs, with_period)` narrows to the people the globs match (None: everyone) and keeps or
# drops the period (since:/until:). The engine computes it, and only for a filter that failed.
Active = Callable[[tuple[str, ...] | None, bool], dict[str, tuple[date, date]]]


def _nearest_people(typed: str, emails: Iterable[str], n: int) -> list[str]:
    """The e-mails nearest to what was typed, nearest first, among people whose name (the part before
    the `@`) is close to the typed one: a shared domain alone makes e-mails look alike. Names are
    compared first, being short, so a refusal does not run difflib over every whole address."""
    name = typed.rpartition("@")[0] if "@" in typed else typed
    if not name:
        return []
    by_name: dict[str, list[str]] = {}
    for email in emails:
        by_name.setdefault(email.rpartition("@")[0], []).append(email)
    # every close name, the typed one included (errors.nearest stops at an exact match)
    alike = [email for close in difflib.get_close_matches(name.lower(), by_name, n=n) for email in by_name[close]]
    return nearest(typed, alike, n=n, cutoff=0.5)


@dataclass(frozen=True)
class UnmatchedAuthor:
    """An `author:` glob that matches nobody who ever committed to the repositories asked about."""

    glob: str
    people: dict[str, bool]  # every author of those repositories: is a bot (`_people`)

    def refusal(self, repos: list["RepoRow"], query: "Query", active: Active) -> QueryError:
        """The refusal, offering the nearest person active in the scope asked (or, failing that, the nearest
        who committed outside it, and when)."""
        hint = _author_hint(self.glob.replace("*", "").replace("?", ""), self.people, repos, query, active)
        return QueryError(f"`author:{self.glob}` matches nobody who committed to {_names(repos)}, so it would "
                          f"count nothing; {hint}")


def check_authors(index: "Index", repos: list["RepoRow"], query: "Query") -> UnmatchedAuthor | None:
    """Refuse (QueryError) an `author:` glob that matches only bots: that answer needs no scope, so it is given
    before any is worked out. The first glob that matches nobody is returned instead (None: every glob matches
    someone), for `UnmatchedAuthor.refusal` once the scope is known: its suggestion is someone active there."""
    if not repos or not query.authors:
        return None
    people = _people(index, repos, query.mailmap)
    for glob in query.authors:
        matched = [p for p in people if fnmatch.fnmatchcase(p, glob)]
        if matched and (query.bots or not all(people[p] for p in matched)):
            continue
        if matched:  # only bots, who are left out by default
            raise QueryError(f"`author:{glob}` matches only bot authors, who are left out by default; "
                             "add `bots:on` to count them.")
        return UnmatchedAuthor(glob, people)
    return None


def _author_hint(plain: str, people: dict[str, bool], repos: list["RepoRow"], query: "Query", active: Active) -> str:
    """What to type instead of an `author:` that matches nobody (`plain`: the glob without wildcards)."""
    scope = active(None, True)
    counted = [p for p in people if query.bots or not people[p]]
    if plain.startswith("@"):  # a whole domain (`*@exmple.org`): the nearest domain active in scope
        domains = nearest(plain[1:], {p.rpartition("@")[2] for p in scope}, n=1)
        if domains:
            return did_you_mean(domains, "`author:*@{}`")
    # the nearest of all, and among the next nearest those active in this scope
    ranked = _nearest_people(plain, counted, SCOPE_CANDIDATES)
    best = ranked[:1]
    if best and best[0] in scope:
        return did_you_mean(best, "`author:{}`")
    # the nearest of all counts nothing here: offer one who does, and say where that one committed
    close = [c for c in ranked if c in scope][:1]
    outside = outside_words(best[0], query, _names(repos), active((glob_escape(best[0]),), False)) \
        if best else None  # an e-mail may hold `[`, which a glob reads as a class
    listing = command(" ".join([repos[0].name, *query.scope_tokens(), "by:person"]))
    if close:
        return did_you_mean(close, "`author:{}`") + (f" The nearest of all, {best[0]}, {outside}." if outside else "")
    if outside:
        return f"{best[0]} {outside}; {listing} lists those active in this scope."
    return (f"authors are mailmapped, lower-cased e-mails: {listing} lists "
            f"{'those active in this scope' if query.scope_tokens() else 'them'}.")


def _path_words(query: "Query") -> str:
    """The `path:` scope in words: 'under `src/api`', 'outside `docs`', 'under `src` and outside `src/gen`'."""
    parts = [f"under {' or '.join(literal(p) for p in query.paths)}"] if query.paths else []
    parts += [f"outside {' and '.join(literal(p) for p in query.exclude_paths)}"] if query.exclude_paths else []
    return " and ".join(parts)


def outside_words(email: str, query: "Query", repos: str, elsewhere: dict[str, tuple[date, date]]) -> str:
    """Where someone committed who counts nothing in this scope, to follow their e-mail: 'committed to `web`,
    but not since 2024-01-01: last on 2023-05-02' (the period left them out; 'but not under `src/api` since' with
    `path:`), or 'committed to `web`, but never with `path:docs`' (another filter did). `elsewhere` is
    `active((email,), False)`: their days without the period."""
    if email in elsewhere:  # active in this slice of history, only not in the period
        first, last = elsewhere[email]
        # their days are counted under the `path:` asked: said, or "not since" reads as not in the repository
        where = f"not {_path_words(query)} " if query.paths or query.exclude_paths else "not "
        if query.since and last < query.since:
            return f"committed to {repos}, but {where}since {query.since.isoformat()}: last on {last.isoformat()}"
        if query.until and first > query.until:
            return f"committed to {repos}, but {where}until {query.until.isoformat()}: first on {first.isoformat()}"
        period = f"from {query.since.isoformat()} to {query.until.isoformat()}" if query.since and query.until \
            else "in this period"
        return (f"committed to {repos}, but {where}{period}: only before and after it, from {first.isoformat()} "
                f"to {last.isoformat()}")
    narrowing = [t for t in query.scope_tokens() if not t.startswith(("since:", "until:"))]
    shown = ", ".join(f"`{t}`" for t in narrowing)
    return f"committed to {repos}, but never with {shown}" if shown else \
        f"committed to {repos}, but nothing of theirs counts in this scope"


def author_zero_words(index: "Index", repos: list["RepoRow"], query: "Query", active: Active) -> str | None:
    """Why `author:` globs that match people count nothing here: where the people they match did commit
    (one sentence), or None when they are active in scope (the zero comes from elsewhere)."""
    if not query.authors or active(query.authors, True):
        return None
    matched = active(query.authors, False)
    globs = " or ".join(f"`author:{g}`" for g in query.authors)
    if len(matched) > 1:  # the period left them all out: name the most recent
        email = max(matched, key=lambda e: (matched[e][1], e))
        return (f"None of the {len(matched)} people {globs} matches is active in this scope; the last, {email}, "
                f"{outside_words(email, query, _names(repos), matched)}.")
    if matched:
        (email,) = matched
        return f"{email} {outside_words(email, query, _names(repos), matched)}."
    everyone = [p for p, is_bot in _people(index, repos, query.mailmap).items() if query.bots or not is_bot]
    email = next((p for p in sorted(everyone) if any(fnmatch.fnmatchcase(p, g) for g in query.authors)), None)
    return f"{email} {outside_words(email, query, _names(repos), {})}." if email else None


def check_filters(index: "Index", repos: Iterable["RepoRow"], query: "Query",
                  touched: Callable[[str], bool]) -> None:
    """Refuse (QueryError) a `path:` filter that matches nothing in these repositories (`author:` is
    checked once the scope is known: `check_authors`).

    `touched(prefix)` says whether any commit of the repositories changed a path under `prefix`.
    """
    repos = list(repos)
    if not repos:
        return
    for prefix in query.paths:
        _check_path(index, repos, prefix, False, touched)
    for prefix in query.exclude_paths:  # excluding what was never there is a typo too
        _check_path(index, repos, prefix, True, touched)
