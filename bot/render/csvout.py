"""The report as CSV (`format:csv`): one row per breakdown row, then a TOTAL row."""

from __future__ import annotations

import csv
import io

from ..metric import Report, Totals

COLUMNS = ("key", "person_days", "two_gad", "developers", "commits")
TOTAL_KEY = "TOTAL"
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(key: str) -> str:
    # a key such as "=HYPERLINK(...)" (e-mails are free text) must not run as a spreadsheet formula
    return "'" + key if key.startswith(_FORMULA_START) else key


def _line(key: str, t: Totals) -> list:
    return [_cell(key), t.person_days, t.two_gad, t.developers, t.commits]


def report_to_csv(report: Report) -> str:
    """Header, the breakdown rows in report order (none without a breakdown), and a final TOTAL row.

    by:org adds a `share_percent` column (each organization's part of the total person-days)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    share = report.by == "org"
    whole = report.totals.person_days
    writer.writerow(COLUMNS + (("share_percent",) if share else ()))

    def share_cell(totals: Totals) -> list:
        return [f"{100 * totals.person_days / whole:.2f}" if whole else ""] if share else []

    if report.by:
        for row in report.rows:
            writer.writerow(_line(row.key, row.totals) + share_cell(row.totals))
    writer.writerow(_line(TOTAL_KEY, report.totals) + share_cell(report.totals))
    return out.getvalue()
