"""`vs:fte`: the full-time-equivalent model of Robles et al. beside 2GAD (METRIC.md, "A second model").

    fte(keys, threshold, since, until, today) -> metric.Fte

Over the same distinct (person, day) pairs a report counts (its `keys`: person << 32 | epoch day, sorted by
person then day, every filter applied): for each person and calendar half-year (January-June, July-December),
d = their active days in it, effort = min(6, 6 d / t) person-months; the model's figure is the sum. A half-year
that `since:`, `until:` or today cuts is counted over the days inside the period and marked partial.
Pure numpy: one pass over the keys, grouped by runs (they are sorted), so a report with it costs little more
than one without (docs/benchmarks.md).
"""

from __future__ import annotations

from datetime import date

import numpy as np

from ..metric import DAYS_PER_PERSON_MONTH, FTE_MONTHS_PER_HALF, Fte, FteHalf


def half_bounds(number: int) -> tuple[date, date]:
    """The first and last day of half-year `number` (0 = 1970-H1)."""
    year, second = 1970 + number // 2, number % 2
    return (date(year, 7, 1), date(year, 12, 31)) if second else (date(year, 1, 1), date(year, 6, 30))


def half_key(number: int) -> str:
    return f"{1970 + number // 2}-H{number % 2 + 1}"


def _halves_of_days(days: np.ndarray, low: int, high: int) -> np.ndarray:
    """Each epoch day's half-year number, less the first's, through a lookup over the days spanned (no datetime
    per key)."""
    span = np.arange(low, high + 1, dtype=np.int64)
    months = span.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)  # 0 = 1970-01
    halves = months // FTE_MONTHS_PER_HALF
    return (halves - halves[0]).astype(np.int32)[days - low]


def fte(keys: np.ndarray, threshold: int, since: date | None, until: date | None, today: date) -> Fte:
    """The model's person-months over `keys`, per half-year, beside 2GAD's (module doc)."""
    keys = np.asarray(keys, dtype=np.int64)
    n = len(keys)
    two_gad_pm = 2 * n / DAYS_PER_PERSON_MONTH
    if not n:
        return Fte(threshold, 0.0, 0.0, ())
    days = keys & 0xFFFFFFFF
    low, high = int(days.min()), int(days.max())
    span_months = np.array([low, high], dtype="datetime64[D]").astype("datetime64[M]").astype(np.int64)
    first_half = int(span_months[0] // FTE_MONTHS_PER_HALF)
    # (person, half-year) as one integer: keys are sorted by person, then day, so each pair's days are one run
    # (half-years are counted from the first: 12 bits hold 2,048 years of them)
    pairs = ((keys >> 32) << 12) | _halves_of_days(days, low, high)
    change = np.empty(n, bool)
    change[0] = True
    np.not_equal(pairs[1:], pairs[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    counts = np.diff(starts, append=n)
    effort = np.minimum(float(FTE_MONTHS_PER_HALF), FTE_MONTHS_PER_HALF * counts / threshold)
    run_pairs = pairs[starts]
    run_person = run_pairs >> 12
    slot = run_pairs & 0xFFF  # the run's half-year, counted from the first (`first_half`)
    # each person's model figure beside their own 2GAD in person-months: with t = 12, a day is worth half a
    # person-month (9.5 person-days) to the model and 2 person-days to 2GAD, so someone active a few days a
    # half-year gets more from the model, and someone active more than t days gets its cap of 6
    person_change = np.empty(len(run_person), bool)
    person_change[0] = True
    np.not_equal(run_person[1:], run_person[:-1], out=person_change[1:])
    person_starts = np.flatnonzero(person_change)
    model = np.add.reduceat(effort, person_starts)
    own = 2 * np.add.reduceat(counts, person_starts) / DAYS_PER_PERSON_MONTH
    above = int(np.count_nonzero(model > own + 1e-9))
    below = int(np.count_nonzero(model < own - 1e-9))
    # per half-year, in one pass each (bincount over the half-years spanned: no sort of the runs)
    low = first_half
    size = int(slot.max()) + 1
    people = np.bincount(slot, minlength=size)
    active = np.bincount(slot, weights=counts, minlength=size)
    months = np.bincount(slot, weights=effort, minlength=size)
    full = np.bincount(slot, weights=counts >= threshold, minlength=size)
    end = until or today
    out = []
    for at in np.flatnonzero(people).tolist():
        first, last = half_bounds(low + at)
        cut_first = since is not None and first < since <= last
        cut_last = first <= end < last
        out.append(FteHalf(key=half_key(low + at), first_day=since if cut_first else first,
                           last_day=end if cut_last else last, people=int(people[at]), active_days=int(active[at]),
                           person_months=float(months[at]), full_time=int(full[at]), partial=cut_first or cut_last))
    return Fte(threshold, float(effort.sum()), two_gad_pm, tuple(out), above, below)

