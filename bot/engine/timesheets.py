"""Timesheet exports read into logged hours per person and day, for `gad-bot calibrate` (issue 19 part 3).

    read_timesheet(data, columns=None) -> Timesheet  (raises TimesheetError listing every bad row)

Pure parsing, no index: which columns hold the person, the date and the hours (the headers of
common exports are recognised, others are named with `--columns`), one typed `LoggedDay` per
person and day. The file is hostile: its size and row count are bounded, nothing in it reaches a
shell or a path, and a file with any bad row yields no figures at all, only one sentence per bad
row (the first MAX_ERRORS_SHOWN of them, then how many more).

Several rows for one person and day are normal in exports that log per task or per time entry
(Toggl, Clockify, Harvest, Tempo, Kimai): their hours are summed. A row whose every cell repeats
an earlier row's is a duplicated line (an export pasted twice, a copy and paste): an error.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime

from ..errors import GadError
from ..metric import person_key

MAX_BYTES = 20 * 1024 * 1024  # a year of per-entry rows for a large team is a few MiB
MAX_ROWS = 200_000
MAX_CELL = 1_000  # characters in any cell we read (a name, a date, hours)
MAX_HOURS_PER_DAY = 24.0
MAX_ERRORS_SHOWN = 20
EARLIEST = date(1970, 1, 1)
LATEST = date(2100, 12, 31)


class TimesheetError(GadError):
    """The timesheet cannot be used as it is; str() lists what to fix, one sentence per problem."""


@dataclass(frozen=True)
class Export:
    """A timesheet export whose headers gad-bot recognises, and the columns it reads from it."""

    name: str
    person: tuple[str, ...]  # one column, or (first name, last name) joined with a space
    date: str
    hours: str
    signature: tuple[str, ...]  # headers that tell this export from the others


# Headers as these tools write them (compared without case); docs/calibrate.md lists them.
EXPORTS = (
    Export("Clockify detailed report", ("email",), "start date", "duration (decimal)",
           ("start date", "duration (decimal)", "email")),
    Export("Toggl Track detailed report", ("email",), "start date", "duration",
           ("start date", "start time", "duration", "email")),
    Export("Harvest detailed time report", ("first name", "last name"), "date", "hours",
           ("date", "hours", "first name", "last name")),
    Export("Jira Tempo worklogs", ("full name",), "work date", "hours", ("work date", "hours", "full name")),
    Export("Kimai export", ("email",), "date", "duration", ("date", "begin", "end", "duration", "email")),
    Export("Kimai export", ("e-mail",), "date", "duration", ("date", "begin", "end", "duration", "e-mail")),
    Export("Kimai export", ("user",), "date", "duration", ("date", "begin", "end", "duration", "user")),
    Export("person, date, hours", ("email",), "date", "hours", ("email", "date", "hours")),
    Export("person, date, hours", ("person",), "date", "hours", ("person", "date", "hours")),
    Export("person, date, hours", ("name",), "date", "hours", ("name", "date", "hours")),
)
COLUMN_KEYS = ("person", "date", "hours")


@dataclass(frozen=True)
class Columns:
    """Where the person, date and hours are in the header row (0-based positions)."""

    export: str  # the export recognised, or "--columns"
    person: tuple[int, ...]
    date: int
    hours: int
    names: tuple[str, ...]  # the header cells used, as written, for messages


@dataclass(frozen=True)
class LoggedDay:
    """One person's hours on one day, summed over the rows that logged them."""

    person: str  # an e-mail (lower-cased as the metric does) or a name as written (spaces collapsed)
    is_email: bool
    day: date
    hours: float
    lines: tuple[int, ...]  # the file's line numbers that logged them


@dataclass(frozen=True)
class Timesheet:
    export: str
    columns: tuple[str, ...]  # the header cells read: person (one or two), date, hours
    days: tuple[LoggedDay, ...]  # sorted by person, then day
    rows: int  # data rows read

    @property
    def first_day(self) -> date | None:
        return min((d.day for d in self.days), default=None)

    @property
    def last_day(self) -> date | None:
        return max((d.day for d in self.days), default=None)


def parse_columns_option(text: str) -> dict[str, str]:
    """`person=Email,date=Start date,hours=Duration (decimal)` -> {"person": "Email", ...}."""
    found: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep or key not in COLUMN_KEYS or not value:
            raise TimesheetError(f"--columns takes person=HEADER,date=HEADER,hours=HEADER (e.g. "
                                 f"`--columns 'person=Email,date=Start date,hours=Duration (decimal)'`); "
                                 f"{part.strip()!r} is not one of those.")
        found[key] = value
    missing = [k for k in COLUMN_KEYS if k not in found]
    if missing:
        raise TimesheetError(f"--columns names no {' or '.join(missing)} column; give all three, e.g. "
                             "`--columns 'person=Email,date=Start date,hours=Duration (decimal)'`.")
    return found


def fold(text: str) -> str:
    """A header or a name compared as a person reads it: case, runs of spaces and a byte-order mark ignored."""
    return " ".join(text.replace("\ufeff", "").split()).casefold()


def find_columns(header: list[str], given: dict[str, str] | None = None) -> Columns:
    """The columns to read, from `--columns` or by recognising the export; one sentence when they are not there."""
    folded = [fold(h) for h in header]
    seen = ", ".join(repr(h.strip()) for h in header[:30]) or "none"
    if given:
        missing = [f"{key}={value!r}" for key, value in given.items() if fold(value) not in folded]
        if missing:
            raise TimesheetError(f"line 1 has no column {' or '.join(missing)} (its headers: {seen}); "
                                 "name headers exactly as the first line writes them.")
        at = {key: folded.index(fold(value)) for key, value in given.items()}
        return Columns("--columns", (at["person"],), at["date"], at["hours"],
                       (header[at["person"]].strip(), header[at["date"]].strip(), header[at["hours"]].strip()))
    for export in EXPORTS:
        if all(s in folded for s in export.signature):
            person = tuple(folded.index(p) for p in export.person)
            where = (*person, folded.index(export.date), folded.index(export.hours))
            return Columns(export.name, person, where[-2], where[-1], tuple(header[i].strip() for i in where))
    raise TimesheetError(f"line 1's headers ({seen}) are not an export gad-bot knows (Toggl Track, Clockify, "
                         "Harvest, Jira Tempo, Kimai, or person,date,hours); name the columns with "
                         "`--columns 'person=HEADER,date=HEADER,hours=HEADER'`.")


_DECIMAL = re.compile(r"^\d{1,6}(?:[.,]\d{1,6})?$")
_CLOCK = re.compile(r"^(\d{1,5}):([0-5]\d)(?::([0-5]\d))?$")


def parse_hours(text: str) -> float | None:
    """Decimal hours (`7.5`, `7,5`) or a duration (`7:30`, `07:30:00`); None when it is neither."""
    text = text.strip()
    sign = -1.0 if text.startswith("-") else 1.0  # negative hours are a mistake the caller names
    text = text.removeprefix("-")
    if _DECIMAL.match(text):
        return sign * float(text.replace(",", "."))
    clock = _CLOCK.match(text)
    if clock:
        hours, minutes, seconds = (int(g or 0) for g in clock.groups())
        return sign * (hours + minutes / 60 + seconds / 3600)
    return None


_ISO = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ].*)?$")  # Tempo writes `2024-01-21 00:00`
_US = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})(?:[ ,].*)?$")  # Clockify's and Toggl's default MM/DD/YYYY
_DOTTED = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})(?: .*)?$")  # DD.MM.YYYY (German locales, Kimai)


def parse_day(text: str, date_format: str | None = None) -> date | None:
    """The calendar day a cell names, or None when it names none."""
    text = text.strip()
    try:
        if date_format:
            return datetime.strptime(text, date_format).date()
        for pattern, order in ((_ISO, (0, 1, 2)), (_US, (2, 0, 1)), (_DOTTED, (2, 1, 0))):
            match = pattern.match(text)
            if match:
                parts = match.groups()
                return date(int(parts[order[0]]), int(parts[order[1]]), int(parts[order[2]]))
    except ValueError:
        return None
    return None


class _Slashes:
    """Whether a file's slashed dates could be day-first as well as month-first: `03/01/2024` is 1 March or 3
    January, and when no date in the file has a part above 12 nothing tells which (a file read the wrong way
    turned 2-5 January into February to May, and the ratio to 12.00)."""

    def __init__(self) -> None:
        self.example: str | None = None
        self.told = False  # a date with a part above 12 says which way the file is written

    def see(self, text: str) -> None:
        match = _US.match(text.strip())
        if match is None:
            return
        first, second = int(match.group(1)), int(match.group(2))
        if first > 12 or second > 12:
            self.told = True
        elif self.example is None and first != second:
            self.example = text.strip()[:40]

    def ambiguous(self) -> bool:
        return self.example is not None and not self.told

    def refusal(self) -> str:
        return (f"the timesheet's dates read both day-first and month-first ({self.example!r}: no day in the file is "
                "above 12, so nothing tells which); say how they are written with `--date-format %d/%m/%Y` "
                "(day first) or `--date-format %m/%d/%Y` (month first).")


def _person(cells: list[str], columns: Columns) -> tuple[str, bool]:
    joined = " ".join(cells[i] for i in columns.person)
    # a name is printed to a terminal: no escape sequences or other control characters from the file
    text = " ".join("".join(c for c in joined if unicodedata.category(c)[0] != "C").split())
    is_email = "@" in text
    return (person_key(text) if is_email else text), is_email


def _decode(data: bytes) -> str:
    if len(data) > MAX_BYTES:
        raise TimesheetError(f"the timesheet is larger than {MAX_BYTES // (1024 * 1024)} MiB; export a shorter "
                             "period or fewer columns.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TimesheetError(f"the timesheet is not UTF-8 text (byte {error.start + 1:,} is not); save it as "
                             "\"CSV UTF-8\" and try again.") from None


class _Problems:
    """Bad rows as they are found: all counted, the MAX_ERRORS_SHOWN lowest lines kept (memory stays small
    however bad the file is)."""

    def __init__(self) -> None:
        self.kept: list[tuple[int, str]] = []  # (line, sentence)
        self.count = 0

    def add(self, line: int, sentence: str) -> None:
        self.count += 1
        self.kept.append((line, sentence))
        if len(self.kept) > 2 * MAX_ERRORS_SHOWN:
            self.kept = sorted(self.kept, key=lambda problem: problem[0])[:MAX_ERRORS_SHOWN]

    def __bool__(self) -> bool:
        return self.count > 0

    def text(self) -> str:
        """Every problem in line order, one sentence each; the first MAX_ERRORS_SHOWN, then how many more."""
        shown = [sentence for _, sentence in sorted(self.kept, key=lambda problem: problem[0])[:MAX_ERRORS_SHOWN]]
        more = self.count - len(shown)
        head = (f"the timesheet has {self.count:,} bad row{'s' if self.count != 1 else ''}; nothing was "
                "computed. Fix them and run again:")
        return "\n".join([head, *(f"  {e}" for e in shown), *([f"  and {more:,} more."] if more else [])])


def read_timesheet(data: bytes, columns: dict[str, str] | None = None, *, date_format: str | None = None,
                   max_rows: int = MAX_ROWS) -> Timesheet:
    """Every person-day the export logs; TimesheetError listing every bad row when any is bad."""
    text = _decode(data)
    first_line = text.split("\n", 1)[0]
    delimiter = ";" if first_line.count(";") > first_line.count(",") else ","  # European exports
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise TimesheetError(f"line 1 is not a CSV header ({error}); the first line names the columns.") from None
    if not header or not any(h.strip() for h in header):
        raise TimesheetError("the timesheet is empty; its first line names the columns (person, date, hours).")
    found = find_columns(header, columns)
    width = max(found.person + (found.date, found.hours)) + 1
    errors = _Problems()
    first_seen: dict[bytes, int] = {}  # a digest of each row's cells -> its line: 16 bytes a row, whatever its width
    summed: dict[tuple[str, bool, date], list] = {}
    slashed = _Slashes()  # MM/DD/YYYY read as written unless every date reads both ways (then refused)
    rows = 0
    line = 1  # the line the next record starts on
    while True:
        start = line + 1
        try:
            cells = next(reader, None)
        except csv.Error as error:
            errors.add(start, f"line {start}: not readable as CSV ({error}).")
            break
        line = reader.line_num
        if cells is None:
            break
        if not any(c.strip() for c in cells):
            continue  # a blank line
        rows += 1
        if rows > max_rows:
            raise TimesheetError(f"the timesheet has more than {max_rows:,} rows; export a shorter period "
                                 "(calibrate a year at a time, for instance).")
        if any(len(c) > MAX_CELL for c in cells):
            errors.add(start, f"line {start}: a cell is longer than {MAX_CELL:,} characters; this is not a "
                              "timesheet row.")
            continue
        key = hashlib.blake2b("\x00".join(c.strip() for c in cells).encode(), digest_size=16).digest()
        if key in first_seen:
            errors.add(start, f"line {start} repeats line {first_seen[key]} exactly (a duplicated person-day "
                              "row); remove one of them.")
            continue
        first_seen[key] = start
        if len(cells) < width:
            errors.add(start, f"line {start} has {len(cells)} cells, too few to hold the {found.names[-1]!r} "
                              "column; every row needs the person, date and hours.")
            continue
        person, is_email = _person(cells, found)
        if date_format is None:
            slashed.see(cells[found.date])
        day = parse_day(cells[found.date], date_format)
        hours = parse_hours(cells[found.hours])
        problems = []
        if not person:
            problems.append(f"no person in {' '.join(found.names[:-2])!r}")
        if day is None:
            how = f"as {date_format}" if date_format else "as YYYY-MM-DD, MM/DD/YYYY or DD.MM.YYYY"
            problems.append(f"date {cells[found.date].strip()[:40]!r} is not a date {how} (or use --date-format)")
        elif not EARLIEST <= day <= LATEST:
            problems.append(f"date {day.isoformat()} is outside {EARLIEST.year}-{LATEST.year}")
        if hours is None:
            problems.append(f"hours {cells[found.hours].strip()[:40]!r} are not a number (7.5) or a duration (7:30)")
        elif hours < 0:
            problems.append(f"hours {cells[found.hours].strip()[:40]!r} are negative")
        elif hours > MAX_HOURS_PER_DAY:
            problems.append(f"{hours:g} hours is more than a day holds")
        if problems:
            errors.add(start, f"line {start}: " + "; ".join(problems) + ".")
            continue
        entry = summed.setdefault((person, is_email, day), [0.0, []])
        entry[0] += hours
        entry[1].append(start)
    if slashed.ambiguous():
        raise TimesheetError(slashed.refusal())
    days = []
    for (person, is_email, day), (hours, lines) in sorted(summed.items(), key=lambda item: (item[0][0], item[0][2])):
        if hours > MAX_HOURS_PER_DAY + 1e-9:
            errors.add(lines[0], f"lines {', '.join(map(str, lines[:10]))}{' ...' if len(lines) > 10 else ''} "
                                 f"log {hours:g} hours for {person} on {day.isoformat()}, more than a day holds.")
            continue
        days.append(LoggedDay(person, is_email, day, round(hours, 6), tuple(lines)))
    if errors:
        raise TimesheetError(errors.text())
    if not days:
        raise TimesheetError("the timesheet has a header but no rows; export a period with logged hours.")
    return Timesheet(found.export, found.names, tuple(days), rows)
