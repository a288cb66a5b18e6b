"""Calendar periods people type (`2024`, `2024-03`, `2024-Q2`, `30d`, ...) and the buckets reports group by.

Day numbers: the index stores a day as days since 1970-01-01 ("epoch day"), so that
arithmetic stays integer; `to_epoch_day`/`from_epoch_day` convert.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta


from ..errors import QueryError

EPOCH_ORDINAL = date(1970, 1, 1).toordinal()

PERIOD_FORMS = "YYYY, YYYY-MM, YYYY-MM-DD, YYYY-Qn, or a span ending today such as 30d, 12w, 6m, 1y"

_SPAN = re.compile(r"^(\d{1,4})([dwmy])$")
_QUARTER = re.compile(r"^(\d{4})-[qQ]([1-4])$")
_UNITS = {"d": "days", "w": "weeks", "m": "months", "y": "years"}


def to_epoch_day(day: date) -> int:
    """Days since 1970-01-01."""
    return day.toordinal() - EPOCH_ORDINAL


def from_epoch_day(number: int) -> date:
    """The date `number` days after 1970-01-01."""
    return date.fromordinal(int(number) + EPOCH_ORDINAL)


def period_bounds(text: str, today: date) -> tuple[date, date]:
    """The first and last day of the period `text` names; raise QueryError if it names none."""
    text = text.strip()
    try:
        return _period_bounds(text, today)
    except (ValueError, OverflowError):  # a span reaching before the year 1 (`2024y`), or `0000-Q1`
        raise QueryError(f"`{text}` reaches outside the years 1 to 9999; use {PERIOD_FORMS}.") from None


def _period_bounds(text: str, today: date) -> tuple[date, date]:
    span = _SPAN.match(text.lower())
    if span:
        amount, unit = int(span.group(1)), _UNITS[span.group(2)]
        if amount == 0:
            raise QueryError(f"`{text}` is an empty span; use at least 1, e.g. 30d.")
        from dateutil.relativedelta import relativedelta  # loaded when used: `gad-bot help` reads PERIOD_FORMS

        start = today - relativedelta(**{unit: amount}) + timedelta(days=1)
        return start, today
    quarter = _QUARTER.match(text)
    if quarter:
        year, q = int(quarter.group(1)), int(quarter.group(2))
        return date(year, 3 * q - 2, 1), _month_end(year, 3 * q)
    for fmt in ("%Y-%m-%d", "%Y-%m", "%Y"):
        try:
            start = datetime.strptime(text, fmt).date()
        except ValueError:
            continue
        if fmt == "%Y-%m-%d" and len(text) != 10 or fmt == "%Y-%m" and len(text) != 7 or fmt == "%Y" and len(text) != 4:
            continue  # strptime accepts 2024-1-5; insist on the written forms
        # The last day is built directly rather than as "next period minus a day", which overflows in 9999.
        end = {"%Y-%m-%d": start, "%Y-%m": _month_end(start.year, start.month), "%Y": date(start.year, 12, 31)}[fmt]
        return start, end
    raise QueryError(f"`{text}` is not a date or period; use {PERIOD_FORMS}.")


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def since_date(text: str, today: date) -> date:
    """The first day counted by `since:text`."""
    return period_bounds(text, today)[0]


def until_date(text: str, today: date) -> date:
    """The last day counted by `until:text`: the end of the whole period (`until:2024-06` is 2024-06-30).

    A relative span means "until that long ago": `until:30d` ends 30 days before today.
    """
    if _SPAN.match(text.strip().lower()):
        start, _ = period_bounds(text, today)
        return start - timedelta(days=1)
    return period_bounds(text, today)[1]


BUCKETS = ("week", "month", "quarter", "year")


def bucket_start(day: date, bucket: str) -> date:
    """The first day of the week (Monday), month, quarter or year containing `day`."""
    if bucket == "week":
        return day - timedelta(days=day.weekday())
    if bucket == "month":
        return day.replace(day=1)
    if bucket == "quarter":
        return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
    if bucket == "year":
        return date(day.year, 1, 1)
    raise ValueError(bucket)


def bucket_label(start: date, bucket: str) -> str:
    """How a bucket is named in tables: 2024-W05, 2024-03, 2024-Q2, 2024."""
    if bucket == "week":
        year, week, _ = start.isocalendar()
        return f"{year}-W{week:02d}"
    if bucket == "month":
        return start.strftime("%Y-%m")
    if bucket == "quarter":
        return f"{start.year}-Q{(start.month - 1) // 3 + 1}"
    return str(start.year)


def mark_partial(rows: list, bucket: str, since: date | None, until: date) -> list:
    """Period rows with `covers` set where since:, until: (or today, for the period still running) cut
    the bucket: `since:2024-03 by:year` counts 2024 from March 1st only, and says so."""
    from dataclasses import replace

    out = []
    for row in rows:
        if row.first_day is None:
            out.append(row)
            continue
        last = next_bucket(row.first_day, bucket) - timedelta(days=1)
        start = since if since is not None and since > row.first_day else None
        end = until if until < last else None
        out.append(replace(row, covers=(start, end)) if start or end else row)
    return out


def next_bucket(start: date, bucket: str) -> date:
    """The first day of the bucket after the one starting on `start`."""
    from dateutil.relativedelta import relativedelta

    step = {"week": relativedelta(weeks=1), "month": relativedelta(months=1),
            "quarter": relativedelta(months=3), "year": relativedelta(years=1)}[bucket]
    return start + step
