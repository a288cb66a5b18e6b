"""The one command grammar, shared by Slack (`/gad ...`), the CLI (`gad-bot report ...`) and the scheduler.

    parse_command("gstreamer since:2024-01 by:month", today) -> ShowReport(query=Query(...))

Everything a person can type is parsed here into frozen dataclasses; a mistake raises
QueryError with one sentence saying what was wrong and what to type instead.
"""

from __future__ import annotations

import itertools
import re
import shlex
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time
from typing import Literal, Union

from ..errors import QueryError, command, literal, nearest
from ..metric import person_key
from .periods import PERIOD_FORMS, since_date, until_date

BREAKDOWNS = ("week", "month", "quarter", "year", "person", "repo", "org", "team", "release")
TOP_BREAKDOWNS = ("person", "org", "repo", "team", "release")  # the tables `top:N` can cut
MAX_RELEASE_ROWS = 100  # the newest releases a by:release table shows at most (bot/engine/releases.py)
MAX_TAGS_GLOB = 100  # characters of a `tags:GLOB`
COCOMO_MODES = ("organic", "semidetached", "embedded")  # bot/engine/cocomo.py MODES
MAX_COMPARE_ITEMS = 10
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Slack clients "smarten" quotes and dashes; people never mean them in a query.
_STRAIGHTEN = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
                             "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
                             "\u2013": "-", "\u2014": "-", "\u00a0": " "})
_REPO_WORD = re.compile(r"^[\w][\w.\-/]*$")


@dataclass(frozen=True)
class Scope:
    """Which refs' history counts (METRIC.md rule 1)."""

    kind: Literal["default", "branch", "all"] = "default"
    branch: str | None = None  # with kind="branch"; "HEAD" is the default branch

    def words(self) -> str:
        if self.kind == "all":
            return "every ref"
        if self.kind == "branch":
            return "the default branch" if self.branch == "HEAD" else f"branch {_literal(self.branch or '')}"
        return "all branches and tags"

    def token(self) -> str:
        if self.kind == "all":
            return "refs:all"
        if self.kind == "branch":
            return f"branch:{self.branch}"
        return "default"


@dataclass(frozen=True)
class RefRange:
    """`range:A..B`: the commits reachable from `end` and not from `start` (git's `A..B`); `range:..B` has no start."""

    start: str | None
    end: str

    def token(self) -> str:
        return f"range:{self.start or ''}..{self.end}"

    def words(self) -> str:
        if self.start is None:
            return f"everything reachable from {_literal(self.end)} (range {_literal('..' + self.end)})"
        return (f"range {_literal(self.start + '..' + self.end)} (reachable from {_literal(self.end)}, "
                f"not from {_literal(self.start)})")


@dataclass(frozen=True)
class Query:
    """A 2GAD question: which repositories, which slice of history, how to break it down."""

    repos: tuple[str, ...]
    since: date | None = None
    until: date | None = None
    scope: Scope = field(default_factory=Scope)
    authors: tuple[str, ...] = ()  # globs on the person (lower-cased e-mail); any may match
    mailmap: bool = True
    bots: bool = False
    by: str | None = None  # one of BREAKDOWNS
    paths: tuple[str, ...] = ()  # subsystem prefixes; a commit counts if it touched any
    exclude_paths: tuple[str, ...] = ()  # `path:!docs`: commits touching only these do not count
    vs_cocomo: bool = False
    public: bool = False  # post in channel rather than ephemerally
    format: str | None = None  # "csv" attaches a CSV file
    range: RefRange | None = None  # replaces the scope: `range:A..B`
    orgs: tuple[str, ...] = ()  # globs on the organization (lower-cased); any may match
    teams: tuple[str, ...] = ()  # Slack user groups, by handle (`backend`) or id (`S0123`): only their members count
    top: int | None = None  # `top:N`: the first N rows of a by:person, by:org or by:repo table
    cocomo_mode: str = "organic"  # `cocomo:MODE`: Basic COCOMO's mode for vs:cocomo
    coauthors: bool = False  # `coauthors:on`: Co-authored-by trailers earn person-days (METRIC.md rule 7)
    tags: str | None = None  # `tags:GLOB`: which tags by:release takes for releases (default: version-like ones)
    prereleases: bool = False  # `prereleases:on`: by:release shows pre-releases as rows of their own
    release_series: bool = False  # `releases:series`: by:release folds patch releases into their X.Y series
    vs_fte: bool = False  # `vs:fte`: the full-time-equivalent model beside 2GAD (METRIC.md, "A second model")
    fte_threshold: int = 12  # `fte:N`: t, the active days in a half-year that count as full time
    calibrated: str | None = None  # `calibrated:NAME`: a saved calibration applied to the figure

    def words(self) -> str:
        """The scope and rules in words, for footnotes: 'all branches and tags, author dates, mailmap applied'."""
        parts = [self.range.words() if self.range else self.release_words() if self.by == "release" else self.scope.words(),
                 "author dates", "mailmap applied" if self.mailmap else "mailmap off",
                 "bots kept" if self.bots else "bots left out"]
        if self.coauthors:
            parts.append("co-authors counted")
        if self.authors:
            parts.append("authors " + " or ".join(map(_literal, self.authors)))
        if self.paths:
            parts.append("paths " + ", ".join(map(_literal, self.paths)))
        if self.exclude_paths:
            parts.append("excluding " + ", ".join(map(_literal, self.exclude_paths)))
        if self.teams:
            parts.append("teams " + " or ".join(_literal(t if _TEAM_ID.fullmatch(t) else "@" + t) for t in self.teams))
        if self.orgs:
            parts.append("organizations " + " or ".join(map(_literal, self.orgs)))
        return ", ".join(parts)

    def scope_tokens(self) -> list[str]:
        """The tokens that ask for this question's slice of history, authors aside (for a command that lists
        the people in it): ['since:2024-01-01', 'branch:main', 'path:src', 'org:intel*']."""
        tokens = [f"since:{self.since.isoformat()}"] if self.since else []
        tokens += [f"until:{self.until.isoformat()}"] if self.until else []
        tokens += [self.range.token()] if self.range else [] if self.scope.kind == "default" else [self.scope.token()]
        tokens += [f"path:{p}" for p in self.paths] + [f"path:!{p}" for p in self.exclude_paths]
        tokens += [f"org:{o}" for o in self.orgs]
        tokens += [f"team:@{t}" for t in self.teams]
        tokens += ([] if self.mailmap else ["mailmap:off"]) + (["bots:on"] if self.bots else [])
        return tokens


    def release_words(self) -> str:
        """by:release's scope: 'each release (tags that look like versions, pre-releases folded into the release
        that follows): what git's previous..this lists'."""
        tags = (f"tags matching {_literal(self.tags)}" if self.tags
                else "tags that look like versions, of their most-used family")
        folded = "pre-releases shown" if self.prereleases else "pre-releases folded into the release that follows"
        if self.release_series:
            return (f"each X.Y series ({tags}, sorted by version, {folded}, patch releases folded into their series): "
                    "what git's `previous series' newest..this series' newest` lists")
        return f"each release ({tags}, sorted by version, {folded}): what git's `previous..this` lists"


_literal = literal  # what a user typed, shown as code so that no formatting (`*_~` in Slack) applies to it


@dataclass(frozen=True)
class Help:
    topic: str | None = None


@dataclass(frozen=True)
class ListRepos:
    pass


@dataclass(frozen=True)
class ShowReport:
    query: Query


@dataclass(frozen=True)
class Track:
    source: str
    name: str | None = None
    forks: bool = False  # `forks:on`: an organization's forks are tracked too (they are left out by default)


@dataclass(frozen=True)
class Untrack:
    name: str


@dataclass(frozen=True)
class Sync:
    names: tuple[str, ...]


@dataclass(frozen=True)
class Subscribe:
    repos: tuple[str, ...]
    day: str | None = None  # mon..sun; None keeps the current setting or the default
    at: time | None = None
    tz: str | None = None
    people: bool | None = None
    teams: tuple[str, ...] | None = None  # `team:@group`: the digest counts only those groups' people; None keeps


@dataclass(frozen=True)
class Unsubscribe:
    repos: tuple[str, ...]  # ("all",) for everything in the channel


@dataclass(frozen=True)
class ListSubscriptions:
    page: int = 1


@dataclass(frozen=True)
class PreviewDigest:
    pass


@dataclass(frozen=True)
class SetAccess:
    """`access NAME [everyone|admins|ID...]`: read (no words) or set who may see a repository, project or
    organization (bot/engine/audiences.py parses the words). Admins only."""

    name: str
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Me:
    """`me [tokens]`: the asker's own 2GAD over what they may see (or the repositories named), found by the
    addresses of their Slack profile through each repository's mailmap."""

    query: Query


@dataclass(frozen=True)
class ProjectAdd:
    name: str
    repos: tuple[str, ...]


@dataclass(frozen=True)
class ProjectRemove:
    name: str


@dataclass(frozen=True)
class ListProjects:
    pass


@dataclass(frozen=True)
class CompareItem:
    """One side of `compare`: a repository or project, or `NAME:PATH` for a subsystem of it."""

    name: str  # the repository or project
    path: str | None = None
    range: RefRange | None = None  # `NAME@A..B`, or one of several `range:` tokens: this item's own range
    team: str | None = None  # `NAME@team:GROUP`: only that Slack user group's people, in this item

    @property
    def label(self) -> str:
        base = f"{self.name}:{self.path}" if self.path else self.name
        base = f"{base}@{self.range.token().removeprefix('range:')}" if self.range else base
        return f"{base}@team:{self.team}" if self.team else base


@dataclass(frozen=True)
class Compare:
    """`compare ITEM ITEM ... [tokens]`: one row per item over the same tokens."""

    items: tuple[CompareItem, ...]
    query: Query  # the shared tokens; `repos` holds the items' names

    def item_query(self, item: CompareItem) -> Query:
        """The query one item answers: the shared tokens, its repository, and its path when it has one."""
        from dataclasses import replace

        paths = self.query.paths + ((item.path,) if item.path else ())
        query = replace(self.query, repos=(item.name,), paths=tuple(dict.fromkeys(paths)), format=None)
        if item.team:
            query = replace(query, teams=tuple(dict.fromkeys((*self.query.teams, item.team))))
        return replace(query, range=item.range) if item.range else query


Command = Union[Help, ListRepos, ShowReport, Track, Untrack, Sync, Subscribe, Unsubscribe, SetAccess, Me,
                ListSubscriptions, PreviewDigest, ProjectAdd, ProjectRemove, ListProjects, Compare]

@dataclass(frozen=True)
class Token:
    """One report token, for every help text (Slack's `help`, `gad-bot report --help`, the README)."""

    form: str  # what to type, e.g. "since:PERIOD"
    meaning: str
    example: str


TOKENS: tuple[Token, ...] = (
    Token("since:PERIOD", "count from the start of PERIOD (inclusive)", "since:2024-01"),
    Token("until:PERIOD", "count to the end of PERIOD (inclusive: until:2024-06 ends on 2024-06-30)", "until:2024-06"),
    Token("branch:NAME", "only history reachable from that branch; branch:HEAD is the default branch", "branch:main"),
    Token("refs:all", "every ref, including refs/pull/*, remotes and notes (default: branches and tags)", "refs:all"),
    Token("range:A..B", "what git's A..B lists: reachable from B, not from A (tags, branches, commit ids); "
          "range:..B is everything up to B; replaces the scope", "range:v1.0..v2.0"),
    Token("author:GLOB", "people whose mailmapped, lower-cased e-mail matches; repeatable", "author:*@example.com"),
    Token("org:GLOB", "people whose organization (their e-mail's domain, or the operator's rules) matches; "
          "repeatable", "org:intel*"),
    Token("team:@GROUP", "people of that Slack user group, found by their profile's e-mail through the mailmap; "
          "repeatable (a union)", "team:@backend"),
    Token("path:DIR", "only commits that changed something under DIR (path:!DIR: outside it); repeatable; "
          "merges are not counted", "path:src/net"),
    Token("by:week|month|quarter|year|person|repo|org|team|release", "a breakdown table; by:team: one row per Slack "
          "user group (a person in two counts in both, once in the total); by:release: one row per release of one "
          "repository, what git's previous..this lists", "by:month"),
    Token("tags:GLOB", "with by:release: the tags that are releases (default: tags that look like versions, of "
          "their most-used family: v* or release-*, not both)", "tags:v*"),
    Token("prereleases:on", "with by:release: release candidates and betas as rows of their own (by default "
          "they fold into the release that follows)", "prereleases:on"),
    Token("releases:series", "with by:release: one row per X.Y series, its patch releases folded in (what git's "
          "previous series' newest..this series' newest lists)", "releases:series"),
    Token("mailmap:off", "skip the repository's .mailmap", "mailmap:off"),
    Token("bots:on", "keep [bot] authors (left out by default)", "bots:on"),
    Token("top:N", "only the first N rows of a by:person, by:org, by:repo or by:team table", "top:10"),
    Token("coauthors:on", "people named in Co-authored-by: trailers earn the commit's day too (off by default)",
          "coauthors:on"),
    Token("vs:cocomo", "Basic COCOMO (organic) from the source lines at the head, beside 2GAD, and 2GAD per "
          "thousand source lines", "vs:cocomo"),
    Token("vs:fte", "the full-time-equivalent model of Robles et al. beside 2GAD: per person and half-year, "
          "min(6, 6 x active days / t) person-months", "vs:fte"),
    Token("fte:N", "with vs:fte: t, the active days in a half-year that count as full time (default 12)", "fte:18"),
    Token("calibrated:NAME", "beside the figure, the person-days a saved calibration (gad-bot calibrate --save NAME) "
          "gives, with its band", "calibrated:team"),
    Token("cocomo:organic|semidetached|embedded", "Basic COCOMO's mode for vs:cocomo (organic by default)",
          "cocomo:embedded"),
    Token("format:csv", "CSV (in Slack: an attached file)", "format:csv"),
    Token("public", "in Slack: post the answer for everyone instead of only to you", "public"),
)
_EXAMPLE_OF: dict[str, str] = {}
for _token in TOKENS:  # a key's first token gives its example (`vs:cocomo`, not `vs:fte`)
    _EXAMPLE_OF.setdefault(_token.form.split(":")[0], _token.example)
_REPORT_KEYS = tuple(k for k in _EXAMPLE_OF if k != "public")

# The first word of every command other than a report (for "did you mean" on a mistyped one).
COMMAND_WORDS = ("help", "repos", "report", "track", "untrack", "sync", "subscribe", "unsubscribe",
                 "subscriptions", "digest", "project", "projects", "compare")
SUBSCRIBE_KEYS = ("day", "time", "tz", "people", "team")

GRAMMAR = """\
`REPO... {tokens}`
PERIOD is {periods}. `range:v1.0..v2.0` counts what git's `v1.0..v2.0` lists (`range:..v1.0`: everything up to v1.0).
Side by side: `compare ITEM ITEM... [tokens]`, an ITEM being a repository, a project or `REPO:PATH` (up to {most}), \
each with `@A..B` (its own range) or `@team:GROUP` (one user group's people: `compare web@team:backend web@team:frontend`).
Other commands: `help`, `repos`, `track URL [as:NAME]`, `untrack NAME`, `sync NAME...`, \
`subscribe REPO... [day:mon] [time:09:00] [tz:Europe/London] [people:on]`, `unsubscribe REPO...|all`, \
`subscriptions`, `digest`, `project add NAME REPO...`, `project remove NAME`, `projects`, \
`me [tokens]` (your own 2GAD), `access NAME [everyone|admins|#channel @group @person]` (admins: who may see it).""".format(
    tokens=" ".join(f"[{t.form}]" for t in TOKENS), periods=PERIOD_FORMS, most=MAX_COMPARE_ITEMS)

EXAMPLES = (
    "gstreamer/gstreamer since:2024-01",
    "linux path:drivers/gpu by:year",
    "myrepo branch:HEAD since:12w by:week",
    "web api since:2024-Q1 until:2024-Q2 by:person",
    "myrepo range:v1.0..v2.0",
    "linux since:2024 by:org",
    "compare mesa linux:drivers/gpu/drm/nouveau since:2023",
    "subscribe myrepo day:mon time:9am",
)
_REF_NAME = re.compile(r"^[\w][\w.\-/+@]*$")


class NamesAnExample(QueryError):
    """A refusal whose example names repositories: `{repo}`, `{other}` (a second repository) and `{question}`
    (a whole report question) in its template, made-up ones in its message. The faces put tracked names in
    (bot.engine.examples.name_tracked), as help does: an example naming an untracked repository answers
    "unknown repository" to the first thing a newcomer copies."""

    GENERIC = {"repo": "myrepo", "other": "linux:drivers/gpu/drm", "question": EXAMPLES[0]}
    _PLACEHOLDER = re.compile(r"\{(repo|other|question)\}")

    def __init__(self, template: str, **generic: str):
        self.template = template
        super().__init__(self.naming({**self.GENERIC, **generic}))

    def naming(self, names: dict[str, str]) -> str:
        """The sentence with `names` in its placeholders (one pass: a name is never read as a placeholder)."""
        return self._PLACEHOLDER.sub(lambda m: names[m[1]], self.template)

    def placeholders(self) -> set[str]:
        return set(self._PLACEHOLDER.findall(self.template))


def is_ref_word(word: str) -> bool:
    """Whether `range:` takes `word` as one end (a ref name of safe characters, no `..`)."""
    return bool(_REF_NAME.match(word)) and ".." not in word


def suggest_command(word: str) -> str | None:
    """The command a mistyped first word most likely was (`subscibe` -> `subscribe`), or None."""
    found = nearest(word, COMMAND_WORDS, n=1, cutoff=0.75)
    return found[0] if found else None  # exact too: `gad-bot report subscribe` means Slack's command


def straighten(text: str) -> str:
    """Replace the curly quotes and dashes Slack clients insert with plain ASCII ones."""
    return text.translate(_STRAIGHTEN)


def explain_unknown(error, text: str):
    """An unknown repository that is the first word and close to a command was a mistyped command.

    `/gad subscibe web` parses as a report on `subscibe` and `web`; the engine then finds no
    repository `subscibe`. The faces pass that error here, with what was typed, to say so.
    """
    from ..errors import UnknownRepoError

    try:
        first = _split(text)[0]
    except (QueryError, IndexError):
        return error
    word = suggest_command(first) if first == error.name else None
    return UnknownRepoError(error.name, error.known, command_word=word) if word else error


def _split(text: str) -> list[str]:
    if "\x00" in text:
        raise QueryError("The command contains a NUL character; type it again without it.")
    try:
        # quotes group words, but a backslash is no escape: `path:src\\x` from a Windows shell keeps it (clean_path
        # makes it `src/x`), where shlex.split dropped it and asked about `srcx`
        lexer = shlex.shlex(straighten(text), posix=True)
        lexer.whitespace_split = True
        lexer.escape = ""
        lexer.commenters = ""
        words = list(lexer)
    except ValueError:
        raise QueryError("A quote is not closed; close it or leave the quotes out.") from None
    # Quoted words (and words split only by exotic separators) may still hold line breaks, tabs or
    # invisible characters; they would break the one-line error messages that echo words.
    if any(unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp") for w in words for c in w):
        raise QueryError("The command contains a line break, tab or invisible character inside a word; "
                         "type it again on one line without it.")
    return words


def _on_off(key: str, value: str) -> bool:
    value = value.lower()
    if value in ("on", "yes", "true"):
        return True
    if value in ("off", "no", "false"):
        return False
    raise QueryError(f"`{key}:{value}` is not understood; use `{key}:on` or `{key}:off`.")


def _one(key: str, seen: dict[str, str], value: str) -> None:
    if key in seen:
        raise QueryError(f"`{key}:` is given twice; keep one of `{key}:{seen[key]}` and `{key}:{value}`.")
    seen[key] = value


def is_source(word: str) -> bool:
    """Whether a word looks like a URL or path rather than a tracked name (the operator may report on those)."""
    return (word.startswith(("https://", "http://", "ssh://", "git://", "file://", "/", "./", "../", "~"))
            or word in (".", "..") or bool(re.match(r"^[\w.\-]+@[\w.\-]+:", word)))


def _check_repo_word(word: str) -> str:
    if is_source(word) or _REPO_WORD.fullmatch(word):
        return word
    raise QueryError(f"`{word}` is not a repository name; names are letters, digits, `.`, `-`, `_` and `/`.")


def _hint_token_form(word: str, following: str | None) -> None:
    """`since 2024`, `since=2024`, `--since 2024` and `--since=2024` all mean `since:2024`: say so.

    A bare key is taken for a token only when a plain word follows it (`web since 2024`), so that a
    repository that happens to be named like a key still works alone."""
    bare = word.lstrip("-")
    key, eq, value = bare.partition("=")
    key = key.lower()
    if key not in _REPORT_KEYS:
        return
    if not eq:
        if following is None or ":" in following:
            if not word.startswith("-"):
                return
            value = following or ""
        else:
            value = following
    shown = " ".join(w for w in (word, None if eq else value) if w)
    example = f"{key}:{value}" if value and not value.startswith("-") else _EXAMPLE_OF[key]
    raise QueryError(f"`{shown}` is not how a token is written; a token is a key, a colon and a value with no "
                     f"space, e.g. `{example}`.")


def query_words(args: list[str] | tuple[str, ...]) -> list[str]:
    """The words of a query given on a command line: a whole query quoted as one argument
    (`gad-bot report "openssh since:2024"`) is split as Slack's text would be; a path or URL is kept whole
    (a directory may have spaces in its name)."""
    words: list[str] = []
    for arg in args:
        if not any(c.isspace() for c in arg):
            words.append(arg)
            continue
        split = _split(arg)
        tokens = [w for w in split[1:] if w.lower() == "public" or w.partition(":")[0].lower() in _REPORT_KEYS]
        words.extend(split if tokens or not is_source(arg.strip()) else [arg])
    return words


def parse_query(words: list[str], today: date, *, repos_required: bool = True) -> Query:
    """Parse report words (repositories then tokens, in any order) into a Query (`me` may name none)."""
    repos: list[str] = []
    seen: dict[str, str] = {}
    authors: list[str] = []
    orgs: list[str] = []
    teams: list[str] = []
    paths: list[str] = []
    excluded: list[str] = []
    options: dict[str, object] = {}
    for at, word in enumerate(words):
        if word.lower() == "public":
            options["public"] = True
            continue
        key, sep, value = word.partition(":")
        if not sep or is_source(word):
            _hint_token_form(word, words[at + 1] if at + 1 < len(words) else None)
            repos.append(_check_repo_word(word))
            continue
        key = key.lower()
        if key not in _REPORT_KEYS:
            close = nearest(key, _REPORT_KEYS, n=1)
            if close:
                raise QueryError(f"`{key}:` is not a token gad-bot knows; did you mean `{close[0]}:`, as in "
                                 f"`{_EXAMPLE_OF[close[0]]}`?")
            raise QueryError(f"`{key}:` is not a token gad-bot knows; use one of "
                             + ", ".join(f"`{k}:`" for k in _REPORT_KEYS) + f" ({command('help')} has examples).")
        if not value:
            raise QueryError(f"`{key}:` needs a value, e.g. `{_EXAMPLE_OF[key]}`.")
        if key == "author":
            authors.append(person_key(value))  # people are ASCII-lower-cased e-mails
        elif key == "org":
            orgs.append(value.lower())
        elif key == "team":
            teams.append(team_word(value))
        elif key == "range":
            _one(key, seen, value)
            options["range"] = _parse_range(value)
        elif key == "path":
            target = excluded if value.startswith("!") else paths
            cleaned = clean_path(value.lstrip("!"))
            if not cleaned or ".." in cleaned.split("/"):
                raise QueryError(f"`path:{value}` is not a path inside the repository; use e.g. `path:src/net`.")
            if any(c in cleaned for c in "*?["):
                plain = itertools.takewhile(lambda part: not any(c in part for c in "*?["), cleaned.split("/"))
                parent = "/".join(plain)
                raise QueryError(f"`path:{value}` is a glob, and `path:` takes a directory or file, not a pattern; "
                                 + (f"use `path:{value[:len(value) - len(value.lstrip('!'))]}{parent}` for everything under "
                                    f"`{parent}`." if parent else "name a directory, e.g. `path:src`."))
            target.append(cleaned)
        elif key in ("since", "until"):
            _one(key, seen, value)
            try:
                options[key] = since_date(value, today) if key == "since" else until_date(value, today)
            except QueryError:
                raise QueryError(f"`{key}:{value}` is not a period; use {PERIOD_FORMS}.") from None
        elif key in ("branch", "refs"):
            if "scope" in seen:
                raise QueryError(f"Give one scope: `{seen['scope']}` and `{word}` disagree; "
                                 "use `branch:NAME` or `refs:all`, not both.")
            seen["scope"] = word
            if key == "refs":
                if value.lower() != "all":
                    raise QueryError(f"`refs:{value}` is not understood; use `refs:all` (every ref) "
                                     "or `branch:NAME` (one branch).")
                options["scope"] = Scope("all")
            else:
                if value.startswith("-") or ".." in value or any(c in value for c in " ~^:?*[\\"):
                    raise QueryError(f"`branch:{value}` is not a branch name; use e.g. `branch:main` or `branch:HEAD`.")
                options["scope"] = Scope("branch", "HEAD" if value.upper() == "HEAD" else value)
        elif key == "by":
            _one(key, seen, value)
            if value.lower() not in BREAKDOWNS:
                close = nearest(value, BREAKDOWNS, n=1, cutoff=0.5)
                raise QueryError(f"`by:{value}` is not a breakdown; " + (f"did you mean `by:{close[0]}`?" if close else
                                 "use one of " + ", ".join(f"`by:{b}`" for b in BREAKDOWNS) + "."))
            options["by"] = value.lower()
        elif key == "mailmap":
            _one(key, seen, value)
            options["mailmap"] = _on_off(key, value)
        elif key == "bots":
            _one(key, seen, value)
            options["bots"] = _on_off(key, value)
        elif key == "vs":  # repeatable: `vs:cocomo vs:fte` shows both models
            model = value.lower()
            if model not in ("cocomo", "fte"):
                raise QueryError(f"`vs:{value}` is not a model gad-bot compares with; use `vs:cocomo` or `vs:fte`.")
            if seen.get("vs:" + model):
                raise QueryError(f"`vs:` is given twice; keep one of `vs:{seen['vs:' + model]}` and `vs:{value}`.")
            seen["vs:" + model] = value
            options["vs_" + model] = True
        elif key == "fte":
            _one(key, seen, value)
            if not re.fullmatch(r"[0-9]{1,3}", value) or not 1 <= int(value) <= 182:
                raise QueryError(f"`fte:{value}` is not a threshold; give the active days in a half-year that count "
                                 "as full time, from 1 to 182, e.g. `fte:12` (the default) or `fte:18`.")
            options["fte_threshold"] = int(value)
            options["vs_fte"] = True  # a threshold means the model is wanted
        elif key == "releases":
            _one(key, seen, value)
            if value.lower() not in ("series", "each"):
                raise QueryError(f"`releases:{value}` is not understood; use `releases:series` (one row per X.Y "
                                 "series) or leave it out (one row per release).")
            options["release_series"] = value.lower() == "series"
        elif key == "calibrated":
            _one(key, seen, value)
            if not re.fullmatch(r"[\w.\-]{1,64}", value):
                raise QueryError(f"`calibrated:{value[:40]}` is not a calibration's name; use the NAME given to "
                                 "`gad-bot calibrate --save NAME`, e.g. `calibrated:team`.")
            options["calibrated"] = value
        elif key == "top":
            _one(key, seen, value)
            if not re.fullmatch(r"[0-9]{1,6}", value) or int(value) < 1:
                raise QueryError(f"`top:{value}` is not a number of rows; use a whole number, e.g. `top:10`.")
            options["top"] = int(value)
        elif key == "coauthors":
            _one(key, seen, value)
            options["coauthors"] = _on_off(key, value)
        elif key == "prereleases":
            _one(key, seen, value)
            options["prereleases"] = _on_off(key, value)
        elif key == "tags":
            _one(key, seen, value)
            options["tags"] = _tags_glob(value)
        elif key == "cocomo":
            _one(key, seen, value)
            if value.lower() not in COCOMO_MODES:
                close = nearest(value.lower(), COCOMO_MODES, n=1, cutoff=0.5)
                raise QueryError(f"`cocomo:{value}` is not a Basic COCOMO mode; " + (
                    f"did you mean `cocomo:{close[0]}`?" if close else
                    "use " + ", ".join(f"`cocomo:{m}`" for m in COCOMO_MODES) + "."))
            options["cocomo_mode"] = value.lower()
            options["vs_cocomo"] = True  # a mode means COCOMO is wanted
        elif key == "format":
            _one(key, seen, value)
            if value.lower() not in ("csv",):
                raise QueryError(f"`format:{value}` is not a format gad-bot writes; use `format:csv`.")
            options["format"] = value.lower()
    if not repos and repos_required:
        raise NamesAnExample(f"Name at least one repository, e.g. `{{question}}`; {command('repos')} lists them.")
    if "range" in options and "scope" in seen:
        raise QueryError(f"A range replaces the scope: `range:{seen['range']}` counts what git's "
                         f"`{seen['range']}` lists whatever the branches, so leave out `{seen['scope']}`.")
    if "top" in options and options.get("by") not in TOP_BREAKDOWNS:
        raise QueryError(f"`top:{seen['top']}` limits a table of people, organizations, repositories or teams; add "
                         f"`by:person`, `by:org` or `by:repo`, e.g. `by:person top:{seen['top']}`.")
    _check_release_tokens(options, seen, repos)
    since, until = options.get("since"), options.get("until")
    if since and until and since > until:
        raise QueryError(f"`since:{seen['since']}` starts after `until:{seen['until']}` ends; swap them or widen the period.")
    return Query(repos=tuple(dict.fromkeys(repos)), authors=tuple(authors), paths=tuple(paths),
                 exclude_paths=tuple(excluded), orgs=tuple(dict.fromkeys(orgs)), teams=tuple(dict.fromkeys(teams)),
                 **options)  # type: ignore[arg-type]


_TEAM_HANDLE = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")
_TEAM_ID = re.compile(r"S[A-Z0-9]{2,20}")


def team_word(value: str) -> str:
    """`team:@backend` (or `team:backend`, or a group's id `S0123`, which Slack sends as `<!subteam^S0123|@backend>`,
    decoded to `@backend`): the handle, lower-cased, or the id."""
    word = value.strip()
    if _TEAM_ID.fullmatch(word):
        return word
    handle = word.removeprefix("@").lower()
    if not _TEAM_HANDLE.fullmatch(handle):
        raise QueryError(f"`team:{value[:80]}` is not a Slack user group; pick one with `@` in Slack, e.g. "
                         "`team:@backend`.")
    return handle


def clean_path(value: str) -> str:
    """A path as git names it inside the repository: `./src/x` and `src\\x` (a Windows shell's) are `src/x`, and
    `src/x/` is `src/x`. Both used to match nothing and suggest some other path nearby."""
    cleaned = value.replace("\\", "/").strip("/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:].lstrip("/")
    return "" if cleaned == "." else cleaned


def _tags_glob(value: str) -> str:
    """`tags:GLOB`: a tag-name pattern (fnmatch's `*`, `?`, `[...]`; never a regular expression), bounded."""
    if len(value) > MAX_TAGS_GLOB or not re.fullmatch(r"[\w.\-/+@*?\[\]!~]+", value):
        raise QueryError(f"`tags:{value[:40]}{'...' if len(value) > 40 else ''}` is not a tag pattern; use up to "
                         f"{MAX_TAGS_GLOB} characters of a tag name with `*` and `?`, e.g. `tags:v*` or `tags:release-*`.")
    return value


def _check_release_tokens(options: dict, seen: dict[str, str], repos: list[str]) -> None:
    """by:release counts one repository's releases as ranges of their own: what it cannot go with, in one sentence."""
    for key in ("tags", "prereleases", "releases"):
        if key in seen and options.get("by") != "release":
            raise QueryError(f"`{key}:{seen[key]}` chooses the releases of `by:release`; add `by:release`, "
                             f"e.g. `{repos[0] if repos else 'myrepo'} by:release {key}:{seen[key]}`.")
    if options.get("by") != "release":
        return
    if len(dict.fromkeys(repos)) > 1:
        raise QueryError(f"`by:release` breaks one repository's history into its releases, and {len(dict.fromkeys(repos))} "
                         f"were named; ask for each on its own, e.g. `{repos[0]} by:release`.")
    if "range" in options or "scope" in seen:
        given = f"range:{seen['range']}" if "range" in options else seen["scope"]
        raise QueryError(f"`by:release` counts each release's own range (what git's `previous..this` lists), so "
                         f"leave out `{given}`.")
    if options.get("top", 0) > MAX_RELEASE_ROWS:
        raise QueryError(f"`by:release` shows at most the newest {MAX_RELEASE_ROWS} releases; use `top:{MAX_RELEASE_ROWS}` "
                         f"or fewer, and `until:` to reach older ones (e.g. `until:2020`).")


def _compare_item(word: str) -> CompareItem:
    """A compare item: `NAME`, `NAME:PATH`, either with `@A..B` (its own range: `git:builtin@v2.40.0..v2.45.0`), and
    with `@team:GROUP` last (only that user group's people: `web@team:backend web@team:frontend`)."""
    team = None
    marker = word.lower().rfind("@team:")
    if marker > 0 and "://" not in word:  # (`name@team:g` reads like ssh's `user@host:path`, which is no item here)
        team, word = team_word(word[marker + len("@team:"):]), word[:marker]
    base, at, span = word.rpartition("@")
    own = None
    if at and ".." in span and base and not is_source(word):
        own, word = _parse_range(span), base
    key, sep, value = word.partition(":")
    if sep and not is_source(word):
        path = clean_path(value)
        if not path or ".." in path.split("/"):
            raise QueryError(f"`{word}` is not `NAME:PATH`; use e.g. `linux:drivers/gpu/drm/nouveau`.")
        return CompareItem(_check_repo_word(key), path, own, team)
    return CompareItem(_check_repo_word(word), None, own, team)


def _parse_range(value: str) -> RefRange:
    """`A..B` or `..B`; A and B are ref names or commit ids (git's three-dot form is not a range here)."""
    example = "e.g. `range:v1.0..v2.0` (what 2.0 added after 1.0) or `range:..v1.0` (everything up to 1.0)"
    if "..." in value:
        raise QueryError(f"`range:{value}` uses three dots; a range is `A..B` with two, {example}.")
    start, sep, end = value.partition("..")
    if not sep or not end:
        raise QueryError(f"`range:{value}` is not a range; use two refs with `..` between them, {example}.")
    for ref in (start, end):
        if ref and (not _REF_NAME.fullmatch(ref) or ref.endswith((".", "/", ".lock"))):
            raise QueryError(f"`{ref}` in `range:{value}` is not a tag, branch or commit id; {example}.")
    return RefRange(start or None, end)


def parse_compare(words: list[str], today: date) -> Compare:
    """`compare ITEM ITEM ... [tokens]`: items are repositories, projects or `NAME:PATH`; tokens are a report's."""
    items: list[CompareItem] = []
    tokens: list[str] = []
    ranges: list[str] = []  # `range:` tokens: one is shared by every item, several are items of their own
    for word in words:
        key, sep, value = word.partition(":")
        if sep and key.lower() == "range" and not is_source(word):
            ranges.append(word)
        elif word.lower() == "public" or (sep and key.lower() in _REPORT_KEYS and not is_source(word)):
            tokens.append(word)
        else:
            items.append(_compare_item(word))
    if len(ranges) == 1:
        tokens.append(ranges[0])
    elif ranges:  # `compare git range:v2.35.0..v2.40.0 range:v2.40.0..v2.45.0`: each item in each range
        spans = [_parse_range(r.partition(":")[2]) for r in ranges]
        items = [item if item.range else replace(item, range=span) for item in items
                 for span in ([None] if item.range else spans)]
    items = list(dict.fromkeys(items))
    if items and any(token.lower() == "by:release" for token in tokens):  # before the count: one item is the slip
        raise QueryError(f"`compare` gives one row per item, and `by:release` one row per release of one repository; "
                         f"ask `{items[0].name} by:release`, or set releases side by side as ranges: "
                         f"`compare {items[0].name} range:v1.0..v1.1 range:v1.1..v1.2`.")
    if len(items) < 2:
        raise NamesAnExample("Name at least two things to compare, e.g. `compare {repo} {other} since:2023`.", repo="mesa")
    if len(items) > MAX_COMPARE_ITEMS:
        raise QueryError(f"`compare` takes up to {MAX_COMPARE_ITEMS} items and {len(items)} were given; "
                         f"split them into two comparisons of at most {MAX_COMPARE_ITEMS}.")
    query = parse_query([item.name for item in items] + tokens, today)
    if any(item.range for item in items) and query.scope.kind != "default":
        raise QueryError(f"A range replaces the scope: leave out `{query.scope.token()}` when items have ranges.")
    if query.by is not None:
        raise QueryError(f"`compare` already gives one row per item; leave out `by:{query.by}` "
                         "(or ask for one item with it).")
    return Compare(tuple(items), query)


_TIME_EXAMPLES = "e.g. `time:09:00`, `time:9am` or `time:17h30`"


def _parse_time(value: str) -> time:
    """A time of day as people type it: 09:00, 9:00, 9am, 5:30pm, 17h30, 9 (an hour), 0930."""
    from dateutil import parser  # a well-kept parser for "9am", "5:30pm", "17h30"; imported when needed

    text = value.strip().lower()
    if re.fullmatch(r"\d{1,2}", text):  # "at 9": a bare number is an hour (dateutil would read a day)
        text += ":00"
    elif re.fullmatch(r"\d{3,4}", text):  # "0930", "1730": hours and minutes (dateutil would read a year)
        text = f"{text[:-2]}:{text[-2:]}"
    elif re.fullmatch(r"\d{1,2}\.\d{2}", text):  # "9.30", as written in much of Europe (dateutil: a date)
        text = text.replace(".", ":")
    # Parse twice against different dates: a time of day leaves both dates alone; anything naming a
    # day, a month or a year ("mon", "25", "2024-01-01") changes one, and is refused.
    try:
        first = parser.parse(text, default=datetime(2000, 1, 1))
        second = parser.parse(text, default=datetime(2001, 2, 2))
    except (ValueError, OverflowError):
        first = second = None
    if (first is None or first.date() != date(2000, 1, 1) or second.date() != date(2001, 2, 2)
            or first.tzinfo is not None or first.second or first.microsecond):
        raise QueryError(f"`time:{value}` is not a time of day; use {_TIME_EXAMPLES}.")
    return time(first.hour, first.minute)


def _parse_subscribe(words: list[str]) -> Subscribe:
    repos: list[str] = []
    options: dict[str, object] = {}
    seen: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition(":")
        key = key.lower()
        if sep and key in ("day", "time", "tz", "people"):
            _one(key, seen, value)
        if not sep:
            repos.append(_check_repo_word(word))
        elif key == "day":
            if len(value) < 3 or not any(name.startswith(value.lower()) for name in _WEEKDAY_NAMES):
                raise QueryError(f"`day:{value}` is not a weekday; use one of " + ", ".join(f"`day:{d}`" for d in WEEKDAYS) + ".")
            options["day"] = value.lower()[:3]
        elif key == "time":
            options["at"] = _parse_time(value)
        elif key == "tz":
            from zoneinfo import ZoneInfo  # stdlib; imported here to keep parsing the common case cheap
            try:
                ZoneInfo(value)
            except Exception:
                raise QueryError(f"`tz:{value}` is not a time zone; use an IANA name such as `tz:Europe/London` or `tz:UTC`.") from None
            options["tz"] = value
        elif key == "people":
            options["people"] = _on_off(key, value)
        elif key == "team":
            options["teams"] = tuple(dict.fromkeys([*options.get("teams", ()), team_word(value)]))  # type: ignore[misc]
        else:
            close = nearest(key, SUBSCRIBE_KEYS, n=1)
            raise QueryError(f"`{key}:` is not a subscription setting; "
                             + (f"did you mean `{close[0]}:`?" if close else
                                "use `day:`, `time:`, `tz:`, `people:` or `team:`."))
    if not repos:
        raise NamesAnExample(f"Name the repositories to subscribe to, e.g. {command('subscribe {repo} day:mon time:9am')}.")
    return Subscribe(repos=tuple(dict.fromkeys(repos)), **options)  # type: ignore[arg-type]


def parse_command(text: str, today: date) -> Command:
    """Parse whatever follows `/gad` (or `gad-bot report`) into a Command."""
    words = _split(text)
    if not words:
        return Help()
    head, rest = words[0].lower(), words[1:]
    if head in ("help", "-h", "--help", "?"):
        return Help(rest[0].lower() if rest else None)
    if head == "repos":
        return ListRepos()
    if head == "report":
        return ShowReport(parse_query(rest, today))
    if head == "compare":
        return parse_compare(rest, today)
    if head == "track":
        if not rest:
            raise QueryError("Say what to track, e.g. `track https://github.com/owner/name`.")
        source, name, forks = rest[0], None, False
        for word in rest[1:]:
            if word.lower().startswith("as:") and len(word) > 3:
                if name is not None:
                    raise QueryError(f"`as:` is given twice; keep one of `as:{name}` and `{word}`.")
                name = _check_repo_word(word[3:])
            elif word.lower() in ("forks:on", "forks:off"):
                forks = word.lower() == "forks:on"
            else:
                raise QueryError(f"`{word}` is not understood after the URL; to name the repository use `as:NAME`.")
        return Track(source, name, forks)
    if head == "untrack":
        if len(rest) != 1:
            raise NamesAnExample("Name one repository to untrack, e.g. `untrack {repo}`.")
        return Untrack(_check_repo_word(rest[0]))
    if head == "sync":
        return Sync(tuple(_check_repo_word(w) for w in rest))
    if head == "subscribe":
        return _parse_subscribe(rest)
    if head == "unsubscribe":
        if not rest:
            raise NamesAnExample("Name the repositories to unsubscribe from, or `all`, e.g. `unsubscribe {repo}`.")
        return Unsubscribe(tuple(_check_repo_word(w) for w in rest))
    if head == "subscriptions":
        page = 1
        if rest:
            if len(rest) > 1 or not re.fullmatch(r"[0-9]{1,6}", rest[0]) or int(rest[0]) < 1:
                raise QueryError("`subscriptions` takes an optional page number, e.g. `subscriptions 2`.")
            page = int(rest[0])
        return ListSubscriptions(page)
    if head == "digest":
        return PreviewDigest()
    if head == "projects":
        return ListProjects()
    if head == "access":
        if not rest:
            raise NamesAnExample("Name what to read or open, e.g. `access {repo}` or `access {repo} everyone`.")
        return SetAccess(_check_repo_word(rest[0]), tuple(rest[1:]))
    if head == "me":
        query = parse_query(rest, today, repos_required=False)
        if query.authors:
            raise QueryError("`me` counts your own addresses already; leave out `author:`.")
        if query.by == "person":
            raise QueryError("`me` is one person's figure; leave out `by:person` (try `by:month` or `by:repo`).")
        return Me(query)
    if head == "project":
        sub = rest[0].lower() if rest else ""
        if sub == "add" and len(rest) >= 3:
            return ProjectAdd(_check_repo_word(rest[1]), tuple(dict.fromkeys(_check_repo_word(w) for w in rest[2:])))
        if sub == "remove" and len(rest) == 2:
            return ProjectRemove(_check_repo_word(rest[1]))
        if sub == "list" and len(rest) == 1:
            return ListProjects()
        raise QueryError("Use `project add NAME REPO...`, `project remove NAME` or `projects`.")
    return ShowReport(parse_query(words, today))
