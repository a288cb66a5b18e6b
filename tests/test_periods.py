"""bot/engine/periods.py: the periods people type, epoch days, and report buckets."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import QueryError
from bot.engine.periods import (BUCKETS, PERIOD_FORMS, bucket_label, bucket_start, from_epoch_day, next_bucket,
                         period_bounds, since_date, to_epoch_day, until_date)

TODAY = date(2024, 6, 15)  # a Saturday in a leap year
LEAP_DAY = date(2024, 2, 29)


@pytest.mark.parametrize("day, number", [
    (date(1970, 1, 1), 0),
    (date(1970, 1, 2), 1),
    (date(1969, 12, 31), -1),
    (date(2000, 3, 1), 11017),
    (date(2024, 1, 1), 19723),
    (date(2024, 2, 29), 19782),
    (date(1, 1, 1), -719162),
    (date(9999, 12, 31), 2932896),
])
def test_epoch_days(day, number):
    assert to_epoch_day(day) == number
    assert from_epoch_day(number) == day


def test_from_epoch_day_accepts_numpy_style_ints():
    assert from_epoch_day(19723.0) == date(2024, 1, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("text, start, end", [
    # years
    ("2024", date(2024, 1, 1), date(2024, 12, 31)),
    ("1970", date(1970, 1, 1), date(1970, 12, 31)),
    ("9999", date(9999, 1, 1), date(9999, 12, 31)),
    ("0001", date(1, 1, 1), date(1, 12, 31)),
    # months, leap years
    ("2024-01", date(2024, 1, 1), date(2024, 1, 31)),
    ("2024-02", date(2024, 2, 1), date(2024, 2, 29)),
    ("2023-02", date(2023, 2, 1), date(2023, 2, 28)),
    ("2000-02", date(2000, 2, 1), date(2000, 2, 29)),  # divisible by 400: leap
    ("1900-02", date(1900, 2, 1), date(1900, 2, 28)),  # divisible by 100: not leap
    ("2024-04", date(2024, 4, 1), date(2024, 4, 30)),
    ("2024-06", date(2024, 6, 1), date(2024, 6, 30)),
    ("2024-12", date(2024, 12, 1), date(2024, 12, 31)),
    ("9999-12", date(9999, 12, 1), date(9999, 12, 31)),
    # days
    ("2024-06-15", date(2024, 6, 15), date(2024, 6, 15)),
    ("2024-02-29", date(2024, 2, 29), date(2024, 2, 29)),
    ("9999-12-31", date(9999, 12, 31), date(9999, 12, 31)),
    # quarters
    ("2024-Q1", date(2024, 1, 1), date(2024, 3, 31)),
    ("2024-q1", date(2024, 1, 1), date(2024, 3, 31)),
    ("2024-Q2", date(2024, 4, 1), date(2024, 6, 30)),
    ("2024-Q3", date(2024, 7, 1), date(2024, 9, 30)),
    ("2024-Q4", date(2024, 10, 1), date(2024, 12, 31)),
    ("9999-Q4", date(9999, 10, 1), date(9999, 12, 31)),
    # spans ending today, both ends inclusive
    ("1d", TODAY, TODAY),
    ("30d", date(2024, 5, 17), TODAY),
    ("30D", date(2024, 5, 17), TODAY),
    ("1w", date(2024, 6, 9), TODAY),
    ("12w", date(2024, 3, 24), TODAY),
    ("6m", date(2023, 12, 16), TODAY),
    ("1m", date(2024, 5, 16), TODAY),
    ("1y", date(2023, 6, 16), TODAY),
    ("2y", date(2022, 6, 16), TODAY),
    ("9999d", TODAY - timedelta(days=9998), TODAY),
    # surrounding spaces are ignored
    (" 2024-06 ", date(2024, 6, 1), date(2024, 6, 30)),
])
def test_period_bounds(text, start, end):
    assert period_bounds(text, TODAY) == (start, end)


@pytest.mark.parametrize("today, text, start", [
    (LEAP_DAY, "1y", date(2023, 3, 1)),  # 2023-02-28 is a year before the leap day; the span starts after it
    (LEAP_DAY, "1m", date(2024, 1, 30)),
    (date(2024, 3, 31), "1m", date(2024, 3, 1)),  # 2024-02-29 + 1 day
    (date(2024, 8, 31), "6m", date(2024, 3, 1)),
    (date(2025, 3, 1), "1y", date(2024, 3, 2)),
    (date(2024, 1, 1), "1d", date(2024, 1, 1)),
    (date(2024, 1, 1), "2d", date(2023, 12, 31)),
])
def test_spans_are_relative_to_the_injected_today(today, text, start):
    assert period_bounds(text, today) == (start, today)


@pytest.mark.parametrize("text", [
    "", " ", "24", "202", "20245", "2024-1", "2024-001", "2024-13", "2024-00", "2024-6-1", "2024-06-1",
    "2024-06-31", "2023-02-29", "2024-02-30", "2024-Q0", "2024-Q5", "2024Q1", "Q1-2024", "2024-Q", "0d", "0y",
    "00w", "10000d", "1.5y", "-1d", "+30d", "30", "d", "30x", "30 d", "2024/06", "06-2024", "2024-06-15T00:00",
    "today", "yesterday", "last week", "0000", "0000-01", "0000-Q1", "2024-06-15-01",
])
def test_not_a_period(text):
    with pytest.raises(QueryError) as info:
        period_bounds(text, TODAY)
    message = str(info.value)
    assert PERIOD_FORMS in message or "empty span" in message
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize("text", ["2024y", "9999y", "2025y"])
def test_spans_reaching_before_year_one(text):
    with pytest.raises(QueryError, match="outside the years 1 to 9999"):
        period_bounds(text, TODAY)


def test_zero_span_message():
    with pytest.raises(QueryError, match=r"^`0d` is an empty span; use at least 1, e.g. 30d\.$"):
        period_bounds("0d", TODAY)


@pytest.mark.parametrize("text, expected", [
    ("2024", date(2024, 1, 1)),
    ("2024-06", date(2024, 6, 1)),
    ("2024-06-15", date(2024, 6, 15)),
    ("2024-Q3", date(2024, 7, 1)),
    ("30d", date(2024, 5, 17)),
    ("1y", date(2023, 6, 16)),
])
def test_since_date_is_the_first_day(text, expected):
    assert since_date(text, TODAY) == expected


@pytest.mark.parametrize("text, expected", [
    ("2024", date(2024, 12, 31)),
    ("2024-06", date(2024, 6, 30)),  # METRIC.md: until:2024-06 ends on 2024-06-30
    ("2024-02", date(2024, 2, 29)),
    ("2023-02", date(2023, 2, 28)),
    ("2024-06-15", date(2024, 6, 15)),
    ("2024-Q1", date(2024, 3, 31)),
    ("2024-Q2", date(2024, 6, 30)),
    # a span in until: means "until that long ago"
    ("30d", date(2024, 5, 16)),
    ("1d", date(2024, 6, 14)),
    ("1w", date(2024, 6, 8)),
    ("1y", date(2023, 6, 15)),
    (" 30d ", date(2024, 5, 16)),
])
def test_until_date_is_the_last_day(text, expected):
    assert until_date(text, TODAY) == expected


@pytest.mark.parametrize("text", ["2024-13", "nope", "0d"])
def test_since_and_until_raise_query_error(text):
    with pytest.raises(QueryError):
        since_date(text, TODAY)
    with pytest.raises(QueryError):
        until_date(text, TODAY)


# --- buckets -------------------------------------------------------------------------------------

@pytest.mark.parametrize("day, bucket, start, label, following", [
    (date(2024, 6, 15), "week", date(2024, 6, 10), "2024-W24", date(2024, 6, 17)),
    (date(2024, 6, 10), "week", date(2024, 6, 10), "2024-W24", date(2024, 6, 17)),  # Monday starts the week
    (date(2024, 6, 16), "week", date(2024, 6, 10), "2024-W24", date(2024, 6, 17)),  # Sunday ends it
    (date(2024, 1, 1), "week", date(2024, 1, 1), "2024-W01", date(2024, 1, 8)),
    (date(2024, 12, 31), "week", date(2024, 12, 30), "2025-W01", date(2025, 1, 6)),  # ISO year of the week
    (date(2021, 1, 3), "week", date(2020, 12, 28), "2020-W53", date(2021, 1, 4)),
    (date(2026, 12, 31), "week", date(2026, 12, 28), "2026-W53", date(2027, 1, 4)),
    (date(2024, 2, 29), "week", date(2024, 2, 26), "2024-W09", date(2024, 3, 4)),
    (date(2024, 6, 15), "month", date(2024, 6, 1), "2024-06", date(2024, 7, 1)),
    (date(2024, 2, 29), "month", date(2024, 2, 1), "2024-02", date(2024, 3, 1)),
    (date(2024, 12, 31), "month", date(2024, 12, 1), "2024-12", date(2025, 1, 1)),
    (date(2024, 1, 1), "quarter", date(2024, 1, 1), "2024-Q1", date(2024, 4, 1)),
    (date(2024, 3, 31), "quarter", date(2024, 1, 1), "2024-Q1", date(2024, 4, 1)),
    (date(2024, 4, 1), "quarter", date(2024, 4, 1), "2024-Q2", date(2024, 7, 1)),
    (date(2024, 6, 15), "quarter", date(2024, 4, 1), "2024-Q2", date(2024, 7, 1)),
    (date(2024, 9, 30), "quarter", date(2024, 7, 1), "2024-Q3", date(2024, 10, 1)),
    (date(2024, 12, 31), "quarter", date(2024, 10, 1), "2024-Q4", date(2025, 1, 1)),
    (date(2024, 6, 15), "year", date(2024, 1, 1), "2024", date(2025, 1, 1)),
    (date(1999, 12, 31), "year", date(1999, 1, 1), "1999", date(2000, 1, 1)),
])
def test_buckets(day, bucket, start, label, following):
    assert bucket_start(day, bucket) == start
    assert bucket_label(start, bucket) == label
    assert next_bucket(start, bucket) == following


def test_bucket_names():
    assert BUCKETS == ("week", "month", "quarter", "year")


@pytest.mark.parametrize("bucket", ["day", "person", "Week", ""])
def test_unknown_bucket(bucket):
    with pytest.raises(ValueError):
        bucket_start(TODAY, bucket)


# --- properties ----------------------------------------------------------------------------------

DAYS = st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 12, 31))


@given(day=DAYS, bucket=st.sampled_from(BUCKETS))
def test_property_every_day_is_in_exactly_one_bucket(day, bucket):
    start = bucket_start(day, bucket)
    following = next_bucket(start, bucket)
    assert start <= day < following
    assert bucket_start(start, bucket) == start
    assert bucket_start(following, bucket) == following
    assert bucket_start(following - timedelta(days=1), bucket) == start
    assert bucket_label(start, bucket) != bucket_label(following, bucket)


@given(day=DAYS)
def test_property_week_labels_are_iso_weeks(day):
    year, week, weekday = day.isocalendar()
    start = bucket_start(day, "week")
    assert start.weekday() == 0 and (day - start).days == weekday - 1
    assert bucket_label(start, "week") == f"{year}-W{week:02d}"


@given(day=DAYS)
def test_property_written_forms_name_their_period(day):
    assert period_bounds(day.isoformat(), TODAY) == (day, day)
    month_start, month_end = period_bounds(day.strftime("%Y-%m"), TODAY)
    assert month_start == day.replace(day=1) and month_start <= day <= month_end
    assert (month_end + timedelta(days=1)).day == 1 and month_end.month == day.month
    quarter = (day.month - 1) // 3 + 1
    q_start, q_end = period_bounds(f"{day.year}-Q{quarter}", TODAY)
    assert q_start == bucket_start(day, "quarter") and q_end == next_bucket(q_start, "quarter") - timedelta(days=1)
    assert period_bounds(f"{day.year:04d}", TODAY) == (date(day.year, 1, 1), date(day.year, 12, 31))
    assert since_date(day.strftime("%Y-%m"), TODAY) <= until_date(day.strftime("%Y-%m"), TODAY)


@given(today=DAYS, amount=st.integers(1, 9999), unit=st.sampled_from("dwmy"))
def test_property_spans_end_today_and_until_ends_before_since(today, amount, unit):
    text = f"{amount}{unit}"
    try:
        start, end = period_bounds(text, today)
    except QueryError as error:
        assert "outside the years 1 to 9999" in str(error)
        return
    assert end == today and start <= today
    if unit == "d":
        assert (end - start).days + 1 == amount
    if unit == "w":
        assert (end - start).days + 1 == 7 * amount
    assert until_date(text, today) == start - timedelta(days=1)
    assert since_date(text, today) == start


@given(text=st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=40),
                      st.from_regex(r"[0-9]{1,5}(-([qQ]?[0-9]{1,3}))?(-[0-9]{1,3})?|[0-9]{1,5}[dwmyDWMY]", fullmatch=True)))
def test_property_period_bounds_only_raises_query_error(text):
    try:
        start, end = period_bounds(text, TODAY)
    except QueryError as error:
        assert str(error).strip() and len(str(error).splitlines()) == 1
    else:
        assert start <= end
