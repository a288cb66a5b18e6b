"""May this answer be posted in that channel? One rule for every face that posts for others to read.

Share, the Home tab's forms, `public` answers, link cards, the message shortcut's thread and digests
post where more people read than the one who asked. Such a post happens only where the channel may
see everything it names (bot/engine/audiences.py): a repository or project open to `everyone` and a
channel not shared outside the workspace, or a channel the audience names. With
GAD_PERSON_DETAIL=admins, an answer about people (by:person, `author:`) is never posted in a channel:
its members are not all admins. Otherwise one sentence says why, to the person only; nothing is posted.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..engine.audiences import Viewer
from ..engine.engine import Engine
from ..engine.query import Compare, Me, ShowReport, parse_command
from ..errors import QueryError, literal
from ..service.members import Members


def names_asked(query_text: str, today) -> tuple[str, ...]:
    """The repositories and projects a command names (none when it does not parse: nothing to check)."""
    try:
        parsed = parse_command(query_text, today)
    except QueryError:
        return ()
    if isinstance(parsed, Compare):
        return tuple(item.name for item in parsed.items)
    if isinstance(parsed, (ShowReport, Me)):
        return parsed.query.repos
    return ()


def person_level(query_text: str, today) -> bool:
    """Whether a command asks about people (by:person, `author:`)."""
    try:
        parsed = parse_command(query_text, today)
    except QueryError:
        return False
    query = getattr(parsed, "query", None)
    return isinstance(parsed, Me) or (query is not None and (query.by == "person" or bool(query.authors)))


def refusal(engine: Engine, members: Members, channel: str, names: Iterable[str], *, about_people: bool = False,
            person: Viewer | None = None) -> str | None:
    """Why an answer naming `names` may not be posted in `channel` (None: it may). `person`: who posts it, who must
    still see each name too (what they saw may have been closed to them since)."""
    if about_people and engine.settings.person_detail == "admins":
        return ("Figures per person stay with admins and each person about themselves here "
                "(GAD_PERSON_DETAIL=admins), so this answer is not posted in a channel.")
    names = list(names)
    closed = engine.catalog.unseen(person, names) if person is not None else []
    if closed:
        return f"{literal(closed[0])} is no longer open to you, so this answer is not posted."
    where = members.channel_viewer(channel)
    hidden = engine.catalog.unseen(where, names)
    if hidden:
        shared = "" if where.member else " (it is shared outside the workspace, or Slack could not say)"
        return (f"Not everyone in this channel{shared} may see {literal(hidden[0])}, so this answer is not posted "
                "there; it stays with you.")
    return None
