"""Who may see what: a repository's, project's or organization's audience, and who is asking.

An audience is `everyone` (the workspace's full members), `admins`, or a list of Slack ids:
channels (`C…`/`G…`: their members), user groups (`S…`: their members) and people (`U…`/`W…`).
A `Viewer` is whoever an answer is for: a person (what Slack says of them, resolved by
bot/service/viewers.py), a channel an answer would be posted in, or the operator at the shell,
who sees everything. Pure: no Slack, no index; both sides hand their facts in.

    audience = Audience.parse("C0ENG S0BACKEND")
    viewer.sees(audience)        # admins and the operator: always; a full member: `everyone`;
                                 # anyone: a list that names them, a group or a channel they are in

Guests (`is_restricted`, `is_ultra_restricted`) and members of another organization (Slack Connect)
are never part of `everyone`; a channel shared outside the workspace is not either.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from ..errors import QueryError, literal

EVERYONE = "everyone"
ADMINS = "admins"
# Slack's ids: channels C (public) and G (private, older), user groups S, people U (and W on Enterprise Grid).
_ID = re.compile(r"[CGSUW][A-Z0-9]{2,20}")
MAX_IDS = 50  # an audience longer than this is a mistake (or a list better kept as a channel or group)


@dataclass(frozen=True)
class Audience:
    """everyone, admins only, or the members of these channels, groups and people (ids sorted, no repeats)."""

    everyone: bool = False
    ids: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> "Audience":
        """What the index stores (`everyone`, `admins`, or ids separated by spaces); None is `everyone`
        (rows written before audiences existed), anything unreadable is `admins` (fail closed)."""
        if text is None or text == EVERYONE:
            return EVERYONE_AUDIENCE
        words = text.split()
        if not words or words == [ADMINS] or not all(_ID.fullmatch(w) for w in words):
            return ADMINS_AUDIENCE
        return cls(False, tuple(sorted(set(words))))

    @classmethod
    def from_words(cls, words: list[str] | tuple[str, ...]) -> "Audience":
        """What an admin typed: `everyone`, `admins`, or ids (Slack's `<#C…|name>`, `<@U…>`, `<!subteam^S…>`
        forms decoded to the id first); one sentence for anything else."""
        if not words:
            raise QueryError("Say who may see it: `everyone`, `admins`, or channels, user groups and people "
                             "(e.g. `#backend @platform-team @ana`).")
        lowered = [w.lower() for w in words]
        if lowered in ([EVERYONE], [ADMINS]):
            return EVERYONE_AUDIENCE if lowered == [EVERYONE] else ADMINS_AUDIENCE
        if EVERYONE in lowered or ADMINS in lowered:
            raise QueryError(f"{literal(EVERYONE)} and {literal(ADMINS)} stand alone; for a list, name its "
                             "channels, user groups and people only.")
        ids = [slack_id(w) for w in words]
        bad = [w for w, i in zip(words, ids) if i is None]
        if bad:
            raise QueryError(f"{literal(bad[0])} is not a channel, user group or person; pick them in Slack "
                             "(`#channel`, `@group`, `@person`) so that Slack sends their ids, or type the ids "
                             "(`C…`, `S…`, `U…`).")
        if len(set(ids)) > MAX_IDS:
            raise QueryError(f"An audience names at most {MAX_IDS} channels, groups and people; put the people "
                             "in a channel or a user group and name that instead.")
        return cls(False, tuple(sorted(set(i for i in ids if i))))

    @property
    def admins_only(self) -> bool:
        return not self.everyone and not self.ids

    def text(self) -> str:
        """How the index stores it."""
        return EVERYONE if self.everyone else " ".join(self.ids) if self.ids else ADMINS

    def words(self) -> str:
        """How a person reads it in Slack: channels, groups and people as Slack shows them (mentions
        that Slack renders as names without notifying: `<#C…>`, `<!subteam^S…>`, `<@U…>`)."""
        if self.everyone:
            return "everyone in the workspace (not guests, not other organizations)"
        if not self.ids:
            return "admins only"
        return ", ".join(mention(i) for i in self.ids)


EVERYONE_AUDIENCE = Audience(everyone=True)
ADMINS_AUDIENCE = Audience()


def slack_id(word: str) -> str | None:
    """The id in `C0123`, `<#C0123|general>`, `<@U0123>`, `<@U0123|ana>`, `<!subteam^S0123|@team>`; else None."""
    inner = word[1:-1] if word.startswith("<") and word.endswith(">") else word
    for prefix in ("#", "@", "!subteam^"):
        if inner.startswith(prefix) and word.startswith("<"):
            inner = inner[len(prefix):]
            break
    inner = inner.split("|", 1)[0]
    return inner if _ID.fullmatch(inner) else None


def mention(slack_id_: str) -> str:
    """A Slack id as a mention Slack renders with its name (channels, groups and people alike)."""
    if slack_id_[0] in "CG":
        return f"<#{slack_id_}>"
    if slack_id_[0] == "S":
        return f"<!subteam^{slack_id_}>"
    return f"<@{slack_id_}>"


@dataclass(frozen=True)
class Viewer:
    """Whoever an answer is for, as the facts an audience is checked against.

    user: the Slack id (a person's, or a channel's for a channel viewer); admin: may see everything;
    member: counts in `everyone` (a full member of this workspace, or a channel not shared outside it);
    within: the ids an audience may name that include this viewer (their own id, the channels and
    groups they are in; only those the audiences name need be known); emails: the person's own
    addresses (their Slack profile's, and any an admin added), lower-cased, for `/gad me` and for
    person-level answers about themselves.
    """

    user: str
    admin: bool = False
    member: bool = False
    within: frozenset[str] = field(default_factory=frozenset)
    emails: tuple[str, ...] = ()
    operator: bool = False  # the shell: gad-bot's operator sees everything
    guest: bool = False  # a guest or a member of another organization: said in refusals
    channel: bool = False  # a channel an answer would be posted in (not a person)
    also: "Viewer | None" = None  # an answer a person posts in a channel: the channel must see it too

    def sees(self, audience: Audience) -> bool:
        return self._sees(audience) and (self.also is None or self.also.sees(audience))

    def _sees(self, audience: Audience) -> bool:
        if self.operator or (self.admin and not self.channel):
            return True
        if audience.everyone:
            return self.member
        return bool(self.within.intersection(audience.ids))

    def posting_in(self, channel: "Viewer") -> "Viewer":
        """This person's answer, posted in a channel: it shows only what both the person and the channel may see."""
        return dataclasses.replace(self, also=channel)

    @property
    def reads_people(self) -> bool:
        """Whether person-level answers about anyone may go to this viewer (GAD_PERSON_DETAIL=admins): the
        operator, and an admin reading privately (not in a channel, whose members are not all admins)."""
        return self.operator or (self.admin and not self.channel and self.also is None)

    @classmethod
    def of_channel(cls, channel_id: str, *, shared_outside: bool) -> "Viewer":
        """A channel an answer would be posted in: `everyone` only when it is not shared outside the workspace."""
        return cls(user=channel_id, member=not shared_outside, within=frozenset({channel_id}), channel=True)


OPERATOR = Viewer(user="", admin=True, member=True, operator=True)
