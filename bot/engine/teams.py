"""Teams (METRIC.md rule 8): a Slack user group's members, each matched to a `person` by their addresses.

What Slack knows arrives typed (bot/service/members.py builds these from usergroups.list and users.list);
the engine matches each member's addresses (their profile's e-mail, and any an admin added) to the people
the index counts, through each repository's mailmap, lower-cased (bot/engine/identities.py). A member whose
addresses never committed is listed as unmatched, never silently dropped.

    `team:@backend`  counts only the records of the group's people (repeatable: a union);
    `by:team`        one row per group with a committer in scope, and the people in no group apart:
                     a person in two groups counts in both rows and once in the total.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field

from ..errors import QueryError, literal, nearest

NO_TEAM = "(in no team)"  # by:team's row of the people of no group


@dataclass(frozen=True)
class TeamMember:
    user: str  # Slack id
    emails: tuple[str, ...]  # lower-cased: the profile's, then those an admin added
    name: str = ""  # as Slack shows them (real name, else handle), for a person to recognise


@dataclass(frozen=True)
class Team:
    id: str  # S…
    handle: str  # without the @, lower-cased
    members: tuple[TeamMember, ...]

    @property
    def label(self) -> str:
        return "@" + self.handle


@dataclass(frozen=True)
class Teams:
    """The workspace's user groups as Slack listed them (those with no member included)."""

    groups: tuple[Team, ...]
    # what the groups hold, digested once: what the engine keys its matches on (a new listing: a new key)
    key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.key:
            digest = hashlib.sha256(repr(self.groups).encode()).hexdigest()[:32]
            object.__setattr__(self, "key", digest)

    def find(self, words: tuple[str, ...]) -> list[Team]:
        """The groups `team:` names (by handle or id); one sentence naming the groups there are for one unknown."""
        by_key = {g.handle: g for g in self.groups} | {g.id: g for g in self.groups}
        found = []
        for word in words:
            group = by_key.get(word)
            if group is None:
                handles = sorted(g.handle for g in self.groups)
                close = nearest(word, handles, n=1)
                listed = ", ".join(literal("@" + h) for h in handles[:12]) + (" ..." if len(handles) > 12 else "")
                raise QueryError(f"There is no user group {literal('@' + word)} in this workspace"
                                 + (f"; did you mean {literal('team:@' + close[0])}?" if close else
                                    f"; its groups are {listed}." if handles else "; it has no user groups yet."))
            found.append(group)
        return found

    def of_user(self, user: str) -> list[Team]:
        """The groups a person belongs to (their Home tab's teams)."""
        return [g for g in self.groups if any(m.user == user for m in g.members)]


@dataclass(frozen=True)
class Matched:
    """A group's members as the scope counts them: the people matched (person keys, and their ids in the index) and
    the members unmatched."""

    team: Team
    people: frozenset[str]  # person keys with records in the scope's repositories
    unmatched: tuple[TeamMember, ...]  # members none of whose addresses committed there
    ids: tuple[int, ...] = ()  # the people's ids (the `people` table), sorted


def unmatched_note(matched: list[Matched]) -> str | None:
    """One sentence about members who matched no committer, with how to fix it; None when every member matched."""
    count = sum(len(m.unmatched) for m in matched)  # every report of 200 groups asks: only the first five are named
    if not count:
        return None
    first = itertools.islice(((m.team, member) for m in matched for member in m.unmatched), 5)
    shown = ", ".join(f"{member.name or member.user} ({team.label})" for team, member in first)
    more = f" and {count - 5} more" if count > 5 else ""
    return (f"{count} member{'s' * (count != 1)} matched no committer here: {shown}{more}. If they "
            "commit with another address, a `.mailmap` line (`Name <profile@address> <commit@address>`) or "
            "`gad-bot teams alias USER ADDRESS` joins them.")


def no_committer_error(names: list[Team]) -> QueryError:
    """`team:@x` whose members never committed in the scope's repositories: a typo is likelier than a zero."""
    listed = " or ".join(literal(t.label) for t in names)
    return QueryError(f"No member of {listed} committed in these repositories (matched by their Slack profile's "
                      "e-mail through the mailmap); `gad-bot teams` lists each member's addresses, and "
                      "`gad-bot teams alias USER ADDRESS` adds one they commit with.")
