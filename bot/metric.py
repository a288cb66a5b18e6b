"""2GAD arithmetic, exactly as ../shared/METRIC.md defines it, and the Report every face renders.

This module is the reference: plain Python over activity records. The index answers
the same questions faster (bot/engine/columns.py); tests check that the two always agree.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

# COCOMO's own units (METRIC.md "Units"): 1 person-month = 152 h = 19 person-days of 8 h.
DAYS_PER_PERSON_MONTH = 19
DAYS_PER_PERSON_YEAR = 12 * DAYS_PER_PERSON_MONTH  # 228
UNITS_NOTE = "1 person-month = 19 person-days (152 h, COCOMO's unit); 1 person-year = 228 person-days"

BUILTIN_BOT_PATTERN = "[bot]"

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    """Lower-cased as git and `tr A-Z a-z` do: ASCII letters only (so `Ó` stays `Ó`)."""
    return text.translate(_ASCII_LOWER)


def person_key(email: str) -> str:
    """The person an e-mail stands for: the e-mail, ASCII-lower-cased."""
    return ascii_lower(email)


@dataclass(frozen=True)
class Record:
    """One commit's contribution: who (mailmapped, lower-cased e-mail), which day, which commit."""

    person: str
    day: date
    commit: str
    repo: str = ""


@dataclass(frozen=True)
class Totals:
    person_days: int  # GAD: distinct (person, day) pairs, the *active days* (outputs name it `active_days`)
    developers: int
    commits: int

    @property
    def active_days(self) -> int:
        return self.person_days

    @property
    def two_gad(self) -> int:
        return 2 * self.person_days


@dataclass(frozen=True)
class Release:
    """A by:release row's release: its tag, the release before it in version order, the days of their commits."""

    tag: str
    previous: str | None  # None for the first release: it counts everything its tag reaches
    day: date | None  # the author day of the commit the tag names (as `range:A..B` shows its ends)
    previous_day: date | None = None
    prerelease: bool = False  # a pre-release shown as a row (prereleases:on, or no release after it yet)
    series: str | None = None  # `releases:series`: the X.Y series the row counts ("2.1"); `tag` is its newest
    folded: int = 1  # with series: how many releases of the series the row holds

    @property
    def range(self) -> str:
        """The range the row counts, as `range:` takes it: 'v1.0..v1.1', '..v1.0' for the first."""
        return f"{self.previous or ''}..{self.tag}"

    @property
    def interval_days(self) -> int | None:
        """Days from the previous release's commit to this one's (negative: tagged on an older commit)."""
        return (self.day - self.previous_day).days if self.day and self.previous_day else None


@dataclass(frozen=True)
class Quartiles:
    """The median and the quartiles of some figures (numpy's default, linear: R's type 7, Excel's QUARTILE.INC)."""

    p25: float
    median: float
    p75: float
    count: int

    @classmethod
    def of(cls, values: Iterable[float]) -> "Quartiles | None":
        import statistics

        values = sorted(values)
        if not values:
            return None
        if len(values) == 1:
            return cls(values[0], values[0], values[0], 1)
        # statistics' inclusive method is the same linear interpolation as numpy's default
        p25, median, p75 = statistics.quantiles(values, n=4, method="inclusive")
        return cls(p25, median, p75, len(values))


@dataclass(frozen=True)
class TypicalRelease:
    """by:release's typical release: the median 2GAD and interval of the rows shown, with their quartiles.

    The first release (everything up to it) is left out: it is the project's whole start, not a release's work;
    so is a row whose interval is unknown (an impossible date) from the interval's figures."""

    two_gad: Quartiles  # person-days
    interval_days: Quartiles | None  # days between a release's commit and the previous one's
    releases: int  # rows the figures are over
    left_out_first: bool  # whether the first release was among the rows and left out
    series: bool = False  # the rows are X.Y series (`releases:series`)


@dataclass(frozen=True)
class Row:
    """One line of a breakdown: a period, a person, a repository or a release."""

    key: str
    totals: Totals
    first_day: date | None = None  # for period rows
    # a period row cut by since:, until: or today: (first day counted, last day counted), None for a side not cut
    covers: tuple[date | None, date | None] | None = None
    release: Release | None = None  # for by:release rows


@dataclass(frozen=True)
class Cocomo:
    """Basic COCOMO beside 2GAD, in person-months."""

    counter: str  # e.g. "SLOCCount 2.26"
    sloc: int
    person_months: float  # a * KSLOC ** b: 2.4 * KSLOC ** 1.05 in the organic mode
    two_gad_person_months: float
    ratio: float  # 2GAD / COCOMO
    mode: str = "organic"  # Basic COCOMO's mode: organic, semidetached or embedded

    @property
    def two_gad_per_ksloc(self) -> float | None:
        """2GAD person-days per thousand source lines at the head, so that a planned size can be scaled."""
        return self.two_gad_person_months * DAYS_PER_PERSON_MONTH / (self.sloc / 1000) if self.sloc else None


@dataclass(frozen=True)
class Calibrated:
    """A saved calibration (`gad-bot calibrate --save NAME`) applied to a figure: logged person-days per 2GAD
    person-day, measured over `months` months, and the band their month-to-month spread gives."""

    name: str
    ratio: float  # logged person-days / 2GAD over the whole span compared
    low: float  # the band: the 25th and 75th percentiles of the months' own ratios
    high: float
    months: int
    first_day: date
    last_day: date
    two_gad: int  # the figure it is applied to

    @property
    def person_days(self) -> float:
        return self.two_gad * self.ratio

    @property
    def band(self) -> tuple[float, float]:
        return self.two_gad * self.low, self.two_gad * self.high


FTE_THRESHOLD = 12  # `fte:N`'s default: the active days in a half-year that count as full time (Robles et al.)
FTE_MONTHS_PER_HALF = 6


@dataclass(frozen=True)
class FteHalf:
    """One calendar half-year of the full-time-equivalent model (METRIC.md, "A second model")."""

    key: str  # "2024-H1" (January-June) or "2024-H2" (July-December)
    first_day: date  # the half-year's first and last day counted: the period's own when it cuts the half-year
    last_day: date
    people: int  # people with at least one active day in it
    active_days: int  # their active days in it, summed (GAD of the half-year)
    person_months: float  # sum over people of min(6, 6 d / t)
    full_time: int  # people at the cap (d >= t): the model counts them 6 person-months whatever they did more
    partial: bool  # since:, until: or today cut the half-year: counted over the days inside it only


@dataclass(frozen=True)
class Fte:
    """`vs:fte`: the activity-threshold model of Robles et al. beside 2GAD, both in person-months of 19 days."""

    threshold: int  # t: active days in a half-year counted as full time (`fte:N`)
    person_months: float
    two_gad_person_months: float
    halves: tuple[FteHalf, ...]
    # people whose model figure is above their own 2GAD (occasional contributors) and below it (full-timers)
    people_above: int = 0
    people_below: int = 0

    @property
    def ratio(self) -> float | None:
        """The model's figure / 2GAD's (both person-months)."""
        return self.person_months / self.two_gad_person_months if self.two_gad_person_months else None

    @property
    def partial(self) -> tuple[FteHalf, ...]:
        return tuple(h for h in self.halves if h.partial)


def fte_person_months(active_days: int, threshold: int = FTE_THRESHOLD) -> float:
    """One person's effort in one half-year: min(6, 6 d / t) person-months (METRIC.md, "A second model")."""
    return min(float(FTE_MONTHS_PER_HALF), FTE_MONTHS_PER_HALF * active_days / threshold)


@dataclass(frozen=True)
class Report:
    """The answer to a Query: what every renderer (Block Kit, text, JSON, CSV) shows."""

    repos: tuple[str, ...]
    since: date | None
    until: date | None
    scope_words: str
    totals: Totals
    by: str | None = None
    rows: tuple[Row, ...] = ()
    trend_bucket: str = "month"
    trend: tuple[Row, ...] = ()  # always a period series, for sparklines
    skipped: int = 0  # commits left out for unparseable or impossible author dates
    data_as_of: datetime | None = None  # the oldest last successful sync among the repos
    notes: tuple[str, ...] = ()
    cocomo: Cocomo | None = None
    paths: tuple[str, ...] = ()  # the query's `path:` prefixes, when it had some
    exclude_paths: tuple[str, ...] = ()  # its `path:!` prefixes
    data_ends: date | None = None  # the newest commit's day in these repositories (all history, in scope)
    range: str | None = None  # `range:A..B` as typed, without the key: "v1.0..v2.0" or "..v1.0"
    first_day: date | None = None  # the first and last author day among the counted records
    last_day: date | None = None
    # Every other filter that shaped the figure, as typed, so that every face can state it.
    asked: tuple[str, ...] = ()  # the names typed (a project stays its name; `repos` has its members)
    scope: str = "default"  # "default", "refs:all" or "branch:NAME" (a range replaces it)
    authors: tuple[str, ...] = ()  # `author:` globs
    orgs: tuple[str, ...] = ()  # `org:` globs
    mailmap: bool = True
    bots: bool = False
    more_rows: int = 0  # breakdown rows `top:N` left out ("and 2,541 more")
    hint: str | None = None  # for a zero that is likely a mistake: one sentence on what was probably meant
    # METRIC.md rule 7: whether co-authors were counted, how many counted commits name any, and the active
    # days their records add (with coauthors:on) or would add (without) to the authors' own.
    coauthors: bool = False
    coauthor_commits: int = 0
    coauthor_active_days: int = 0
    # `range:A..B`: the author days of the commits A and B name (A's None for `..B`), and how many counted
    # commits are older than A's (merged in from long-lived branches: why the commits span longer).
    range_start_day: date | None = None
    range_end_day: date | None = None
    range_older_commits: int = 0
    # by:release: the `tags:` glob typed (None: tags that look like versions), and `prereleases:on`
    release_tags: str | None = None
    prereleases: bool = False
    release_series: bool = False  # `releases:series`: rows are X.Y series
    typical: TypicalRelease | None = None  # by:release: the median release and its quartiles
    fte: Fte | None = None  # `vs:fte`
    calibrated: "Calibrated | None" = None  # `calibrated:NAME`: the figure times a saved calibration's ratio

    @property
    def two_gad(self) -> int:
        return self.totals.two_gad

    @property
    def span_months(self) -> float | None:
        """The calendar span of the counted records in months (first to last author day, both included)."""
        return span_months(self.first_day, self.last_day)


DAYS_PER_MONTH = 365.2425 / 12  # a calendar month on average, for spans ("over 14.2 months")


def span_months(first: date | None, last: date | None) -> float | None:
    """Months from `first` to `last`, both days included: 2024-01-01..2024-01-31 is 1.0 month."""
    if first is None or last is None:
        return None
    return ((last - first).days + 1) / DAYS_PER_MONTH


def table_order(row: Row) -> tuple:
    """The order of a by:person, by:org or by:repo table: most active days, then most commits, then by name."""
    return (-row.totals.person_days, -row.totals.commits, row.key)


def person_months(person_days: float) -> float:
    return person_days / DAYS_PER_PERSON_MONTH


def person_years(person_days: float) -> float:
    return person_days / DAYS_PER_PERSON_YEAR


def is_bot(name: str, email: str, patterns: Iterable[str] = ()) -> bool:
    """METRIC.md rule 3: `[bot]` (or an operator pattern) in the name or e-mail, case-insensitively."""
    haystack = (name + "\x00" + email).lower()
    return any(p.lower() in haystack for p in (BUILTIN_BOT_PATTERN, *patterns) if p)


# METRIC.md rule 7: co-authors that are programs, not people. Substrings of "name\0e-mail", matched
# case-insensitively like the bot patterns (`[bot]` already covers *[bot]@users.noreply.github.com); the
# operator adds more with GAD_AUTOMATED_COAUTHORS. docs/metric.md lists them.
AUTOMATED_COAUTHORS = (
    "noreply@anthropic.com",  # Claude (Claude Code's trailer)
    "+copilot@users.noreply.github.com",  # GitHub Copilot's coding agent
    "copilot@github.com",
    "cursoragent@cursor.com",  # Cursor's agent
    "noreply@aider.chat",  # aider
    "noreply@openai.com",  # OpenAI Codex
)


def is_automated_coauthor(name: str, email: str, patterns: Iterable[str] = ()) -> bool:
    """Rule 7's automated co-authors: the list above or an operator pattern in the name or e-mail (rule 3's
    bots are left out besides, by is_bot)."""
    haystack = (name + "\x00" + email).lower()
    return any(p.lower() in haystack for p in (*AUTOMATED_COAUTHORS, *patterns) if p)


def author_matches(person: str, globs: Iterable[str]) -> bool:
    """`author:GLOB` filter: any glob matching the person (already lower-cased)."""
    globs = tuple(globs)
    return not globs or any(fnmatch.fnmatchcase(person, person_key(g)) for g in globs)


def totals(records: Iterable[Record]) -> Totals:
    """GAD, developers and commits over records that already passed every filter (rules 5, 6)."""
    pairs, people, commits = set(), set(), set()
    for r in records:
        pairs.add((r.person, r.day))
        people.add(r.person)
        commits.add(r.commit)
    return Totals(person_days=len(pairs), developers=len(people), commits=len(commits))


def select(records: Iterable[Record], since: date | None = None, until: date | None = None,
           authors: Iterable[str] = ()) -> list[Record]:
    """Rule 4: whole-day period bounds (inclusive) and author globs."""
    authors = tuple(authors)
    return [r for r in records
            if (since is None or r.day >= since) and (until is None or r.day <= until)
            and author_matches(r.person, authors)]


@dataclass(frozen=True)
class DomainRow:
    """`gad-bot orgs`: one e-mail domain seen among the counted people, with its organization."""

    domain: str  # after the mailmap, lower-cased ("(none)" for an address without @)
    registrable: str  # by the Public Suffix List; "" when there is none
    org: str
    how: str  # "domain rule", "webmail", "no domain", "public suffix list"
    person_days: int
    developers: int
    commits: int
    people_by_email_rule: int = 0  # of its people, those an e-mail rule assigns elsewhere (or by date)

    @property
    def matched(self) -> bool:
        """Whether the operator's file decides this domain (unmatched ones are listed first)."""
        return self.how == "domain rule"

    @property
    def two_gad(self) -> int:
        return 2 * self.person_days


@dataclass(frozen=True)
class CompareRow:
    """One item of `compare`: its figures over the shared tokens."""

    item: str  # as typed: a repository, a project, or NAME:PATH
    repos: tuple[str, ...]
    totals: Totals
    first_day: date | None  # first and last author day among its counted records
    last_day: date | None
    active_months: int  # calendar months with at least one counted record
    busiest_month: str | None  # "2024-03"
    busiest_person_days: int
    cocomo: Cocomo | None = None
    range: str | None = None  # the item's `range:A..B` ("v1.0..v2.0"), shared or its own; None for its scope
    hint: str | None = None  # for a zero that is likely a mistake: the item's report's one sentence (Report.hint)
    range_start_day: date | None = None  # the author days of the commits the range's ends name
    range_end_day: date | None = None

    @classmethod
    def from_report(cls, item: str, report: "Report") -> "CompareRow":
        """Boil a by:month report of the item down to one row."""
        months = [r for r in report.rows if r.totals.person_days]
        busiest = max(months, key=lambda r: r.totals.person_days, default=None)  # first of equals: the earliest
        return cls(item, report.repos, report.totals, report.first_day, report.last_day, len(months),
                   busiest.key if busiest else None, busiest.totals.person_days if busiest else 0, report.cocomo,
                   report.range, report.hint, report.range_start_day, report.range_end_day)

    @property
    def range_interval_days(self) -> int | None:
        """Days from the commit of the range's start to its end's (None for `..B` or no range)."""
        return ((self.range_end_day - self.range_start_day).days
                if self.range_start_day and self.range_end_day else None)

    @property
    def two_gad(self) -> int:
        return self.totals.two_gad

    @property
    def two_gad_person_months(self) -> float:
        return self.totals.two_gad / DAYS_PER_PERSON_MONTH

    @property
    def span_months(self) -> float | None:
        return span_months(self.first_day, self.last_day)

    @property
    def mean_two_gad_per_active_month(self) -> float | None:
        return self.totals.two_gad / self.active_months if self.active_months else None

    @property
    def busiest_two_gad(self) -> int:
        return 2 * self.busiest_person_days


@dataclass(frozen=True)
class CompareReport:
    """The answer to `compare`: one row per item, in the order typed, over the same tokens."""

    rows: tuple[CompareRow, ...]
    since: date | None
    until: date | None
    scope_words: str
    range: str | None = None
    vs_cocomo: bool = False
    data_as_of: datetime | None = None
    notes: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()  # every shared filter token besides the period (`path:src`, `bots:on`, ...)
