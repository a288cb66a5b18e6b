"""`gad-bot calibrate`'s answer as text, JSON, CSV and a PNG of both curves (pure: Calibration in)."""

from __future__ import annotations

import csv
import io

from rich import box
from rich.table import Table
from rich.text import Text

from ..engine.calibrate import Calibration, CalibrationRow, PersonApart
from .chart import DPI, HEIGHT_PX, WIDTH_PX
from .csvout import cell
from .text import render_parts

LOGGED_COLOUR = "#C77C2E"
TWO_GAD_COLOUR = "#4A6FA5"


def _number(value: float) -> str:
    return f"{value:,.2f}"


def _ratio(row: CalibrationRow) -> str:
    return "-" if row.ratio is None else f"{row.ratio:.2f}"


def _error(row: CalibrationRow) -> str:
    return "-" if row.error_percent is None else f"{row.error_percent:+.1f} %"


def verdict(result: Calibration) -> str:
    """One sentence: the total, and whether it is within the study's 10 %."""
    total = result.total
    if total.ratio is None:
        return ("No one the timesheet logs committed in these repositories in the span, so there is nothing to "
                "compare; see the people listed apart below.")
    side = "above" if total.error_percent > 0 else "below"
    off = (f"{abs(total.error_percent):.1f} % {side} the timesheet" if round(total.error_percent, 1)
           else "equal to the timesheet")
    within = (f"within the study's {result.within_percent:g} %" if total.within
              else f"outside the study's {result.within_percent:g} %")
    return (f"2GAD {total.two_gad:,} person-days against {_number(total.logged_person_days)} logged "
            f"({result.hours_per_day:g} hours a day) for {len(result.compared):,} "
            f"{'person' if len(result.compared) == 1 else 'people'}: ratio {total.ratio:.2f}, {off}, {within}.")


def _months_table(result: Calibration) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for name in ("month", "logged person-days", "2GAD", "ratio", "error", f"within {result.within_percent:g} %"):
        table.add_column(name, justify="left" if name == "month" else "right", no_wrap=True)
    rows = result.months + (result.total,)
    for i, row in enumerate(rows):
        within = "-" if row.within is None else ("yes" if row.within else "no")
        table.add_row(row.period.lower() if row is result.total else row.period, _number(row.logged_person_days),
                      f"{row.two_gad:,}", _ratio(row), _error(row), within, end_section=i == len(rows) - 2)
    return table


def _apart_table(people: tuple[PersonApart, ...], figure: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    table.add_column("person", overflow="fold")
    table.add_column(figure, justify="right", no_wrap=True)
    table.add_column("why", overflow="fold")
    for person in people:
        value = _number(person.logged_person_days) if figure == "logged person-days" else f"{person.two_gad:,}"
        table.add_row(person.person, value, person.why)
    return table


def render_calibration_text(result: Calibration, *, width: int = 100) -> str:
    parts = [Text(f"{', '.join(result.repos)}: 2GAD beside the timesheet, {result.first_day.isoformat()} to "
                  f"{result.last_day.isoformat()}", style="bold"), "", verdict(result), "", _months_table(result)]
    if result.timesheet_only:
        parts += ["", f"In the timesheet, not compared ({len(result.timesheet_only):,}): their hours are left out "
                      "of the logged figures.", _apart_table(result.timesheet_only, "logged person-days")]
    if result.commits_only:
        parts += ["", f"Committers the timesheet does not list ({len(result.commits_only):,}): their days are left "
                      "out of 2GAD.", _apart_table(result.commits_only, "2GAD")]
    parts += ["", f"Read as: {result.export}; logged person-days are hours / {result.hours_per_day:g}; 2GAD counts "
                  f"the compared people only, {result.scope_words}."]
    return render_parts(parts, width, color=False)


def _row_dict(row: CalibrationRow) -> dict:
    return {"period": row.period, "first_day": row.first_day.isoformat(), "last_day": row.last_day.isoformat(),
            "logged_person_days": round(row.logged_person_days, 3), "two_gad": row.two_gad,
            "ratio": None if row.ratio is None else round(row.ratio, 4),
            "error_percent": None if row.error_percent is None else round(row.error_percent, 2),
            "within": row.within, "people": row.people}


def _apart_dict(person: PersonApart) -> dict:
    return {"person": person.person, "logged_person_days": round(person.logged_person_days, 3),
            "two_gad": person.two_gad, "why": person.why}


def calibration_to_dict(result: Calibration) -> dict:
    return {"repos": list(result.repos), "scope": result.scope_words, "export": result.export,
            "hours_per_day": result.hours_per_day, "within_percent": result.within_percent,
            "first_day": result.first_day.isoformat(), "last_day": result.last_day.isoformat(),
            "total": _row_dict(result.total), "months": [_row_dict(r) for r in result.months],
            "compared": list(result.compared),
            "timesheet_only": [_apart_dict(p) for p in result.timesheet_only],
            "commits_only": [_apart_dict(p) for p in result.commits_only]}


CSV_HEADER = ("kind", "period", "person", "logged_person_days", "two_gad", "ratio", "error_percent", "within",
              "why")


def calibration_to_csv(result: Calibration) -> str:
    """One table: a row per month, the total, then each person listed apart (kind says which)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    for row in result.months + (result.total,):
        d = _row_dict(row)
        writer.writerow(("total" if row is result.total else "month", row.period, "", d["logged_person_days"],
                         row.two_gad, "" if d["ratio"] is None else d["ratio"],
                         "" if d["error_percent"] is None else d["error_percent"],
                         "" if row.within is None else ("yes" if row.within else "no"), ""))
    for kind, people in (("timesheet_only", result.timesheet_only), ("commits_only", result.commits_only)):
        for person in people:
            writer.writerow((kind, "", cell(person.person), round(person.logged_person_days, 3), person.two_gad,
                             "", "", "", cell(person.why)))
    return out.getvalue()


def calibration_png(result: Calibration) -> bytes:
    """Both curves per month, in person-days: logged (timesheet) and 2GAD, on one 800x300 chart."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI)
    FigureCanvasAgg(figure)  # no pyplot: no global state
    axes = figure.add_subplot()
    labels = [row.period for row in result.months]
    positions = list(range(len(labels)))
    axes.plot(positions, [row.logged_person_days for row in result.months], marker="o", color=LOGGED_COLOUR,
              label=f"logged (hours / {result.hours_per_day:g})")
    axes.plot(positions, [row.two_gad for row in result.months], marker="o", color=TWO_GAD_COLOUR, label="2GAD")
    axes.set_title(f"2GAD beside the timesheet, ratio {_ratio(result.total)}", fontsize=11, loc="left",
                   parse_math=False)
    step = max(1, -(-len(labels) // 12))
    axes.set_xticks(positions[::step], labels[::step], fontsize=8)
    axes.set_ylabel("person-days", fontsize=8)
    axes.set_ylim(bottom=0)
    axes.legend(fontsize=8, frameon=False)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()
