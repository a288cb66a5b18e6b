"""Saved calibrations: `gad-bot calibrate ... --save NAME` keeps a team's measured ratio, `calibrated:NAME` uses it.

    save(index, name, calibration, default=False) -> Saved
    applied(index, name, two_gad) -> metric.Calibrated | None

The ratio is logged person-days / 2GAD over the whole span compared (docs/metric.md, "Calibrated figures"); the
band is the 25th to 75th percentile of the months' own ratios (months with 2GAD), so a figure reads "2GAD 400,
calibrated 452 (band 380-520)". The table is migration 20's `calibrations`, read and written here through
`Index.execute` and `Index.transaction`, as cocomo.py keeps its line counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from ..errors import QueryError, literal
from ..metric import Calibrated, Quartiles
from ..store.index import Index, _iso, utcnow

NAME = re.compile(r"[\w.\-]{1,64}")
# Whether the person asking may see every one of these repositories (by name), bot/engine/catalog.py's `sees_all`
Seen = Callable[[tuple[str, ...]], bool]
MIN_MONTHS = 2  # one month has no spread to give a band


@dataclass(frozen=True)
class Saved:
    """A saved calibration as the index keeps it."""

    name: str
    ratio: float  # logged person-days / 2GAD
    low: float
    high: float
    months: int
    first_day: date
    last_day: date
    repos: tuple[str, ...]
    people: int
    is_default: bool


def measured(calibration) -> tuple[float, float, float, int]:
    """(ratio, low, high, months) of an engine.calibrate.Calibration: its total's logged/2GAD, and the quartiles of
    the months' logged/2GAD over the months with 2GAD; one sentence when there is nothing to keep."""
    total = calibration.total
    if not total.two_gad or not total.logged_person_days:
        raise QueryError("There is nothing to save: no one the timesheet logs committed in the span, so no ratio "
                         "was measured.")
    months = [row.logged_person_days / row.two_gad for row in calibration.months if row.two_gad]
    if len(months) < MIN_MONTHS:
        raise QueryError(f"A calibration needs at least {MIN_MONTHS} months with commits to give a band, and this "
                         f"timesheet has {len(months)}; export a longer period.")
    spread = Quartiles.of(months)
    return total.logged_person_days / total.two_gad, spread.p25, spread.p75, len(months)


def save(index: Index, name: str, calibration, *, default: bool = False) -> Saved:
    """Keep `calibration`'s ratio under `name` (replacing one of that name); `default` makes it every report's."""
    if not NAME.fullmatch(name):
        raise QueryError(f"{literal(name[:40])} is not a name for a calibration; use up to 64 letters, digits, `.`, "
                         "`-` or `_`, e.g. `--save team`.")
    ratio, low, high, months = measured(calibration)
    with index.transaction() as db:
        if default:
            db.execute("UPDATE calibrations SET is_default = 0")
        db.execute("INSERT OR REPLACE INTO calibrations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (name, ratio, low, high, months, calibration.first_day.isoformat(),
                    calibration.last_day.isoformat(), " ".join(calibration.repos), len(calibration.compared),
                    int(default), _iso(utcnow())))
    return find(index, name)


def _row(values) -> Saved:
    name, ratio, low, high, months, first, last, repos, people, is_default = values
    return Saved(name, ratio, low, high, months, date.fromisoformat(first), date.fromisoformat(last),
                 tuple(repos.split()), people, bool(is_default))


_COLUMNS = "name, ratio, low, high, months, first_day, last_day, repos, people, is_default"


def saved(index: Index) -> list[Saved]:
    return [_row(r) for r in index.execute(f"SELECT {_COLUMNS} FROM calibrations ORDER BY name")]


def find(index: Index, name: str, seen: Seen | None = None) -> Saved:
    """The calibration saved as `name`; one sentence naming the saved ones when there is none. `seen`: whether the
    person asking may see the repositories a calibration was measured on (its name, ratio and span are facts about
    them); one they may not is, to them, not saved."""
    row = index.execute(f"SELECT {_COLUMNS} FROM calibrations WHERE name = ?", (name,)).fetchone()
    if row is not None and seen is not None and not seen(_row(row).repos):
        row = None
    if row is None:
        names = [s.name for s in saved(index) if seen is None or seen(s.repos)]
        known = (f"saved ones: {', '.join(literal(n) for n in names)}" if names else "none is saved yet")
        raise QueryError(f"No calibration is saved as {literal(name)} ({known}); "
                         f"an admin's `gad-bot calibrate TIMESHEET REPO --save {name}` measures and keeps one.")
    return _row(row)


def default(index: Index) -> Saved | None:
    row = index.execute(f"SELECT {_COLUMNS} FROM calibrations WHERE is_default = 1").fetchone()
    return _row(row) if row else None


def applied(index: Index, name: str | None, two_gad: int, seen: Seen | None = None) -> Calibrated | None:
    """`calibrated:NAME` (`off`: none; no token: the default one, if any) applied to a figure of `two_gad`; `seen` as
    for `find` (a default measured on what the person may not see is not applied for them)."""
    if name == "off":
        return None
    found = find(index, name, seen) if name else default(index)
    if found is None or (seen is not None and not seen(found.repos)):
        return None
    return Calibrated(found.name, found.ratio, found.low, found.high, found.months, found.first_day,
                      found.last_day, two_gad)
