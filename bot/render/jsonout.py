"""The report as plain JSON-serialisable data (`format:json`, the CLI's `--json`)."""

from __future__ import annotations

from datetime import date, datetime, timezone

from ..metric import DAYS_PER_PERSON_MONTH, DAYS_PER_PERSON_YEAR, Report, Row
from . import words


def _day(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _moment(value: datetime | None) -> str | None:
    """ISO 8601 in UTC; a naive datetime is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat()


def filters_to_dict(report: Report) -> dict:
    """Every filter that shaped the figure, one field each (defaults included, so a reader need not know them)."""
    return {"repositories_asked": list(report.asked or report.repos), "since": _day(report.since),
            "until": _day(report.until), "scope": report.scope, "range": report.range,
            "paths": list(report.paths), "exclude_paths": list(report.exclude_paths),
            "authors": list(report.authors), "orgs": list(report.orgs),
            "mailmap": report.mailmap, "bots": report.bots, "coauthors": report.coauthors,
            **({"tags": report.release_tags, "prereleases": report.prereleases} if report.by == "release" else {})}


def row_to_dict(row: Row) -> dict:
    """{key, active_days, two_gad, developers, commits} (+ first_day for period rows)."""
    t = row.totals
    out = {"key": row.key, "active_days": t.active_days, "two_gad": t.two_gad,
           "developers": t.developers, "commits": t.commits}
    if row.first_day is not None:
        out["first_day"] = row.first_day.isoformat()
    if row.release is not None:  # by:release: what git's previous..this lists, and the tags' days
        r = row.release
        out["release"] = {"tag": r.tag, "previous": r.previous, "range": r.range, "day": _day(r.day),
                          "previous_day": _day(r.previous_day), "interval_days": r.interval_days,
                          "prerelease": r.prerelease}
    if row.covers is not None:  # a period cut by since:, until: or today: the days it counts
        start, end = row.covers
        out["partial"] = {"from": start.isoformat() if start else None, "to": end.isoformat() if end else None}
    return out


def _with_share(out: dict, row: Row, totals) -> dict:
    """A by:org row with its share of the total active days, in percent."""
    out["share_percent"] = round(100 * row.totals.person_days / totals.person_days, 2) if totals.person_days else None
    return out


def report_to_dict(report: Report) -> dict:
    """Every figure, word and footnote of a report; dates as ISO strings, nothing but JSON types.

    `active_days` is GAD and `two_gad` the effort in person-days (METRIC.md); `filters` states every
    filter that shaped them, `headline` the answer in one line."""
    t = report.totals
    c = report.cocomo
    return {
        "headline": words.headline_words(report),
        "hint": report.hint,
        "active_days": t.active_days,
        "two_gad": t.two_gad,
        "two_gad_person_months": round(t.two_gad / DAYS_PER_PERSON_MONTH, 2),
        "two_gad_person_years": round(t.two_gad / DAYS_PER_PERSON_YEAR, 2),
        "developers": t.developers,
        "commits": t.commits,
        "since": _day(report.since),
        "until": _day(report.until),
        "period": words.asked_period_words(report),
        "scope": report.scope_words,
        "filters": filters_to_dict(report),
        "repos": list(report.repos),
        "by": report.by,
        "rows": [_with_share(row_to_dict(r), r, t) if report.by == "org" else row_to_dict(r) for r in report.rows],
        "more_rows": report.more_rows,  # rows `top:N` left out
        # METRIC.md rule 7: commits naming co-authors, and the active days their records add (counted when
        # `filters.coauthors` is true, else what coauthors:on would add)
        "coauthors": {"commits_naming_coauthors": report.coauthor_commits,
                      "active_days_added": report.coauthor_active_days,
                      "two_gad_added": 2 * report.coauthor_active_days},
        "range": report.range,
        # `range:A..B`: the author days of the commits A and B name, the days between them, and the counted
        # commits older than A (merged in later)
        "range_start_day": _day(report.range_start_day),
        "range_end_day": _day(report.range_end_day),
        "range_interval_days": (report.range_end_day - report.range_start_day).days
        if report.range_start_day and report.range_end_day else None,
        "range_older_commits": report.range_older_commits,
        "first_day": _day(report.first_day),
        "last_day": _day(report.last_day),
        "span_months": None if report.span_months is None else round(report.span_months, 2),
        "trend_bucket": report.trend_bucket,
        # a trend carries person-days only (developers and commits are not computed for it); it stops
        # at the bucket holding the newest commit in scope (`last_day`)
        "trend": [{"key": r.key, "first_day": r.first_day.isoformat() if r.first_day else None,
                   "active_days": r.totals.active_days, "two_gad": r.totals.two_gad} for r in words.trend_rows(report)],
        "skipped": report.skipped,
        "data_as_of": _moment(report.data_as_of),
        "notes": list(report.notes),
        "footnotes": words.footnotes(report),
        "units": {"person_month_days": DAYS_PER_PERSON_MONTH, "person_year_days": DAYS_PER_PERSON_YEAR},
        "cocomo": None if c is None else {
            "counter": c.counter, "mode": c.mode, "sloc": c.sloc, "person_months": c.person_months,
            "two_gad_person_months": c.two_gad_person_months, "ratio": c.ratio,
            "two_gad_per_ksloc": None if c.two_gad_per_ksloc is None else round(c.two_gad_per_ksloc, 4)},
        "fte": fte_to_dict(report),
        "typical_release": typical_to_dict(report),
        "calibrated": calibrated_to_dict(report),
    }


def fte_to_dict(report: Report) -> dict | None:
    """`vs:fte` (METRIC.md, "A second model"): the model's person-months, 2GAD's in the same unit, each half-year."""
    f = report.fte
    if f is None:
        return None
    return {"model": "Robles et al. activity threshold", "threshold_active_days": f.threshold,
            "person_months": round(f.person_months, 4), "two_gad_person_months": round(f.two_gad_person_months, 4),
            "ratio": None if f.ratio is None else round(f.ratio, 4),
            "people_more_than_two_gad": f.people_above, "people_less_than_two_gad": f.people_below,
            "words": words.fte_words(report),
            "half_years": [{"key": h.key, "first_day": h.first_day.isoformat(), "last_day": h.last_day.isoformat(),
                            "people": h.people, "active_days": h.active_days,
                            "person_months": round(h.person_months, 4), "full_time_people": h.full_time,
                            "partial": h.partial} for h in f.halves]}


def typical_to_dict(report: Report) -> dict | None:
    """by:release's typical release: the median and quartiles of the rows' 2GAD and intervals."""
    t = report.typical
    if t is None:
        return None
    quartiles = lambda q: None if q is None else {"p25": q.p25, "median": q.median, "p75": q.p75, "count": q.count}  # noqa: E731
    return {"releases": t.releases, "series": t.series, "first_left_out": t.left_out_first,
            "two_gad": quartiles(t.two_gad), "interval_days": quartiles(t.interval_days),
            "words": words.typical_words(report)}


def calibrated_to_dict(report: Report) -> dict | None:
    """`calibrated:NAME`: the figure times the saved ratio, and the band of the months' spread."""
    c = report.calibrated
    if c is None:
        return None
    low, high = c.band
    return {"name": c.name, "ratio_logged_to_two_gad": round(c.ratio, 4), "months": c.months,
            "measured_from": c.first_day.isoformat(), "measured_to": c.last_day.isoformat(),
            "person_days": round(c.person_days, 2), "band_person_days": [round(low, 2), round(high, 2)],
            "words": words.calibrated_words(report)}
