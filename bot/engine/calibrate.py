"""`gad-bot calibrate`: 2GAD beside a team's own timesheet (issue 19 part 3).

    calibrate(engine, timesheet, query, today) -> Calibration

The study behind 2GAD found it within about 10 % of timesheet hours. This checks that claim on the
operator's own team: per month and in total, the person-days the timesheet logs (hours / a working
day's hours, 8 unless told otherwise) beside the 2GAD of the same people over the same span of days.

- People are matched as the metric identifies them: a timesheet e-mail is looked up among the
  repositories' raw author e-mails and mapped through their mailmap (so an old address the mailmap
  folds into a new one finds the person), then lower-cased; a name is matched, without case, against
  the authors' names as commits write them and as the mailmap names them. A name two committers
  share is ambiguous and is listed apart.
- Compared are the people the timesheet logs who have at least one active day in the span. Those
  with none (managers, designers, a name that matches nobody) and the committers the timesheet
  does not list are listed apart with their figures, never dropped silently.
- The span is the timesheet's first to last day, narrowed by the query's since:/until:; the other
  tokens (branch:, path:, mailmap:off, bots:on, ...) shape the 2GAD side as in any report.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta

from ..errors import MirrorError, QueryError
from ..metric import person_key
from ..store.mirrors.mailmap import Mailmap
from ..store.mirrors.mirror import Mirror
from .query import Query
from .periods import bucket_start, next_bucket
from .timesheets import Timesheet, fold

HOURS_PER_DAY = 8.0  # a logged person-day, as COCOMO's person-month counts them (METRIC.md, Units)
WITHIN_PERCENT = 10.0  # the study's claim: 2GAD within 10 % of timesheet effort
MAX_MONTHS = 120  # a report per month: a file dated 1970 to 2100 must not ask for 1,572 of them


@dataclass(frozen=True)
class CalibrationRow:
    """One month (or the total): logged person-days beside 2GAD over the same people."""

    period: str  # "2024-03", or "TOTAL"
    first_day: date
    last_day: date
    logged_person_days: float
    two_gad: int
    people: int  # compared people who logged hours or committed in this period

    @property
    def ratio(self) -> float | None:
        """2GAD / logged person-days; None when nothing was logged."""
        return self.two_gad / self.logged_person_days if self.logged_person_days else None

    @property
    def error_percent(self) -> float | None:
        """How far 2GAD is from the logged effort, in % of it (negative: 2GAD reads low)."""
        ratio = self.ratio
        return None if ratio is None else (ratio - 1.0) * 100.0

    @property
    def within(self) -> bool | None:
        error = self.error_percent
        return None if error is None else abs(error) <= WITHIN_PERCENT + 1e-9


@dataclass(frozen=True)
class PersonApart:
    """Someone on one side only: logged hours but no active day, or active days but no hours."""

    person: str  # e-mail (lower-cased, mailmapped) or the name as the timesheet writes it
    logged_person_days: float
    two_gad: int
    why: str  # one phrase: "no commit in the span", "matches no committer", "not in the timesheet", ...


@dataclass(frozen=True)
class Calibration:
    repos: tuple[str, ...]
    scope_words: str
    export: str  # the timesheet export recognised
    hours_per_day: float
    first_day: date
    last_day: date
    months: tuple[CalibrationRow, ...]
    total: CalibrationRow
    compared: tuple[str, ...]  # the people on both sides
    timesheet_only: tuple[PersonApart, ...]
    commits_only: tuple[PersonApart, ...]
    within_percent: float = WITHIN_PERCENT


@dataclass(frozen=True)
class Identities:
    """How the repositories' authors are found from what a timesheet writes."""

    by_email: dict[str, frozenset[str]]  # lower-cased raw e-mail -> the persons it maps to
    by_name: dict[str, frozenset[str]]  # case-folded raw name -> the persons its authors map to

    def match(self, person: str, is_email: bool) -> frozenset[str]:
        if is_email:
            return self.by_email.get(person_key(person), frozenset({person_key(person)}))
        return self.by_name.get(fold(person), frozenset())


def _mailmap(repo) -> Mailmap | None:
    """The repository's mailmap, for the canonical names it gives; None when the mirror cannot be read."""
    try:
        return Mailmap(Mirror(repo.mirror_path).mailmap_blob()[1])
    except MirrorError:
        return None  # names are then matched as the commits write them; e-mails are unaffected


def identities(engine, repos, query: Query) -> Identities:
    """Every raw author of the repositories, mapped as the query maps them (mailmap or not, bots or not).

    A name is known as the commits write it and, with the mailmap, as the mailmap names the person."""
    by_email: dict[str, set[str]] = {}
    by_name: dict[str, set[str]] = {}
    pending: list[tuple[str, str, int]] = []
    for repo in repos:
        mailmap = _mailmap(repo) if query.mailmap else None
        people = {row[0]: row for row in engine.index.repo_author_map(repo.id)}
        for author_id, name, email in engine.index.repo_author_identities(repo.id):
            row = people.get(author_id)
            if row is None:
                continue
            _, person_mm, person_raw, bot_mm, bot_raw = row[:5]
            if (bot_mm if query.mailmap else bot_raw) and not query.bots:
                continue
            person_id = person_mm if query.mailmap else person_raw
            pending.append((name, email, person_id))
            if mailmap is not None:
                pending.append((mailmap.resolve(name, email)[0], email, person_id))
    emails = engine.index.people_matching({p for _, _, p in pending})
    for name, email, person_id in pending:
        person = emails.get(person_id)
        if person is None:
            continue
        by_email.setdefault(person_key(email), set()).add(person)
        by_email.setdefault(person, set()).add(person)
        by_name.setdefault(fold(name), set()).add(person)
    return Identities({k: frozenset(v) for k, v in by_email.items()},
                      {k: frozenset(v) for k, v in by_name.items()})


def _not_listed_words(person: str, alike: list[str] | None, names: dict[str, frozenset[str]] | None) -> str:
    """Why a committer is not compared: not in the timesheet, and who there they may be."""
    if alike:
        return (f"not in the timesheet; the same person as {' and '.join(alike)}, whom it lists? map both addresses "
                "to one in .mailmap")
    if names:
        name, named = min(names.items())
        return (f"not in the timesheet by e-mail; it logs {name}, the name of this committer and of "
                f"{' and '.join(sorted(named - {person}))}: log e-mails to tell them apart")
    return "not in the timesheet"


def _look_alikes(known: Identities, listed: set[str]) -> dict[str, list[str]]:
    """For each committer, the people the timesheet lists who are likely the same person under another address:
    the same part before the @ (djm@openbsd.org, djm@mindrot.org: upstream's address beside one's own) or a
    name their commits share. Only said, never merged: the operator decides, in .mailmap."""
    by_local: dict[str, set[str]] = {}
    for person in listed:
        by_local.setdefault(person.partition("@")[0], set()).add(person)
    alike: dict[str, set[str]] = {}
    for persons in known.by_name.values():
        named = persons & listed
        for person in persons - listed if named else ():
            alike.setdefault(person, set()).update(named)
    for persons in known.by_email.values():
        for person in persons - listed:
            alike.setdefault(person, set()).update(by_local.get(person.partition("@")[0], ()))
    return {person: sorted(people) for person, people in alike.items() if people}


def _months(first: date, last: date) -> list[tuple[date, date]]:
    """Calendar months from `first` to `last`, the first and last cut to them."""
    spans = []
    start = first
    while start <= last:
        following = next_bucket(bucket_start(start, "month"), "month")
        spans.append((start, min(last, following - timedelta(days=1))))
        start = following
    return spans


def _active_days(engine, query: Query, first: date, last: date, today: date) -> dict[str, int]:
    """Each person's active days from `first` to `last` under the query's other tokens (a by:person report)."""
    report = engine.report(dataclasses.replace(query, since=first, until=last, by="person", top=None), today)
    return {row.key: row.totals.person_days for row in report.rows}


@dataclass(frozen=True)
class Span:
    """The days compared: the timesheet's first to last day, narrowed by since:/until:, in calendar months."""

    first: date
    last: date
    months: tuple[tuple[date, date], ...]


def span_of(timesheet: Timesheet, query: Query, hours_per_day: float = HOURS_PER_DAY) -> Span:
    """The span to compare, checked before anything is read or written (one sentence when it cannot be)."""
    if not 1 <= hours_per_day <= 24:
        raise QueryError(f"--hours-per-day {hours_per_day:g} is not a working day; give the hours a logged "
                         "person-day holds, between 1 and 24 (8 by default).")
    first = max(timesheet.first_day, query.since) if query.since else timesheet.first_day
    last = min(timesheet.last_day, query.until) if query.until else timesheet.last_day
    if first > last:
        raise QueryError(f"the timesheet logs {timesheet.first_day.isoformat()} to {timesheet.last_day.isoformat()}, "
                         "outside the since:/until: asked; leave them out or choose days the timesheet covers.")
    months = _months(first, last)
    if len(months) > MAX_MONTHS:
        raise QueryError(f"the timesheet spans {len(months):,} months ({first.isoformat()} to {last.isoformat()}); "
                         f"calibrate at most {MAX_MONTHS} at a time, e.g. with since:{last.year - 1} "
                         f"until:{last.year}.")
    return Span(first, last, tuple(months))


def calibrate(engine, timesheet: Timesheet, query: Query, today: date,
              hours_per_day: float = HOURS_PER_DAY) -> Calibration:
    """The timesheet's logged person-days beside 2GAD, per month and in total (see the module's doc)."""
    span = span_of(timesheet, query, hours_per_day)
    first, last, months = span.first, span.last, span.months
    repos = engine.resolve(query.repos)
    known = identities(engine, repos, query)
    # who each timesheet person is among the committers; a name two committers share is not guessed
    logged: dict[str, dict[date, float]] = {}  # person -> day -> person-days
    apart: dict[str, PersonApart] = {}
    shared_names: dict[str, dict[str, frozenset[str]]] = {}  # committer -> a name the sheet logs -> all it names
    for entry in timesheet.days:
        if not first <= entry.day <= last:
            continue
        matches = known.match(entry.person, entry.is_email)
        person_days = entry.hours / hours_per_day
        if len(matches) != 1:
            people = " and ".join(sorted(matches))
            for person in matches if not entry.is_email else ():
                shared_names.setdefault(person, {})[entry.person] = matches
            why = ("matches no committer by name" if not matches else
                   f"the mailmap gives this e-mail to {people}" if entry.is_email else
                   f"is the name of {people}; log e-mails to tell them apart")
            previous = apart.get(entry.person)
            apart[entry.person] = PersonApart(entry.person, (previous.logged_person_days if previous else 0.0)
                                              + person_days, 0, why)
            continue
        person = next(iter(matches))
        days = logged.setdefault(person, {})
        days[entry.day] = days.get(entry.day, 0.0) + person_days
    monthly = [_active_days(engine, query, start, end, today) for start, end in months]
    # The span's active days are the months' added up, with no report of their own: a person-day is one person
    # on one day, and _months cuts the span into calendar months that share no day and leave none out, so each
    # person-day falls in exactly one month. (Counter.update adds, keeping a person whose count is 0.)
    overall: Counter[str] = Counter()
    for active in monthly:
        overall.update(active)
    compared = sorted(p for p in logged if overall.get(p, 0) > 0)
    for person in sorted(set(logged) - set(compared)):
        why = "no commit in the span" if person in known.by_email else "is no committer's e-mail here"
        apart[person] = PersonApart(person, sum(logged[person].values()), 0, why)
    alike = _look_alikes(known, set(logged))
    commits_only = sorted((PersonApart(p, 0.0, 2 * n, _not_listed_words(p, alike.get(p), shared_names.get(p)))
                           for p, n in overall.items() if p not in logged),
                          key=lambda a: (-a.two_gad, a.person))
    chosen = set(compared)
    rows = []
    for (start, end), active in zip(months, monthly):
        logged_days = sum(d for p in compared for day, d in logged[p].items() if start <= day <= end)
        two_gad = 2 * sum(n for p, n in active.items() if p in chosen)
        people = sum(1 for p in compared if active.get(p) or any(start <= day <= end for day in logged[p]))
        rows.append(CalibrationRow(start.strftime("%Y-%m"), start, end, round(logged_days, 6), two_gad, people))
    total = CalibrationRow("TOTAL", first, last, round(sum(sum(logged[p].values()) for p in compared), 6),
                           2 * sum(overall[p] for p in compared), len(compared))
    return Calibration(repos=tuple(r.name for r in repos), scope_words=query.words(), export=timesheet.export,
                       hours_per_day=hours_per_day, first_day=first, last_day=last, months=tuple(rows),
                       total=total, compared=tuple(compared),
                       timesheet_only=tuple(sorted(apart.values(), key=lambda a: (-a.logged_person_days, a.person))),
                       commits_only=tuple(commits_only))
