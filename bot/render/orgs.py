"""`gad-bot orgs`: the e-mail domains seen, with their organization and 2GAD (metric.DomainRow in; text, JSON, CSV out)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from ..metric import DomainRow
from . import words
from .csvout import cell

COLUMNS = ("domain", "registrable_domain", "organization", "decided_by", "matched", "active_days", "two_gad",
           "developers", "commits", "people_by_email_rule")


def domain_to_dict(row: DomainRow) -> dict:
    return {"domain": row.domain, "registrable_domain": row.registrable, "organization": row.org,
            "decided_by": row.how, "matched": row.matched, "active_days": row.person_days, "two_gad": row.two_gad,
            "developers": row.developers, "commits": row.commits, "people_by_email_rule": row.people_by_email_rule}


CONTEXT = ("repositories_asked", "since", "until", "scope", "filters")  # what every row counted, as asked


def _context(query) -> list[str]:
    """The question's repositories, period, scope and filter tokens, so that a file passed on alone says what it
    counts (a metric... Query; None: no context columns)."""
    day = lambda d: d.isoformat() if d else ""  # noqa: E731
    scope = query.range.token() if query.range else query.scope.token()
    filters = [t for t in query.scope_tokens() if not t.startswith(("since:", "until:", "range:", "branch:", "refs:"))]
    filters += [f"author:{a}" for a in query.authors] + (["coauthors:on"] if query.coauthors else [])
    return [cell(" ".join(query.repos)), day(query.since), day(query.until), cell(scope), cell(" ".join(filters))]


def domains_to_csv(rows: Sequence[DomainRow], query=None) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    context = _context(query) if query is not None else []
    writer.writerow([*COLUMNS, *(CONTEXT if query is not None else ())])
    for row in rows:
        data = domain_to_dict(row)
        # domains come from commit e-mails, which anyone writes: no cell may run as a formula
        writer.writerow([cell(v) if isinstance(v, str) else v for v in (data[c] for c in COLUMNS)] + context)
    return out.getvalue()


def render_domains_text(rows: Sequence[DomainRow], rules_file: str | None, *, width: int = 120) -> str:
    """Unmatched domains first (what the operator may want to write rules for), then the matched ones."""
    from rich import box
    from rich.table import Table

    from .text import render_parts

    if not rows:
        return "No commits counted, so no domains to show.\n"
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for name, right in (("domain", False), ("organization", False), ("decided by", False), ("2GAD", True),
                        ("developers", True), ("commits", True)):
        table.add_column(name, justify="right" if right else "left", overflow="fold")
    unmatched = [r for r in rows if not r.matched]
    for i, row in enumerate(rows):
        how = row.how + (f" ({row.people_by_email_rule} by e-mail rule)" if row.people_by_email_rule else "")
        table.add_row(row.domain, row.org, how, words.number(row.two_gad), words.number(row.developers),
                      words.number(row.commits), end_section=i == len(unmatched) - 1 and i < len(rows) - 1)
    source = f"rules from {rules_file}" if rules_file else "no rules file (GAD_ORG_FILE is not set)"
    summary = (f"{words.plural(len(rows), 'domain')}: {len(unmatched)} not matched by a domain rule (listed first), "
               f"{len(rows) - len(unmatched)} matched; {source}. Rule format: deploy/orgs.example.")
    return render_parts([table, "", summary], width, False)
