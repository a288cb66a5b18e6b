"""The compact 2GAD card of a tracked repository or organization: link unfurls, the message shortcut.

Pure: CardFigures in, Block Kit out. Three lines a person reads at a glance (all history, the last
12 weeks with a weekly sparkline) and a button that asks the full question privately.
"""

from __future__ import annotations

from ..engine.links import CARD_WEEKS, CardFigures
from . import blocks as kit
from .words import number, plural, sparkline

CARD_MORE_ACTION_ID = "gad_card_more"


def card_text(card: CardFigures) -> str:
    """The card in one line (notification and fallback text; the Workflow step's summary)."""
    return (f"{card.name}: 2GAD {number(card.two_gad)} person-days all time, "
            f"{number(card.recent_two_gad)} in the last {CARD_WEEKS} weeks, "
            f"{plural(card.developers, 'developer')}")


def card_blocks(card: CardFigures) -> list[dict]:
    what = "organization" if card.kind == "organization" else "repository"
    span = (f" · {card.first_day.isoformat()} to {card.last_day.isoformat()}"
            if card.first_day and card.last_day else "")
    lines = [f"*{kit.code(card.name)}* · 2GAD {what}",
             f"*2GAD {number(card.two_gad)} person-days* all time · {plural(card.developers, 'developer')} · "
             f"{plural(card.commits, 'commit')}{span}",
             f"Last {CARD_WEEKS} weeks: *2GAD {number(card.recent_two_gad)}* · "
             f"{plural(card.recent_developers, 'developer')}"
             + (f" · `{sparkline(card.weekly_two_gad)}`" if any(card.weekly_two_gad) else "")]
    return [kit.section("\n".join(lines)),
            {"type": "actions", "elements": [{
                "type": "button", "action_id": CARD_MORE_ACTION_ID, "value": card.name[:kit.BUTTON_VALUE_LIMIT],
                "text": kit.plain("Ask more (by week, privately)", kit.BUTTON_TEXT_LIMIT)}]}]


def effort_summary(name: str, report) -> str:
    """The Workflow step's one-line summary: 'web: 2GAD 16 person-days (0.8 person-months), 2 developers,
    9 commits, all history' (plain text: Workflow Builder shows it as typed)."""
    from ..metric import DAYS_PER_PERSON_MONTH
    from .words import period_words

    totals = report.totals
    return (f"{name}: 2GAD {number(totals.two_gad)} person-days "
            f"({totals.two_gad / DAYS_PER_PERSON_MONTH:.1f} person-months), "
            f"{plural(totals.developers, 'developer')}, {plural(totals.commits, 'commit')}, "
            f"{period_words(report.since, report.until)}")
