"""What Slack says of people and channels, as the Viewers audiences are checked against (bot/engine/audiences.py).

    members = Members(settings, index, client)
    members.viewer("U123")          # users.info, users.conversations, usergroups.users.list; cached
    members.cached_viewer("U123")   # what is known without asking Slack (an ack never waits on Slack)
    members.channel_viewer("C123")  # conversations.info: shared outside the workspace?

A person is a full member (part of `everyone`) when Slack says they are neither a guest
(`is_restricted`, `is_ultra_restricted`) nor of another organization (a Slack Connect user's `team_id`
is not this workspace's), nor deleted, nor a bot. Only the channels and user groups some audience
names are looked up. Each answer is kept GAD_MEMBERSHIP_CACHE_SECONDS (a few minutes), for a bounded
number of people, channels and groups. When Slack cannot say who someone is, the answer is no: one
sentence (`MembershipUnknownError`), nothing shown. When it cannot say whether they are in a channel
or group, that channel or group lets them see nothing (and the log says why).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from cachetools import TTLCache

from ..config import Settings
from ..slackapi import channel_facts
from ..engine.audiences import Audience, Viewer
from ..engine.teams import Team, TeamMember, Teams
from ..errors import GadError
from ..store.index import Index

log = logging.getLogger(__name__)

MAX_PEOPLE = 20_000  # people whose facts are kept at once
MAX_GROUPS = 2_000
MAX_CHANNELS = 5_000
MAX_PAGES = 50  # pages of one listing (a person's channels, a group's members): 50 x 1,000 entries at most
MAX_CHANNEL_LISTS = 5_000  # people whose channels are kept at once (the people asking within a few minutes)


class MembershipUnknownError(GadError):
    """Slack could not say who is asking: nothing is shown until it can (fail closed)."""


@dataclass(frozen=True)
class Person:
    """What users.info says of one person."""

    user: str
    admin: bool  # a workspace admin or owner (GAD_ADMINS, when set, decides instead)
    member: bool  # a full member of this workspace: counts in `everyone`
    guest: bool  # a guest, or a member of another organization
    email: str | None  # the profile's e-mail, lower-cased (scope users:read.email), or None
    tz: str | None


class Members:
    """People, channels and user groups as Slack says they are, kept a few minutes; Viewers built from them."""

    def __init__(self, settings: Settings, index: Index, client, *, clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        self.index = index
        self.client = client  # a slack_sdk WebClient (the Bolt app's)
        ttl = settings.membership_cache_seconds
        self._people: TTLCache = TTLCache(MAX_PEOPLE, ttl, timer=clock)
        # user -> the channel ids they are in (a few dozen each, typically; the listing stops at MAX_PAGES pages)
        self._channels_of: TTLCache = TTLCache(MAX_CHANNEL_LISTS, ttl, timer=clock)
        self._group_members: TTLCache = TTLCache(MAX_GROUPS, ttl, timer=clock)  # group -> frozenset of user ids
        self._shared: TTLCache = TTLCache(MAX_CHANNELS, ttl, timer=clock)  # channel -> (shared outside?, can post?)
        self._teams: TTLCache = TTLCache(1, ttl, timer=clock)  # the workspace's user groups, as Teams
        self._team: str | None = None
        self._lock = threading.Lock()

    # -- people ----------------------------------------------------------------------------------
    def person(self, user: str) -> Person:
        """users.info, kept a few minutes; MembershipUnknownError when Slack cannot say."""
        with self._lock:
            known = self._people.get(user)
        if known is not None:
            return known
        try:
            info = self.client.users_info(user=user)["user"]
        except Exception as error:  # SlackApiError, a network failure: either way Slack did not say
            log.warning("users.info for %s failed: %s", user, _why(error))
            raise MembershipUnknownError(
                f"Slack could not say who you are just now ({_why(error)}), and gad-bot shows nothing it cannot "
                "check; try again in a minute.") from None
        team = self._workspace()
        if team is None:
            raise MembershipUnknownError("Slack could not say which workspace this is just now, and gad-bot shows "
                                         "nothing it cannot check; try again in a minute.")
        guest = bool(info.get("is_restricted") or info.get("is_ultra_restricted"))
        other_org = info.get("team_id") != team  # Slack Connect: a person of another organization
        gone = bool(info.get("deleted") or info.get("is_bot"))
        email = ((info.get("profile") or {}).get("email") or "").strip().lower() or None
        found = Person(user, admin=bool(info.get("is_admin") or info.get("is_owner")),
                       member=not (guest or other_org or gone), guest=guest or other_org, email=email,
                       tz=info.get("tz"))
        with self._lock:
            self._people[user] = found
        return found

    def is_admin(self, user: str) -> bool:
        """GAD_ADMINS when the operator set it, workspace admins and owners otherwise (Slack unsure: no)."""
        if self.settings.admins:
            return user in self.settings.admins
        try:
            return self.person(user).admin
        except MembershipUnknownError:
            return False

    def emails(self, user: str, person: Person | None = None) -> tuple[str, ...]:
        """The person's own addresses: their profile's, and any an admin added (`gad-bot teams alias`)."""
        added = self.index.slack_aliases(user)
        own = [person.email] if person is not None and person.email else []
        return tuple(dict.fromkeys(own + added))

    # -- viewers ---------------------------------------------------------------------------------
    def viewer(self, user: str) -> Viewer:
        """Who `user` is for audiences: admin, full member, and which of the named channels and groups they are in."""
        person = self.person(user)
        named = self.named_ids()
        within = {user}
        channels = {i for i in named if i[0] in "CG"}
        if channels:
            within |= channels & self._channels(user)
        for group in (i for i in named if i[0] == "S"):
            if user in self._members_of(group):
                within.add(group)
        return Viewer(user=user, admin=self.is_admin(user), member=person.member, within=frozenset(within),
                      emails=self.emails(user, person), guest=person.guest)

    def cached_viewer(self, user: str) -> Viewer | None:
        """The viewer, when everything it takes is already known (no call to Slack); else None."""
        with self._lock:
            person = self._people.get(user)
            channels = self._channels_of.get(user)
        if person is None:
            return None
        named = self.named_ids()
        if any(i[0] in "CG" for i in named) and channels is None:
            return None
        with self._lock:
            if any(i[0] == "S" and i not in self._group_members for i in named):
                return None
        return self.viewer(user)  # every answer it needs is cached now

    def channel_viewer(self, channel: str) -> Viewer:
        """A channel an answer would be posted in: `everyone` only when it is not shared outside the workspace.
        Slack unsure: treated as shared (nothing meant for `everyone` is posted there)."""
        shared, _ = self._channel_facts(channel)
        return Viewer.of_channel(channel, shared_outside=shared)

    def bot_can_post(self, channel: str) -> bool:
        """Whether gad-bot can post in the channel: it is in it, or it is public (Slack unsure: no)."""
        return self._channel_facts(channel)[1]

    def channels_of(self, user: str, *, strict: bool = False) -> frozenset[str]:
        """The channels `user` is in, as far as gad-bot may see them (Slack unsure: none, or with `strict`,
        MembershipUnknownError saying so)."""
        return self._channels(user, strict=strict)

    def _channel_facts(self, channel: str) -> tuple[bool, bool]:
        """(shared outside the workspace, gad-bot can post there), kept a few minutes; Slack unsure: (True, False)."""
        with self._lock:
            known = self._shared.get(channel)
        if known is not None:
            return known
        facts = channel_facts(self.client, channel)
        if facts is None:  # Slack did not say: shared, without gad-bot; not kept, asked again next time
            return True, False
        with self._lock:
            self._shared[channel] = facts
        return facts

    def ids_of(self, words: list[str]) -> list[str]:
        """What an admin typed for an audience, with `#channel` and `@group` names turned into Slack's ids (the
        escaped forms Slack sends, `<#C…|eng>`, are kept: bot/engine/audiences.py reads them); a name Slack does
        not know stays as typed, for the audience's own sentence about it."""
        channels = groups = None
        out = []
        for word in words:
            if word.startswith("#") and len(word) > 1:
                if channels is None:
                    channels = {}
                    for page in _pages(lambda cursor: self.client.conversations_list(
                            types="public_channel,private_channel", exclude_archived=True, limit=1000, cursor=cursor)):
                        channels.update({c.get("name"): c.get("id") for c in page.get("channels") or []})
                word = channels.get(word[1:], word)
            elif word.startswith("@") and len(word) > 1:
                if groups is None:
                    groups = {g.get("handle"): g.get("id") for g in self.client.usergroups_list()["usergroups"] or []}
                word = groups.get(word[1:], word)
            out.append(word)
        return out

    # -- teams: user groups and their members' addresses (METRIC.md rule 8) -------------------------------
    def teams(self) -> Teams:
        """The workspace's user groups with each member's addresses (their profile's e-mail, from users.list, and any
        an admin added), kept GAD_MEMBERSHIP_CACHE_SECONDS; MembershipUnknownError when Slack cannot list them."""
        with self._lock:
            known = self._teams.get("all")
        if known is not None:
            return known
        try:
            groups = self.client.usergroups_list(include_users=True, include_disabled=False)["usergroups"] or []
            people: dict[str, tuple[str | None, str]] = {}
            for page in _pages(lambda cursor: self.client.users_list(limit=1000, cursor=cursor)):
                for user in page.get("members") or []:
                    profile = user.get("profile") or {}
                    email = (profile.get("email") or "").strip().lower() or None
                    people[str(user.get("id"))] = (email, str(user.get("real_name") or user.get("name") or ""))
        except Exception as error:
            log.warning("listing the user groups failed: %s", _why(error))
            raise MembershipUnknownError(f"Slack could not list the user groups just now ({_why(error)}); try "
                                         "`team:` again in a minute (a question naming no team works meanwhile).") \
                from None
        added: dict[str, list[str]] = {}
        for user, email in self.index.execute("SELECT user_id, email FROM slack_aliases ORDER BY email"):
            added.setdefault(user, []).append(email)
        found = Teams(tuple(
            Team(str(g.get("id")), str(g.get("handle") or "").lower(), tuple(
                TeamMember(u, tuple(dict.fromkeys([*([people[u][0]] if people.get(u, (None,))[0] else []),
                                                   *added.get(u, [])])), people.get(u, (None, ""))[1])
                for u in (g.get("users") or [])[:MAX_PAGES * 1000]))
            for g in groups[:MAX_GROUPS] if g.get("id") and g.get("handle")))
        with self._lock:
            self._teams["all"] = found
        return found

    def cached_teams(self) -> Teams | None:
        with self._lock:
            return self._teams.get("all")

    def named_ids(self) -> frozenset[str]:
        """Every channel, group and person some audience names (only these are ever looked up)."""
        try:
            rows = self.index.execute("SELECT DISTINCT audience FROM repos UNION SELECT DISTINCT audience FROM projects")
            return frozenset(i for (stored,) in rows for i in Audience.parse(stored).ids)
        except sqlite3.Error as error:  # a damaged index: no channel or group is looked up; nothing opens by it
            log.warning("the audiences could not be read (%s); run `gad-bot doctor`", type(error).__name__)
            return frozenset()

    # -- Slack's listings ----------------------------------------------------------------------------
    def _channels(self, user: str, strict: bool = False) -> frozenset[str]:
        """The channels `user` is in (users.conversations), as far as gad-bot may see them."""
        with self._lock:
            known = self._channels_of.get(user)
        if known is not None:
            return known
        found: set[str] = set()
        try:
            for page in _pages(lambda cursor: self.client.users_conversations(
                    user=user, types="public_channel,private_channel", exclude_archived=True, limit=1000,
                    cursor=cursor)):
                found.update(c.get("id", "") for c in page.get("channels") or [])
        except Exception as error:
            log.warning("users.conversations for %s failed: %s; no channel of theirs counts for now", user,
                        _why(error))
            if strict:
                raise MembershipUnknownError(f"Slack could not list your channels just now ({_why(error)}); "
                                             "try again in a minute.") from None
            return frozenset()  # not kept: asked again next time
        with self._lock:
            self._channels_of[user] = frozenset(found)
        return frozenset(found)

    def _members_of(self, group: str) -> frozenset[str]:
        """A user group's members (usergroups.users.list)."""
        with self._lock:
            known = self._group_members.get(group)
        if known is not None:
            return known
        try:
            users = self.client.usergroups_users_list(usergroup=group)["users"] or []
        except Exception as error:
            log.warning("usergroups.users.list for %s failed: %s; it lets no one see anything for now", group,
                        _why(error))
            return frozenset()
        members = frozenset(str(u) for u in users[:MAX_PAGES * 1000])
        with self._lock:
            self._group_members[group] = members
        return members

    def _workspace(self) -> str | None:
        """This workspace's team id (auth.test, asked once)."""
        if self._team is None:
            try:
                self._team = self.client.auth_test()["team_id"]
            except Exception as error:
                log.warning("auth.test failed: %s", _why(error))
                return None
        return self._team


def _pages(call: Callable[[str | None], dict]):
    """Each page of a cursor-paginated Web API listing, at most MAX_PAGES."""
    cursor = None
    for _ in range(MAX_PAGES):
        page = call(cursor)
        yield page
        cursor = (page.get("response_metadata") or {}).get("next_cursor")
        if not cursor:
            return


def _why(error: Exception) -> str:
    """Slack's error code (never the request, which may carry a token), or the exception's kind."""
    response = getattr(error, "response", None)
    if response is not None:
        try:
            return str(response.get("error") or "error")
        except Exception:
            pass
    return type(error).__name__
