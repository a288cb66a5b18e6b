"""`compare`: a metric.CompareReport as Block Kit, terminal text, JSON and CSV (pure, like the rest of render/)."""

from __future__ import annotations

import csv
import io
import math

from ..metric import CompareReport, CompareRow
from . import words
from .csvout import cell

# Every column of the CSV, in order (the JSON uses the same names).
COLUMNS = ("item", "repositories", "active_days", "two_gad", "two_gad_person_months", "developers", "commits",
           "first_day", "last_day", "span_months", "active_months", "mean_two_gad_per_active_month",
           "busiest_month", "busiest_month_two_gad", "sloc", "cocomo_person_months", "ratio_two_gad_to_cocomo",
           "two_gad_per_ksloc", "line_counter", "cocomo_mode", "range", "range_start_day", "range_end_day", "range_interval_days",
           "since", "until", "scope", "filters", "hint")
_TYPED = ("item", "range", "filters", "hint")  # cells people typed: never run as a spreadsheet formula


def _round(value: float | None, digits: int = 2):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(value, digits)


def row_to_dict(row: CompareRow) -> dict:
    """Every column of one item, JSON types only."""
    c = row.cocomo
    return {
        "item": row.item, "repositories": list(row.repos), "range": row.range, "active_days": row.totals.active_days,
        "two_gad": row.two_gad, "two_gad_person_months": _round(row.two_gad_person_months),
        "developers": row.totals.developers, "commits": row.totals.commits,
        "first_day": row.first_day.isoformat() if row.first_day else None,
        "last_day": row.last_day.isoformat() if row.last_day else None,
        "span_months": _round(row.span_months), "active_months": row.active_months,
        "mean_two_gad_per_active_month": _round(row.mean_two_gad_per_active_month),
        "busiest_month": row.busiest_month, "busiest_month_two_gad": row.busiest_two_gad if row.busiest_month else None,
        "sloc": c.sloc if c else None, "cocomo_person_months": _round(c.person_months) if c else None,
        "ratio_two_gad_to_cocomo": _round(c.ratio, 3) if c else None, "line_counter": c.counter if c else None,
        "two_gad_per_ksloc": _round(c.two_gad_per_ksloc, 3) if c else None,
        "cocomo_mode": c.mode if c else None, "hint": row.hint,
        "range_start_day": words_day(row.range_start_day), "range_end_day": words_day(row.range_end_day),
        "range_interval_days": row.range_interval_days,
    }


def compare_to_dict(report: CompareReport) -> dict:
    return {"compare": [row_to_dict(r) for r in report.rows], "since": words_day(report.since),
            "until": words_day(report.until), "period": compare_period_words(report),
            "range": report.range, "scope": report.scope_words, "filters": list(report.filters),
            "vs_cocomo": report.vs_cocomo,
            "footnotes": words.compare_footnotes(report),
            "units": {"person_month_days": 19, "person_year_days": 228}}


def words_day(value) -> str | None:
    return value.isoformat() if value is not None else None


def compare_to_csv(report: CompareReport) -> str:
    """One line per item with every column (empty cells where a figure does not apply)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    shared = {"since": words_day(report.since), "until": words_day(report.until), "scope": report.scope_words,
              "filters": " ".join(report.filters)}  # a file passed on alone still says what it counts
    for row in report.rows:
        data = row_to_dict(row) | shared
        data["repositories"] = " ".join(row.repos)
        cells = [cell(str(data[c])) if c in _TYPED and data[c] is not None else "" if data[c] is None else data[c]
                 for c in COLUMNS]
        writer.writerow(cells)
    return out.getvalue()


def _pm(value: float) -> str:
    return f"{value:,.1f}"


def _cells(row: CompareRow) -> dict[str, str]:
    """Each figure of a row as a person reads it; units spelt out in the names, person-months and COCOMO
    only beside `vs:cocomo` (where the two are compared in COCOMO's unit)."""
    mean = row.mean_two_gad_per_active_month
    out = {"2GAD person-days": words.number(row.two_gad)}
    if row.cocomo is not None:
        out["2GAD person-months"] = _pm(row.two_gad_person_months)
    if row.range_end_day is not None:  # a range's ends: when each was tagged, and the time between them
        start, _, end = (row.range or "").partition("..")
        out["range"] = (f"{start} ({row.range_start_day.isoformat()}) to {end} ({row.range_end_day.isoformat()}), "
                        f"{words.interval_words(row.range_start_day, row.range_end_day)}"
                        if row.range_start_day else f"up to {end} ({row.range_end_day.isoformat()})")
    out |= {
        "developers": words.number(row.totals.developers),
        "commits": words.number(row.totals.commits),
        "active": (f"{row.first_day.isoformat()} to {row.last_day.isoformat()}" if row.first_day and row.last_day
                   else "no commits"),
        "span": words.span_length(row.first_day, row.last_day),
        "2GAD / active month": f"{mean:,.1f}" if mean is not None else "-",
        "busiest month": f"{row.busiest_month} (2GAD {words.number(row.busiest_two_gad)})" if row.busiest_month else "-",
    }
    if row.cocomo is not None:
        c = row.cocomo
        out["SLOC"] = words.number(c.sloc)
        out["COCOMO person-months"] = _pm(c.person_months)
        out["ratio"] = "-" if math.isnan(c.ratio) else f"{c.ratio:.2f}"
        if c.two_gad_per_ksloc is not None:
            out["2GAD / KSLOC"] = f"{c.two_gad_per_ksloc:,.2f} person-days"
    return out


def compare_period_words(report: CompareReport) -> str:
    """What every item counts: 'range v1.0..v2.0', 'each item over its own range' (items with ranges of their
    own are not all history), or the period; with since:/until: beside a range, both."""
    ranged = f"range {report.range}" if report.range else \
        "each item over its own range" if report.rows and all(r.range for r in report.rows) else None
    period = words.period_words(report.since, report.until)
    if ranged is None:
        return period
    return f"{ranged}, {period}" if report.since or report.until else ranged


def headline(report: CompareReport) -> str:
    return f"Side by side: {', '.join(r.item for r in report.rows)} ({compare_period_words(report)})"


def render_compare_text(report: CompareReport, *, width: int = 150) -> str:
    """A table, one row per item, when every figure fits on one line within `width`; otherwise one card
    per item (its name on a line of its own, a figure per line), so that nothing is ever cut or wraps into
    what looks like another row. Then the footnotes."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from .text import render_parts

    cells = [_cells(r) for r in report.rows]
    names = list(dict.fromkeys(k for c in cells for k in c))
    columns = {"item": [r.item for r in report.rows]} | {n: [c.get(n, "-") for c in cells] for n in names}
    # between two columns: the right padding of one, SIMPLE_HEAD's blank divider, the left padding of the next
    needed = sum(max(len(head), *map(len, values)) for head, values in columns.items()) + 3 * (len(columns) - 1)
    if needed <= width:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
        for head in columns:
            table.add_column(head, justify="left" if head in ("item", "range", "active", "busiest month") else "right",
                             no_wrap=True)
        for i in range(len(report.rows)):
            table.add_row(*(values[i] for values in columns.values()))
        body = [table]
    else:
        label = max(map(len, names))
        body = []
        for rank, (row, cell) in enumerate(zip(report.rows, cells), 1):
            card = Table.grid(padding=(0, 2))
            card.add_column(no_wrap=True)
            card.add_column(overflow="fold")
            for name, value in cell.items():
                card.add_row(f"    {name:<{label}}", value)
            body += [Text(f"{rank}. {row.item}", style="bold", overflow="fold"), card, ""]
        body = body[:-1]
    notes = Table.grid(padding=(0, 1))
    notes.add_column(no_wrap=True)
    notes.add_column(overflow="fold")
    for note in words.compare_footnotes(report):
        notes.add_row("  -", note)
    return render_parts([Text(headline(report), style="bold"), "", *body, "", "Notes:", notes], width, False)


def _bar(value: int, top: int, width: int = 10) -> str:
    if top <= 0:
        return "·" * width
    filled = max(1 if value > 0 else 0, round(width * value / top))
    return "█" * filled + "·" * (width - filled)


def compare_blocks(report: CompareReport, query_text: str, *, public: bool = False,
                   shared_by: str | None = None, share_id: str | None = None) -> tuple[str, list[dict]]:
    """Block Kit that reads as a table on a phone: a bar chart of 2GAD, then one two-column card per item."""
    from . import blocks as kit

    fallback = kit._fallback(headline(report) + ": " + "; ".join(
        f"{r.item} 2GAD {words.number(r.two_gad)}" for r in report.rows))
    top = max((r.two_gad for r in report.rows), default=0)
    label_width = min(24, max(len(r.item) for r in report.rows))
    bars = "\n".join(f"{words.clip(r.item, label_width).ljust(label_width)} {_bar(r.two_gad, top)} "
                     f"{words.number(r.two_gad)}" for r in report.rows)
    out = [kit.header("2GAD side by side"),
           kit.section(f"*{kit.escape_mrkdwn(headline(report))}*\n```{kit.escape_mrkdwn(bars.replace('`', 'ˋ'))}```")]
    for rank, (row, cell) in enumerate(zip(report.rows, [_cells(r) for r in report.rows]), 1):
        fields = [kit.mrkdwn(f"*{name}*\n{kit.escape_mrkdwn(value)}", 2000) for name, value in cell.items()]
        out.append({"type": "section", "text": kit.mrkdwn(f"*{rank}.* {kit.code(row.item)}"), "fields": fields[:10]})
        if len(fields) > 10:  # Slack takes 10 fields a section: the rest (COCOMO's ratio, 2GAD per KSLOC) follow
            out.append({"type": "section", "fields": fields[10:20]})
    notes = [kit._prose(n, 2000) for n in words.compare_footnotes(report)]
    if shared_by:
        notes.insert(0, f"Shared by {kit._sharer(shared_by)}")
    out.append(kit.context(notes))
    if not public:
        out.append(kit.share_button(query_text, share_id))
    return fallback, kit.fit_blocks(out)
