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


def _halves_of_days(days: np.ndarray) -> np.ndarray:
    """Each epoch day's half-year number, through a lookup over the days spanned (no datetime per key)."""
    if not len(days):
        return days.astype(np.int64)
    low, high = int(days.min()), int(days.max())
    span = np.arange(low, high + 1, dtype=np.int64)
    months = span.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)  # 0 = 1970-01
    return (months // FTE_MONTHS_PER_HALF)[days - low]


def fte(keys: np.ndarray, threshold: int, since: date | None, until: date | None, today: date) -> Fte:
    """The model's person-months over `keys`, per half-year, beside 2GAD's (module doc)."""
    keys = np.asarray(keys, dtype=np.int64)
    persons = keys >> 32
    days = keys & 0xFFFFFFFF
    halves = _halves_of_days(days)
    two_gad_pm = 2 * len(keys) / DAYS_PER_PERSON_MONTH
    if not len(keys):
        return Fte(threshold, 0.0, 0.0, ())
    # (person, half) runs: keys are sorted by person, then day, so each pair's days are consecutive
    starts = np.flatnonzero(np.r_[True, (persons[1:] != persons[:-1]) | (halves[1:] != halves[:-1])])
    counts = np.diff(np.r_[starts, len(keys)])
    effort = np.minimum(float(FTE_MONTHS_PER_HALF), FTE_MONTHS_PER_HALF * counts / threshold)
    run_half = halves[starts]
    run_person = persons[starts]
    # each person's model figure beside their own 2GAD in person-months: with t = 12, a day is worth half a
    # person-month (9.5 person-days) to the model and 2 person-days to 2GAD, so someone active a few days a
    # half-year gets more from the model, and someone active more than t days gets its cap of 6
    person_starts = np.flatnonzero(np.r_[True, run_person[1:] != run_person[:-1]])
    model = np.add.reduceat(effort, person_starts)
    own = 2 * np.add.reduceat(counts, person_starts) / DAYS_PER_PERSON_MONTH
    above = int(np.sum(model > own + 1e-9))
    below = int(np.sum(model < own - 1e-9))
    order = np.argsort(run_half, kind="stable")
    run_half, effort, counts = run_half[order], effort[order], counts[order]
    capped = counts >= threshold
    half_starts = np.flatnonzero(np.r_[True, run_half[1:] != run_half[:-1]])
    end = until or today
    out = []
    for at, number in zip(half_starts, run_half[half_starts]):
        stop = half_starts[half_starts > at]
        stop = int(stop[0]) if len(stop) else len(run_half)
        first, last = half_bounds(int(number))
        cut_first = since is not None and first < since <= last
        cut_last = first <= end < last
        out.append(FteHalf(key=half_key(int(number)), first_day=since if cut_first else first,
                           last_day=end if cut_last else last, people=stop - int(at),
                           active_days=int(counts[at:stop].sum()),
                           person_months=float(effort[at:stop].sum()), full_time=int(capped[at:stop].sum()),
                           partial=cut_first or cut_last))
    return Fte(threshold, float(effort.sum()), two_gad_pm, tuple(out), above, below)

