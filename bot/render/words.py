"""Wording every face shares: periods, figures with units, footnotes, sparklines.

Plain strings only; the Block Kit and terminal renderers escape or style them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, timezone

from ..errors import command
from ..metric import DAYS_PER_PERSON_MONTH, DAYS_PER_PERSON_YEAR, UNITS_NOTE, Report, Totals, table_order

SPARK_CHARS = "▁▂▃▄▅▆▇█"
SPARK_EMPTY = "·"  # a bucket without a single commit: never the lowest bar, which a quiet bucket draws

BUCKET_WORDS = {"week": ("weekly", "week", "weeks"), "month": ("monthly", "month", "months"),
                "quarter": ("quarterly", "quarter", "quarters"), "year": ("yearly", "year", "years"),
                "day": ("daily", "day", "days")}

# What `path:` does with merges; keep in step with the engine's tree-diff rule.
MERGES_NOTE = ("with path:, merge commits are not counted: they integrate work rather than author it "
               "(the commits `git log --no-merges --full-history -- PATH` lists)")
REPO_OVERLAP_NOTE = ("repository rows can add up to more than the total: a person active in several "
                     "repositories on one day is one person-day in the total")

ORG_NOTE = ("organizations: the registrable domain of each person's e-mail (Public Suffix List), webmail and "
            "personal addresses as independent, unless the operator's rules say otherwise; each person-day counts "
            "for one organization, so they add up to the total, and someone who changed organization counts as "
            "a developer in each")
COMPARE_NOTE = ("2GAD counts the effort that reached git in each slice: the days its people committed, doubled. "
                "COCOMO estimates effort from the size of the code at the head, whoever wrote it and whenever. "
                "They answer different questions and are known to disagree: in the seed study 2GAD came out lower "
                "than COCOMO for the largest projects and higher for small ones, so compare items of a similar size, "
                "and read a ratio far from 1 as a property of the method as much as of the project.")

# What the estimation answers look like, for `help`: real answers on the README's demo history
# (benchmarks/synth.py --commits 20000; tests/test_estimation_faces.py checks they still are).
SAMPLE_ANSWERS_TITLE = "What estimation answers look like on the README's demo history (benchmarks/synth.py)"
SAMPLE_ANSWERS = (
    ("demo range:v2.0..v3.0", "demo: 2GAD 1,706 person-days (7.5 person-years), range v2.0..v3.0: v2.0 (2011-12-28) "
                              "to v3.0 (2012-12-31), 12.1 months apart; its commits span 18.4 months because 33 older "
                              "commits were merged in"),
    ("demo since:2024 by:org", "1. `example.com` — 2GAD 1,488 · 43.0 % · 179 developers · 784 commits"),
    ("compare demo:drivers/gpu demo:net range:v3.0..v4.0",
     "demo:drivers/gpu 2GAD 250 (13.2 person-months), 47 developers · demo:net 2GAD 424 (22.3 person-months), "
     "63 developers"),
)


def untracked_examples_words() -> str:
    """Under examples that name made-up repositories (nothing is tracked yet): how to track one."""
    return f"Nothing is tracked yet, so these examples name made-up repositories; {command('track URL')} tracks one."


def number(n: int) -> str:
    """An integer with thousands separators: 12345 -> '12,345'."""
    return f"{n:,}"


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 commit', '3 commits' (with thousands separators)."""
    return f"{number(n)} {one if n == 1 else (many or one + 's')}"


def period_words(since: date | None, until: date | None) -> str:
    """'since 2024-01-01', 'until 2024-06-30', '2024-01-01 to 2024-06-30', 'on 2024-03-05' or 'all history'."""
    if since is None and until is None:
        return "all history"
    if until is None:
        return f"since {since.isoformat()}"
    if since is None:
        return f"until {until.isoformat()}"
    if since == until:
        return f"on {since.isoformat()}"
    return f"{since.isoformat()} to {until.isoformat()}"


def converted_words(person_days: int) -> str | None:
    """The figure in COCOMO's larger units, one decimal: 38 -> '2.0 person-months', 456 -> '2.0 person-years'."""
    if person_days >= DAYS_PER_PERSON_YEAR:
        return f"{person_days / DAYS_PER_PERSON_YEAR:,.1f} person-years"
    if person_days >= DAYS_PER_PERSON_MONTH:
        return f"{person_days / DAYS_PER_PERSON_MONTH:,.1f} person-months"
    return None


def percent(part: int, whole: int) -> str:
    """'66.7 %' (one decimal), '0.0 %' for nothing; '-' when the whole is nothing."""
    return f"{100 * part / whole:.1f} %" if whole else "-"


def months_words(months: float | None) -> str:
    """'14.2 months', '1 month'."""
    if months is None:
        return "-"
    return "1 month" if round(months, 1) == 1.0 else f"{months:,.1f} months"


def span_words(first: date | None, last: date | None) -> str:
    """The calendar span of counted records: '2023-01-02 to 2024-03-01 (14.0 months)', or 'no commits'."""
    if first is None or last is None:
        return "no commits"
    if first == last:
        return f"{first.isoformat()} (1 day)"
    return f"{first.isoformat()} to {last.isoformat()} ({span_length(first, last)})"


def span_length(first: date | None, last: date | None) -> str:
    """How long from the first to the last day, both included: '1 day', '45 days', '14.2 months'."""
    from ..metric import span_months

    if first is None or last is None:
        return "-"
    days = (last - first).days + 1
    return plural(days, "day") if days < 61 else months_words(span_months(first, last))


def asked_period_words(report: Report) -> str:
    """period_words of what was asked, except that a by:release table cut to its newest releases counts
    those, not all history: 'the newest 100 releases', 'the newest 3 releases, since 2020-01-01'."""
    period = period_words(report.since, report.until)
    if report.by != "release" or not report.more_rows:
        return period
    newest = f"the newest {plural(len(report.rows), 'release')}"
    return newest if report.since is None and report.until is None else f"{newest}, {period}"


def report_period_words(report: Report) -> str:
    """The period of a report: asked_period_words, and without since: or until: the first and last day
    counted: 'all history (2019-03-04 to 2026-11-30)'."""
    period = asked_period_words(report)
    if report.since is None and report.until is None and report.first_day and report.last_day:
        days = (report.first_day.isoformat() if report.first_day == report.last_day
                else f"{report.first_day.isoformat()} to {report.last_day.isoformat()}")
        return f"{period} ({days})"
    return period


def filter_tokens(report: Report) -> list[str]:
    """Every filter besides the period and range that shaped the figure, as the tokens that ask for it:
    ['branch:main', 'path:src/net', 'path:!docs', 'author:*@intel.com', 'org:intel*', 'mailmap:off', 'bots:on'].

    Empty for the default question (all branches and tags, mailmap applied, bots left out)."""
    tokens = [] if report.scope == "default" or report.range else [report.scope]
    tokens += [f"path:{p}" for p in report.paths] + [f"path:!{p}" for p in report.exclude_paths]
    tokens += [f"author:{a}" for a in report.authors] + [f"org:{o}" for o in report.orgs]
    if not report.mailmap:
        tokens.append("mailmap:off")
    if report.bots:
        tokens.append("bots:on")
    if report.coauthors:
        tokens.append("coauthors:on")
    if report.release_tags:
        tokens.append(f"tags:{report.release_tags}")
    if report.prereleases:
        tokens.append("prereleases:on")
    if report.release_series:
        tokens.append("releases:series")
    return tokens


def coauthor_words(report: Report) -> str | None:
    """METRIC.md rule 7 in a sentence, when the scope's commits name co-authors:
    '312 commits name co-authors; coauthors:on adds 376 person-days (188 active days).' (off), or
    'Co-authors counted (coauthors:on): 312 commits name co-authors, adding 376 person-days (188 active days).'"""
    if not isinstance(report, Report) or not report.coauthor_commits:
        return None  # compare states coauthors:on in its scope words ("co-authors counted")
    named = f"{plural(report.coauthor_commits, 'commit')} {'names' if report.coauthor_commits == 1 else 'name'} co-authors"
    added = f"{plural(2 * report.coauthor_active_days, 'person-day')} ({plural(report.coauthor_active_days, 'active day')})"
    if report.coauthors:
        return (f"Co-authors counted (coauthors:on): {named}, adding {added} to the authors' own; automated "
                "co-authors and bots left out.")
    return f"{named[0].upper()}{named[1:]}; coauthors:on adds {added}."


# Tokens that widen the count (more refs, more authors, more records) or change who is who: "only" would read
# as the opposite of what they do.
WIDENING = ("refs:all", "bots:on", "coauthors:on", "prereleases:on", "mailmap:off", "releases:series")


def git_log_words(span: str) -> str:
    """What git lists for a range as `range:` takes it: 'what git log v1.0..v2.0 lists', and for `..B` (which
    git reads as `HEAD..B`, not as everything up to B) 'what git log B lists'."""
    start, _, end = span.partition("..")
    return f"what git log {span if start else end} lists"


def filters_words(report: Report) -> str | None:
    """'only path:src/net and org:intel*, with bots:on' (narrowing tokens after "only", widening ones after
    "with"), or None without any."""
    tokens = filter_tokens(report)
    if not tokens:
        return None
    narrowing = [t for t in tokens if t not in WIDENING]
    widening = [t for t in tokens if t in WIDENING]
    joined = lambda items: items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]  # noqa: E731
    parts = ([f"only {joined(narrowing)}"] if narrowing else []) + ([f"with {joined(widening)}"] if widening else [])
    return ", ".join(parts)


def subject_words(report: Report, *, limit: int = 5) -> str:
    """What the report is about: 'web and api', or a project by its name, 'media (openssh and gstreamer)'."""
    members = repos_words(report.repos, limit=limit)
    if not report.asked or set(report.asked) == set(report.repos):
        return members
    return f"{repos_words(report.asked, limit=limit)} ({members})"


def headline_words(report: Report, *, limit: int = 5) -> str:
    """The one line that states the figure and everything that shaped it:
    'media (openssh and gstreamer): 2GAD 602 person-days (2.6 person-years), since 2024-01-01, only path:src and org:intel*'.
    """
    ranged = range_headline(report)
    parts = [f"{subject_words(report, limit=limit)}: {figure_words(report.totals)}"]
    if ranged:
        parts.append(ranged + ("" if report.since is None and report.until is None
                               else f" ({period_words(report.since, report.until)})"))
    else:
        parts.append(report_period_words(report))
    filters = filters_words(report)
    if filters:
        parts.append(filters)
    return ", ".join(parts)


def range_headline(report: Report) -> str | None:
    """'range v1.0..v2.0, over 14.0 months' for a `range:` report, else None."""
    if not report.range:
        return None
    text = f"range {report.range}"
    ends = range_ends_words(report)
    if ends:
        text += f": {ends}"
    if report.first_day and report.last_day:
        span = span_length(report.first_day, report.last_day)
        older = report.range_older_commits
        # the interval (between the ends' commits) and the span (of the commits counted) are different things:
        # "8.8 months, over 8.8 months" read as one figure said twice
        text += (f"; its commits span {span} because {plural(older, 'older commit')} "
                 f"{'was' if older == 1 else 'were'} merged in" if older else f"; its commits span {span}")
    return text


def range_ends_words(report: Report) -> str | None:
    """'v1.0 (2022-09-01) to v2.0 (2022-12-01), 3.0 months' (the days of the commits the ends name, and the
    interval between them), 'up to v1.0 (2022-09-01)' for `..B`; None without a range."""
    if not report.range or report.range_end_day is None:
        return None
    start, _, end = report.range.partition("..")
    if not start or report.range_start_day is None:
        return f"up to {end} ({report.range_end_day.isoformat()})"
    return (f"{start} ({report.range_start_day.isoformat()}) to {end} ({report.range_end_day.isoformat()}), "
            f"{interval_words(report.range_start_day, report.range_end_day)} apart")


def interval_words(start: date, end: date) -> str:
    """From one day to another (the first not included): '12 days', '3.0 months', '0 days'."""
    from ..metric import DAYS_PER_MONTH

    days = (end - start).days
    return plural(days, "day") if abs(days) < 61 else months_words(days / DAYS_PER_MONTH)


def days_words(person_days: int) -> str:
    """'412 person-days (21.7 person-months)'; below 19 person-days, person-days alone."""
    base = plural(person_days, "person-day")
    larger = converted_words(person_days)
    return f"{base} ({larger})" if larger else base


def figure_words(totals: Totals) -> str:
    """The headline figure: '2GAD 412 person-days (21.7 person-months)'."""
    return f"2GAD {days_words(totals.two_gad)}"


def is_converted(report: Report) -> bool:
    """Whether a figure in person-months/years (or COCOMO, or the FTE model) appears, so the units note is due."""
    return (report.cocomo is not None or report.fte is not None
            or converted_words(report.two_gad) is not None)


def _pm(value: float) -> str:
    return f"{value:,.1f} person-month" + ("" if round(value, 1) == 1.0 else "s")


def fte_words(report: Report) -> str | None:
    """'FTE model (Robles et al., t = 12): 14.5 person-months beside 2GAD's 10.2 (ratio 1.42); partial half-years:
    2024-H1 (from 2024-03-01)', or None without vs:fte."""
    f = report.fte
    if f is None:
        return None
    ratio = f" (ratio {f.ratio:.2f})" if f.ratio is not None else ""
    text = (f"FTE model (Robles et al., t = {f.threshold}): {_pm(f.person_months)} beside 2GAD's "
            f"{f.two_gad_person_months:,.1f}{ratio}, over {plural(len(f.halves), 'half-year')}")
    partial = [f"{h.key} ({h.first_day.isoformat()} to {h.last_day.isoformat()})" for h in f.partial]
    if partial:
        text += f"; partial: {', '.join(partial)}"
    return text


def fte_note(report: Report) -> str | None:
    """Where both models are shown: how they differ, and for how many people of this figure."""
    f = report.fte
    if f is None:
        return None
    day = 6 / f.threshold
    return (f"The FTE model counts, per person and calendar half-year, min(6, 6 x active days / {f.threshold}) "
            f"person-months: it gives occasional contributors more than 2GAD (one active day is {day:.2g} "
            f"person-months, {day * 19:.3g} person-days, against 2GAD's 2) and full-timers less (it stops at 6 "
            f"person-months a half-year from {f.threshold} active days on); here {plural(f.people_above, 'person', 'people')} "
            f"got more from it and {plural(f.people_below, 'person', 'people')} less. A half-year cut by since:, until: or "
            "today is counted over its days in the period (partial).")


def typical_words(report: Report) -> str | None:
    """'Typical release (median of 5; the first, everything before it, left out): 2GAD 12 person-days (P25-P75:
    8-20), 1.9 months apart (P25-P75: 1.0-2.5 months)', or None."""
    typical = report.typical
    if typical is None:
        return None
    q = typical.two_gad
    what = "series" if typical.series else "release"
    count = plural(typical.releases, what, "series" if typical.series else "releases")
    first = "; the first, everything before it, left out" if typical.left_out_first else ""
    text = (f"Typical {what} (median of {count}{first}): 2GAD {_figure(q.median)} person-days "
            f"(P25-P75: {_figure(q.p25)}-{_figure(q.p75)})")
    i = typical.interval_days
    if i is not None:
        text += f", {_days(i.median)} after the one before (P25-P75: {_days_between(i.p25, i.p75, i.median)})"
    return text


def _days_between(low: float, high: float, median: float) -> str:
    """'31-54 days', '1.2-3.0 months': both ends in the median's unit."""
    from ..metric import DAYS_PER_MONTH

    if abs(median) < 61:
        return f"{_figure(low)}-{_figure(high)} days"
    return f"{low / DAYS_PER_MONTH:,.1f}-{high / DAYS_PER_MONTH:,.1f} months"


def _figure(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _days(days: float) -> str:
    from ..metric import DAYS_PER_MONTH

    return f"{_figure(days)} days" if abs(days) < 61 else months_words(days / DAYS_PER_MONTH)


def calibrated_words(report: Report) -> str | None:
    """'Calibrated by team (logged / 2GAD = 1.13 over 6 months, 2024-01-01 to 2024-06-30): 452 person-days
    (band 400-520, the months' 25th to 75th percentile)', or None."""
    c = report.calibrated
    if c is None:
        return None
    low, high = c.band
    return (f"Calibrated by {c.name} (logged person-days / 2GAD = {c.ratio:.2f}, measured over {plural(c.months, 'month')}, "
            f"{c.first_day.isoformat()} to {c.last_day.isoformat()}): {c.person_days:,.0f} person-days "
            f"(band {low:,.0f}-{high:,.0f}, from the months' 25th to 75th percentile)")


def cocomo_ksloc_words(report: Report) -> str | None:
    """'2GAD 3.2 person-days per thousand source lines (at the head counted)' beside vs:cocomo."""
    c = report.cocomo
    if c is None or c.two_gad_per_ksloc is None:
        return None
    return (f"2GAD {c.two_gad_per_ksloc:,.2f} person-days per thousand source lines ({number(c.sloc)} SLOC at the "
            "head counted): multiply by a planned size in KSLOC to scale it")


def uses_paths(report: Report) -> bool:
    """Whether the query had `path:` filters."""
    return bool(report.paths or report.exclude_paths)


def skipped_words(skipped: int) -> str | None:
    """'3 commits with impossible author dates left out', or None when nothing was skipped."""
    if skipped <= 0:
        return None
    if skipped == 1:
        return "1 commit with an impossible author date left out"
    return f"{number(skipped)} commits with impossible author dates left out"


def as_of_words(moment: datetime | None) -> str | None:
    """'data as of 2026-12-03 08:00 UTC' (naive datetimes are taken as UTC)."""
    if moment is None:
        return None
    return f"data as of {utc_words(moment)}"


def utc_words(moment: datetime) -> str:
    """'2026-12-03 08:00 UTC'."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def footnotes(report: Report, *, scope: bool = True) -> list[str]:
    """Footnote sentences, most important first: scope, skipped commits, freshness, path/merge rule, units, notes."""
    notes: list[str] = []
    if scope and report.scope_words:
        notes.append(f"Scope: {report.scope_words}")
    for line in (skipped_words(report.skipped), as_of_words(report.data_as_of), data_ends_words(report)):
        if line:
            notes.append(line)
    if uses_paths(report):
        notes.append(MERGES_NOTE)
    if report.by == "repo" and len(report.repos) > 1:
        notes.append(REPO_OVERLAP_NOTE)
    if report.by == "org":
        notes.append(ORG_NOTE)
    if is_converted(report):
        notes.append(UNITS_NOTE)
    for line in (fte_note(report),):
        if line:
            notes.append(line)
    coauthors = coauthor_words(report)
    if coauthors:
        notes.append(coauthors)
    notes.extend(n for n in report.notes if n)
    return notes


def sparkline(values: Iterable[float]) -> str:
    """▁..█ scaled to the largest value (nearest of 8 steps, the smallest positive value at least ▁);
    zero or less is · (SPARK_EMPTY), so an empty bucket never reads as a quiet one."""
    values = [max(0.0, float(v)) for v in values]
    if not values:
        return ""
    top = max(values)
    steps = len(SPARK_CHARS) - 1
    out = []
    for v in values:
        out.append(SPARK_EMPTY if v <= 0 else SPARK_CHARS[min(steps, int(v * steps / top + 0.5))])
    return "".join(out)


def bucket_words(bucket: str) -> tuple[str, str, str]:
    """('monthly', 'month', 'months') for a trend bucket."""
    return BUCKET_WORDS.get(bucket, (bucket + "ly", bucket, bucket + "s"))


def trend_rows(report: Report) -> list:
    """The trend's buckets up to the one holding the data's last day (report.data_ends).

    A mirror whose history stopped in August would otherwise end in a run of empty buckets that
    reads as a slump; the trend stops where the data does, and `data_ends_words` says so.
    """
    rows = list(report.trend)
    if report.data_ends is None:
        return rows
    while len(rows) > 1 and rows[-1].first_day is not None and rows[-1].first_day > report.data_ends:
        rows.pop()
    return rows


def data_ends_words(report: Report) -> str | None:
    """'the history ends on 2025-08-14 (its newest commit); the trend stops there', when the trend was cut."""
    if report.data_ends is None or len(trend_rows(report)) == len(report.trend):
        return None
    return f"the history ends on {report.data_ends.isoformat()} (its newest commit); the trend stops there"


def trend_words(report: Report, *, max_points: int = 104) -> tuple[str, str] | None:
    """(caption, sparkline) for report.trend up to where the data ends, the last max_points buckets;
    None without a trend.

    caption: '2GAD per month, 2024-01 to 2024-12, peak 40 in 2024-03'.
    """
    trend: Sequence = trend_rows(report)
    if len(trend) < 2:  # one bucket (a one-week report) is the figure itself, not a trend
        return None
    _, one, many = bucket_words(report.trend_bucket)
    shown = list(trend[-max_points:]) if max_points > 0 else list(trend)
    values = [row.totals.two_gad for row in shown]
    peak = max(range(len(shown)), key=lambda i: values[i])
    span = shown[0].key if len(shown) == 1 else f"{shown[0].key} to {shown[-1].key}"
    caption = f"2GAD per {one}, {span}"
    if len(shown) < len(trend):
        caption += f" (last {len(shown)} of {len(trend)} {many})"
    caption += f", peak {number(values[peak])} in {shown[peak].key}" if values[peak] else ", no activity"
    if values[peak] and not all(values):
        caption += f" ({SPARK_EMPTY} = no commits)"
    return caption, sparkline(values)


def row_label(row) -> str:
    """A breakdown row's key, and for a period cut short the days it counts: '2024 (from 2024-03-01)',
    '2026 (to 2026-12-04)', '2024-W10 (2024-03-06 to 2024-03-08)'."""
    if row.covers is None:
        return row.key
    start, end = row.covers
    if start and end:
        return f"{row.key} ({start.isoformat()} to {end.isoformat()})"
    return f"{row.key} (from {start.isoformat()})" if start else f"{row.key} (to {end.isoformat()})"


def release_gap(release) -> tuple[str, str | None]:
    """How long after the previous release a by:release row's tag came: ('2.0 months', 'after'); a release
    tagged on an older commit than the one before it (a back-port) says ('35 days', 'before') rather than a
    negative interval; ('', None) for the first release or an impossible date."""
    if release.previous is None or release.interval_days is None:
        return "", None
    if release.interval_days < 0:
        return interval_words(release.day, release.previous_day), "before"
    return interval_words(release.previous_day, release.day), "after"


def breakdown_title(by: str | None, top: int | None = None) -> str:
    """'By month', 'People by active days' (all of them), 'Top 10 contributors by active days' (`top:N` cut it)."""
    if by == "person":
        return f"Top {number(top)} contributors by active days" if top else "People by active days"
    if by == "repo":
        return "By repository"
    if by == "org":
        return "By organization"
    if by == "release":
        return f"Newest {number(top)} releases" if top else "By release"
    return f"By {by}" if by else ""


def sorted_rows(report: Report) -> list:
    """Breakdown rows in display order: periods as given, people and repositories by active days."""
    rows = list(report.rows)
    if report.by in ("person", "repo", "org"):
        rows.sort(key=table_order)
    return rows


def more_rows_words(report: Report) -> str | None:
    """'and 2,541 more people (top:10 shows the first 10)' when `top:N` left rows out, else None."""
    if not report.more_rows:
        return None
    kind = {"person": ("person", "people"), "org": ("organization", "organizations"),
            "repo": ("repository", "repositories")}.get(report.by or "", ("row", "rows"))
    if report.by == "release":
        older = "older release" if report.more_rows == 1 else "older releases"
        return (f"and {number(report.more_rows)} {older} (top:N shows the newest N, up to 100; since: and until: "
                "pick releases by the day they were tagged)")
    return (f"and {number(report.more_rows)} more {kind[0] if report.more_rows == 1 else kind[1]} "
            f"(top:{len(report.rows)} shows the first {number(len(report.rows))})")


def repos_words(repos: Sequence[str], *, limit: int = 5) -> str:
    """'web, api and 3 more' style list of repository names (first `limit`)."""
    if not repos:
        return "no repositories"
    shown = list(repos[:limit])
    rest = len(repos) - len(shown)
    if rest:
        return ", ".join(shown) + f" and {rest} more"
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def projects_words(projects: dict[str, Sequence[str]], not_cloned: dict[str, int] | None = None) -> str:
    """'2 projects: media (openssh and gstreamer); suite (web and api)', or 'No projects yet.'; an organization's
    repositories that could not be cloned (`not_cloned`, by project) are counted after its own."""
    if not projects:
        return "No projects yet."
    not_cloned = not_cloned or {}

    def failed(name: str) -> str:
        count = not_cloned.get(name, 0)
        return f"; {number(count)} more it lists could not be cloned (see repos)" if count else ""

    return (plural(len(projects), "project") + ": "
            + "; ".join(f"{name} ({repos_words(members)}{failed(name)})" for name, members in projects.items()))


def clip(text: str, limit: int, ellipsis: str = "…") -> str:
    """text cut to at most `limit` characters, ending in an ellipsis when cut."""
    if len(text) <= limit:
        return text
    if limit <= len(ellipsis):
        return ellipsis[:limit]
    return text[: limit - len(ellipsis)] + ellipsis


def time_left(seconds: float) -> str:
    """An estimate of the time left, as a person would say it: 'about 3 min left'."""
    if seconds < 60:
        return "less than a minute left"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"about {minutes} min left"
    return f"about {seconds / 3600:.1f} h left"


def compare_footnotes(report) -> list[str]:
    """Footnotes of a `compare` answer (a metric.CompareReport): what the comparison means, scope, units, COCOMO."""
    notes = [COMPARE_NOTE] if report.vs_cocomo else []  # what the two methods answer, only when both are shown
    notes.append(f"Scope of every item: {report.scope_words}" + (
        f", {period_words(report.since, report.until)}" if report.since or report.until else ""))
    moment = as_of_words(report.data_as_of)
    if moment:
        notes.append(moment)
    notes.append("span: first to last author day counted; mean per active month: 2GAD / months with commits"
                 + ("; " + UNITS_NOTE if report.vs_cocomo else ""))
    notes.extend(n for n in report.notes if n)
    return notes
