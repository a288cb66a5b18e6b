"""The report as CSV (`format:csv`): a proper table whose every row carries what it counted.

Without `by:` the CSV is one row: the figures and their context. With `by:` the first column is
named after the breakdown (`month`, `person`, `repo`, ...), one row per breakdown row in report
order, then a `TOTAL` row. Every row ends in the context columns (the repositories and every
filter), so a file passed on alone still says what it counts, and in `hint`: empty, or the sentence
the other faces put beside a zero that is likely a slip (bot/engine/zeros.py; the JSON's `hint`). A
column, not a comment line: csv readers and spreadsheets take every line for a row.
"""

from __future__ import annotations

import csv
import io

from ..metric import Report, Totals

FIGURES = ("active_days", "two_gad", "developers", "commits")  # active_days is GAD (METRIC.md)
CONTEXT = ("repositories_asked", "repositories", "since", "until", "scope", "range", "paths", "exclude_paths",
           "authors", "orgs", "mailmap", "bots", "coauthors", "hint")  # hint: why a zero is likely a slip
# the estimate beside the figure, filled in the TOTAL row (or the one row without by:): a month's row holds no FTE
FTE = ("two_gad_person_months", "fte_person_months", "fte_threshold", "fte_half_years", "fte_partial_half_years")
TYPICAL = ("typical_releases", "typical_two_gad_p25", "typical_two_gad_median", "typical_two_gad_p75",
           "typical_interval_days_p25", "typical_interval_days_median", "typical_interval_days_p75")
CALIBRATED = ("calibration", "calibration_ratio", "calibrated_person_days", "calibrated_band_low",
              "calibrated_band_high")
RELEASE = ("release_range", "tagged", "previous", "previous_tagged", "interval_days", "prerelease", "tags")  # by:release
TOTAL_KEY = "TOTAL"
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(text: str) -> str:
    # a cell such as "=HYPERLINK(...)" (e-mails, names and paths are free text) must not run as a formula
    return "'" + text if text.startswith(_FORMULA_START) else text


def _figures(t: Totals) -> list:
    return [t.active_days, t.two_gad, t.developers, t.commits]


def _context(report: Report) -> list[str]:
    """The context cells: lists joined by spaces, dates in ISO, on/off for the switches; then the zero's hint."""
    day = lambda d: d.isoformat() if d else ""  # noqa: E731
    cells = [" ".join(report.asked or report.repos), " ".join(report.repos), day(report.since), day(report.until),
             report.scope, report.range or "", " ".join(report.paths), " ".join(report.exclude_paths),
             " ".join(report.authors), " ".join(report.orgs), "on" if report.mailmap else "off",
             "on" if report.bots else "off", "on" if report.coauthors else "off", report.hint or ""]
    return [cell(c) for c in cells]


def report_to_csv(report: Report) -> str:
    """Header, then one row (no `by:`) or the breakdown rows in report order and a final TOTAL row.

    by:org adds a `share_percent` column (each organization's part of the total active days)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    share = report.by == "org"
    whole = report.totals.person_days
    context = _context(report)

    def share_cell(totals: Totals) -> list:
        return [f"{100 * totals.person_days / whole:.2f}" if whole else ""] if share else []

    releases = report.by == "release"
    tags = report.release_tags or ""

    def release_cells(row) -> list:
        """What a by:release row counts (git's previous..this) and its tags' days; the TOTAL row has none."""
        if not releases:
            return []
        r = row.release if row is not None else None
        if r is None:
            return ["", "", "", "", "", "", cell(tags)]
        day = lambda d: d.isoformat() if d else ""  # noqa: E731
        return [cell(r.range), day(r.day), cell(r.previous or ""), day(r.previous_day),
                "" if r.interval_days is None else r.interval_days, "yes" if r.prerelease else "no", cell(tags)]

    heads, totals_cells = _estimates(report)
    if not report.by:
        writer.writerow([*FIGURES, *CONTEXT, *heads])
        writer.writerow(_figures(report.totals) + context + totals_cells)
        return out.getvalue()
    writer.writerow((report.by, *FIGURES, *(("share_percent",) if share else ()), *(RELEASE if releases else ()),
                     *CONTEXT, *heads))
    blank = [""] * len(heads)
    for row in report.rows:
        writer.writerow([cell(row.key)] + _figures(row.totals) + share_cell(row.totals) + release_cells(row) + context
                        + blank)
    writer.writerow([TOTAL_KEY] + _figures(report.totals) + share_cell(report.totals) + release_cells(None) + context
                    + totals_cells)
    return out.getvalue()


def _estimates(report: Report) -> tuple[list[str], list]:
    """The columns of vs:fte, the typical release and calibrated:NAME when the report has them, and their cells."""
    heads: list[str] = []
    cells: list = []
    if report.fte is not None:
        f = report.fte
        heads += FTE
        cells += [round(f.two_gad_person_months, 4), round(f.person_months, 4), f.threshold, len(f.halves),
                  " ".join(h.key for h in f.partial)]
    if report.typical is not None:
        t = report.typical
        i = t.interval_days
        heads += TYPICAL
        whole = lambda v: int(v) if float(v).is_integer() else round(v, 2)  # noqa: E731  (2, not 2.0)
        cells += [t.releases, *map(whole, (t.two_gad.p25, t.two_gad.median, t.two_gad.p75)),
                  *(map(whole, (i.p25, i.median, i.p75)) if i else ("", "", ""))]
    if report.calibrated is not None:
        c = report.calibrated
        heads += CALIBRATED
        cells += [cell(c.name), round(c.ratio, 4), round(c.person_days, 2), round(c.band[0], 2), round(c.band[1], 2)]
    return heads, cells
