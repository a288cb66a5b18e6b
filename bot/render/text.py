"""Terminal text for the CLI, laid out by rich and returned as a string (no colour unless asked)."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from ..metric import Report
from ..engine.rows import RepoSummary
from . import words

_BY_LABEL = {"person": "person", "repo": "repository", "org": "organization", "release": "release"}


def _console(width: int, color: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system="standard" if color else None,
                      force_terminal=color, force_jupyter=False, force_interactive=False,
                      no_color=not color, highlight=False, markup=False, emoji=False,
                      legacy_windows=False, _environ={})  # pure: ignore COLUMNS, NO_COLOR, FORCE_COLOR
    return console, out


def render_parts(parts: Sequence[RenderableType | str], width: int, color: bool) -> str:
    console, out = _console(width, color)
    for part in parts:
        console.print(Text(part) if isinstance(part, str) else part)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def headline(report: Report) -> str:
    """'web and api: 2GAD 412 person-days (21.7 person-months), since 2024-01-01, only path:src'."""
    return words.headline_words(report)


def _totals_table(report: Report) -> Table:
    t = report.totals
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("2GAD", words.days_words(t.two_gad))
    grid.add_row("active days", f"{words.number(t.person_days)} (GAD: days with commits, summed over people)")
    grid.add_row("developers", words.number(t.developers))
    grid.add_row("commits", words.number(t.commits))
    grid.add_row("period", words.report_period_words(report))
    if report.range:
        ends = words.range_ends_words(report)
        grid.add_row("range", f"{report.range} ({words.git_log_words(report.range)})" + (f"; {ends}" if ends else ""))
        grid.add_row("span", words.span_words(report.first_day, report.last_day))
    filters = words.filter_tokens(report)
    if filters:
        grid.add_row("filters", " ".join(filters))
    if report.asked and set(report.asked) != set(report.repos):
        grid.add_row("asked", ", ".join(report.asked))
    grid.add_row("repositories" if len(report.repos) != 1 else "repository", _names(report.repos) or "none")
    if report.cocomo is not None:
        c = report.cocomo
        grid.add_row("vs COCOMO", f"{c.person_months:,.1f} person-months by basic COCOMO ({c.mode} mode, {c.counter}, "
                                  f"{words.number(c.sloc)} SLOC); 2GAD {c.two_gad_person_months:,.1f} "
                                  f"person-months; ratio {c.ratio:.2f}")
        per = words.cocomo_ksloc_words(report)
        if per:
            grid.add_row("per KSLOC", per)
    if report.fte is not None:
        grid.add_row("vs FTE", words.fte_words(report))
    if report.typical is not None:
        grid.add_row("typical", words.typical_words(report))
    if report.calibrated is not None:
        grid.add_row("calibrated", words.calibrated_words(report))
    return grid


# Column headers in a narrow terminal (under NARROW columns): the same figures, shorter names, so that a by:release
# table of eight columns fits 80 columns without folding tag names a character per line.
NARROW = 100
_SHORT = {"active days": "GAD", "developers": "devs"}


def _tight(report: Report, width: int) -> bool:
    """by:release's eight columns in a narrow terminal: shorter headers and no padding (the others fit as they are)."""
    return report.by == "release" and width < NARROW


def _breakdown_table(report: Report, width: int = 100) -> Table:
    cut = words.more_rows_words(report)
    table = Table(box=box.SIMPLE_HEAD, title=words.breakdown_title(report.by, len(report.rows) if cut else None),
                  title_justify="left", caption=cut, caption_justify="left",
                  show_edge=False, pad_edge=False, padding=(0, 0) if _tight(report, width) else (0, 1))
    releases = report.by == "release"
    rows = words.sorted_rows(report)
    # a row of by:person is one person: its "developers" would always read 1
    share = report.by == "org"
    figures = ("2GAD", "active days", "commits") if report.by == "person" else \
        ("2GAD", *(("share",) if share else ()), "active days", "developers", "commits")
    headers = [_SHORT.get(name, name) if _tight(report, width) else name for name in figures]
    total = report.totals

    def cells(t) -> list[str]:
        values = {"2GAD": words.number(t.two_gad), "active days": words.number(t.person_days),
                  "developers": words.number(t.developers), "commits": words.number(t.commits),
                  "share": words.percent(t.person_days, total.person_days) if total.person_days else "-"}
        return [values[name] for name in figures]

    body = [(words.row_label(row), _release_cells(row.release) if releases and row.release else [], cells(row.totals))
            for row in rows]
    body.append(("total", [""] * 3 if releases else [], cells(total)))
    # Names fold when the table is too wide (rich narrows the columns that may wrap first), never below what is left
    # of the width once days, intervals and figures (which never wrap) have theirs, and never below the longest name
    # up to 24 characters: a tag read a character per line is no table. Names that may not wrap made rich cut days
    # to "2021..." and drop the 2GAD column under 37-character tags; names held at 24 made an 80-column terminal
    # drop the developers and commits of by:release instead.
    fixed = [max([len(h)] + [len(c[i]) for _, _, c in body]) for i, h in enumerate(headers)]
    if releases:
        fixed += [max([len(h)] + [len(a[i]) for _, a, _ in body if a]) for i, h in ((1, "tagged"), (2, "interval"))]
    names = 2 if releases else 1
    gaps = (names + len(fixed)) * (1 if _tight(report, width) else 3)  # a column's padding and its rule
    room = max(10, (width - sum(fixed) - gaps) // names)
    longest = lambda texts: min(24, room, max((len(t) for t in texts), default=1))  # noqa: E731
    table.add_column(_BY_LABEL.get(report.by or "", report.by or "key"), overflow="fold",
                     min_width=longest([label for label, _, _ in body]))
    if releases:  # the release each row counts from (git's previous..this), the tag's day, the time between
        table.add_column("from", overflow="fold",
                         min_width=longest([r.release.previous or "(start)" for r in rows if r.release]))
        table.add_column("tagged", no_wrap=True)
        table.add_column("interval", no_wrap=True)
    for header in headers:
        table.add_column(header, justify="right", no_wrap=True)
    for i, (label, about, figures_cells) in enumerate(body):
        table.add_row(label, *about, *figures_cells, end_section=i == len(body) - 2)
    return table


def _release_cells(release) -> list[str]:
    """A by:release row's from, tagged and interval cells: 'v1.1.0', '2023-05-01', '2.0 months'
    ('35 days earlier' for a release tagged on an older commit than the one before it)."""
    gap, relation = words.release_gap(release)
    interval = {"after": gap, "before": f"{gap} earlier"}.get(relation or "", "first" if release.previous is None else "-")
    return [release.previous or "(start)", release.day.isoformat() if release.day else "-", interval]


def render_text(report: Report, *, width: int = 100, color: bool = False) -> str:
    """The report for a terminal: headline, totals, breakdown, trend sparkline and footnotes."""
    parts: list[RenderableType | str] = [Text(headline(report), style="bold"), "", _totals_table(report)]
    if report.hint:
        parts[1:1] = [report.hint]
    if report.by:
        parts += ["", _breakdown_table(report, width)]
        if _tight(report, width):
            parts.append("GAD: active days (2GAD is twice them); devs: developers")
    trend = words.trend_words(report, max_points=max(8, width - 4))
    if trend:
        caption, spark = trend
        parts += ["", f"Trend: {caption}", f"  {spark}"]
    notes = words.footnotes(report)
    if notes:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for note in notes:
            grid.add_row("  -", note)
        parts += ["", "Notes:", grid]
    return render_parts(parts, width, color)


LISTED_AT_MOST = 50  # more repositories than this: counts and the ones to look at; `--all` lists every one
NAMED_AT_MOST = 20  # a report over more repositories names the first ones and counts the rest (issue 32: 1,161)


def _names(repos: Sequence[str]) -> str:
    if len(repos) <= NAMED_AT_MOST:
        return ", ".join(repos)
    return ", ".join(repos[:10]) + f" and {len(repos) - 10:,} more (by:repo lists them all, --json names them)"


def render_repos_text(rows: Sequence[RepoSummary], *, width: int = 100, color: bool = False,
                      every: bool = False) -> str:
    """`gad-bot repos`: name, commits, last sync, status and (already redacted) source of each repository; past
    LISTED_AT_MOST of them (an organization of thousands) the counts and only the rows to look at, unless `every`."""
    if not rows:
        return "No repositories are tracked yet; add one with `gad-bot track URL`.\n"
    rows = sorted(rows, key=lambda r: not r.problem) if len(rows) > LISTED_AT_MOST else list(rows)
    shown = rows if every or len(rows) <= LISTED_AT_MOST else [r for r in rows if r.problem][:LISTED_AT_MOST]
    parts: list = []
    if shown:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column("name", overflow="fold")
        table.add_column("commits", justify="right", no_wrap=True)
        table.add_column("last sync", no_wrap=True)
        table.add_column("status", overflow="fold")
        table.add_column("source", overflow="fold")
        for row in shown:
            table.add_row(row.name,
                          words.number(row.commits) if row.commits is not None else "-",
                          words.utc_words(row.last_sync) if row.last_sync is not None else "never",
                          _repo_status(row), row.source)
        parts += [table, ""]
    return render_parts(parts + repos_summary_lines(rows, len(shown)), width, color)


def _repo_status(row: RepoSummary) -> str:
    if row.state != "tracked":
        retry = f"; next try {words.utc_words(row.next_attempt)}" if row.next_attempt else ""
        return f"not cloned ({row.org} lists it): {row.last_error}{retry}"
    if row.missing_objects:
        return f"missing objects: {row.missing_objects} (gad-bot doctor says how to repair it)"
    return f"failed: {row.last_error}" if row.last_error else "ok"


def repos_summary_lines(rows: Sequence[RepoSummary], shown: int) -> list[str]:
    """The counts under `repos` (and `status`): tracked, failing, not cloned, what failed first, what was left out."""
    tracked = [r for r in rows if r.state == "tracked"]
    failing = [r for r in tracked if r.last_error]
    not_cloned = [r for r in rows if r.state != "tracked"]
    summary = words.plural(len(tracked), "repository", "repositories") + " tracked"
    if failing:
        summary += f", {len(failing):,} failing to sync"
    lines = [summary]
    if not_cloned:
        lines.append(f"{words.plural(len(not_cloned), 'repository', 'repositories')} an organization lists could not "
                     f"be cloned: tried again later (`gad-bot untrack NAME` leaves one out)")
    if len(rows) > LISTED_AT_MOST and (failing or not_cloned):
        first = (not_cloned or failing)[0]
        lines.append(f"First: {first.name}: {first.last_error}")
    if shown < len(rows):
        lines.append(("Listed above: the ones to look at. " if shown else "")
                     + f"`gad-bot repos --all` lists all {len(rows):,}.")
    return lines
