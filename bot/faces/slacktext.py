"""Slack's encoding of message and command text, undone before the grammar sees it.

Slack sends `&`, `<` and `>` typed by a person as `&amp;`, `&lt;` and `&gt;`, and wraps what it
recognised in angle brackets: links (`<https://x|label>`, `<https://x>`), e-mail addresses
(`<mailto:a@b.c|a@b.c>`), channels (`<#C123|general>`), people (`<@U123>` or `<@U123|ann>`) and
special mentions (`<!here>`, `<!subteam^S123|@team>`). Every Slack entry point (slash command,
message shortcut, unfurl, modal) passes its text through `decode` once, so `/gad` reads what the
person typed: the grammar never sees an entity, and a `path:` with `&` can match.
See https://api.slack.com/reference/surfaces/formatting#escaping.
"""

from __future__ import annotations

import re

# One bracketed form: no `<` or `>` inside (a person's own are escaped), bounded so a long
# stranger's text cannot make the pattern work hard.
_BRACKETED = re.compile(r"<([^<>|]{1,3000})(?:\|([^<>]{0,3000}))?>")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))  # &amp; last: `&amp;lt;` is a typed `&lt;`


def _plain(match: re.Match) -> str:
    target, label = match.group(1), match.group(2)
    if target.startswith("mailto:"):
        return target[len("mailto:"):]
    if target.startswith("#"):  # a channel: its name when Slack gave one, else its id
        return "#" + (label or target[1:])
    if target.startswith("@"):  # a person: the id (names change and are not unique)
        return target
    if target.startswith("!"):  # <!here>, <!subteam^S123|@team>: what the person saw
        return label or "@" + target[1:]
    return target  # a link: the URL itself (the label is only how Slack shortened it)


def decode(text: str) -> str:
    """The text as the person typed it (`<https://github.com/a/b|github.com/a/b>` -> the URL)."""
    if not text:
        return ""
    out = _BRACKETED.sub(_plain, text)
    for entity, character in _ENTITIES:
        out = out.replace(entity, character)
    return out
