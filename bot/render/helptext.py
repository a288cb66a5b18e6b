"""`gad-bot help`: the query grammar as plain terminal text (no rich: help starts at once).

`render_help_text` lays out its lines with textwrap alone, so `gad-bot help` and `gad-bot report --help`
load neither rich (the tables of bot/render/text.py) nor numpy.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..engine.examples import examples as tracked_examples
from ..engine.query import GRAMMAR
from . import words

if TYPE_CHECKING:
    from ..engine.examples import Tracked


def token_lines(tokens, width: int = 88) -> list[str]:
    """Each token on a line of its own, its meaning and an example indented beneath it."""
    lines = []
    for token in tokens:
        lines.append(f"  {token.form}")
        lines += textwrap.wrap(f"{token.meaning}; e.g. {token.example}", width, initial_indent=" " * 6,
                               subsequent_indent=" " * 6)
    return lines


def render_help_text(commands: Sequence[tuple[str, str]] = (), found: Tracked | None = None) -> str:
    """The query grammar for a terminal: every token with its meaning and an example, periods, examples
    (about what is tracked, `found`, else generic ones and how to track), Slack's own commands, then
    `commands` ((usage, what it does) of the CLI's commands)."""
    from ..engine.periods import PERIOD_FORMS
    from ..engine.query import TOKENS

    lines = ["2GAD (Git Active Days x 2) measures software effort in person-days.", "",
             "Usage: gad-bot report REPO... [TOKENS]   (in Slack: /gad REPO... [TOKENS])", "",
             "Tokens, in any order after the repository or project names:", *token_lines(TOKENS)]
    lines += ["", *textwrap.wrap(f"PERIOD is {PERIOD_FORMS}.".replace("`", ""), 88), "", "Examples:"]
    lines += [f"  gad-bot {e}" if e.startswith("compare ") else f"  gad-bot report {e}"
              for e in tracked_examples(found) if not e.startswith("subscribe ")]
    if found is None:
        lines += textwrap.wrap(words.untracked_examples_words().replace("`", ""), 88)
    lines += ["", *textwrap.wrap("In Slack, /gad also takes: " + GRAMMAR.split("Other commands: ", 1)[1].replace("`", ""), 88,
                                 subsequent_indent="  ")]
    if commands:
        usage_width = max(len(u) for u, _ in commands)
        lines += ["", "Commands:", *(f"  {u:<{usage_width}}  {what}" for u, what in commands)]
    lines += ["", f"{words.SAMPLE_ANSWERS_TITLE}:",
              *(f"  {asked}\n    -> {answer.replace('`', '')}" for asked, answer in words.SAMPLE_ANSWERS)]
    lines += ["", words.UNITS_NOTE]
    return "\n".join(lines) + "\n"
