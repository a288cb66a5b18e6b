"""What the Slack layer calls for the digest commands: `/gad subscribe|unsubscribe|subscriptions|digest`.

Above the subscriptions (storage), the deliverer (bot/digests/digest.py) and their blocks
(bot/digests/blocks.py): it ties them together, so none of them imports another upward.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from .digest import last_delivery, preview_digest
from ..engine.audiences import Viewer
from ..engine.teams import Teams
from ..errors import PermissionDeniedError, QueryError, UnknownRepoError, command, literal
from ..store.index import utcnow
from ..engine.query import ListSubscriptions, PreviewDigest, Subscribe, Unsubscribe
from . import blocks as render
from .subscriptions import ChannelView, get, subscribe, unsubscribe, forget_repo

log = logging.getLogger(__name__)


def channel_view(engine, channel_id: str, now: datetime | None = None) -> ChannelView | None:
    """The channel's subscription with its next delivery and its last ledger entry; None without one."""
    now = now or utcnow()
    sub = get(engine.index, channel_id)
    if sub is None:
        return None
    tracked, untracked = [], []
    for name in sub.repos:
        try:
            engine.resolve([name])
            tracked.append(name)
        except UnknownRepoError:
            untracked.append(name)
    period, due = sub.next_due(now)
    return ChannelView(sub, tuple(tracked), tuple(untracked), period, due, last_delivery(engine.index, channel_id, now), now)


@dataclass(frozen=True)
class DigestReply:
    """An answer to a digest command: `public` ones announce a change to the whole channel."""

    text: str
    blocks: list[dict]
    public: bool = False


class DigestFace:
    """What the Slack layer calls for `/gad subscribe|unsubscribe|subscriptions|digest` (and after untrack).

        face = DigestFace(settings, engine); face.on_change = scheduler.reload
        reply = face.handle(parsed, channel_id=..., team_id=..., user_id=..., user_tz=...)

    A change (subscribing, a new setting, removing names) is a public reply that opens with who
    made it ("@ann subscribed this channel to `web`"), as the GitHub app for Slack does: whoever
    may change a channel's digest, everyone in it sees that it changed. Everything else is an
    ephemeral reply. `on_change` is called after any change to the subscriptions (the scheduler
    rebuilds its jobs); its failure never fails the command.
    """

    def __init__(self, settings, engine, *, on_change: Callable[[], None] | None = None,
                 clock: Callable[[], datetime] = utcnow):
        self.settings = settings
        self.engine = engine
        self.on_change = on_change
        self.clock = clock

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # the scheduler also notices changes by itself within a minute
                log.exception("rebuilding the digest jobs failed")

    def handle(self, parsed, *, channel_id: str, viewer: Viewer, channel_viewer: Callable[[], Viewer],
               team_id: str | None = None, user_id: str | None = None, user_tz: str | None = None,
               teams: Callable[[], Teams] | None = None) -> DigestReply:
        """`viewer`: who asks; `channel_viewer()`: the channel the digest is posted in (asked of Slack only when a
        digest is subscribed to or shown). A digest goes only where the channel may see all it names."""
        now = self.clock()
        if isinstance(parsed, Subscribe):
            self.engine.resolve(parsed.repos, viewer)  # what the person may not see is, to them, not tracked
            if parsed.teams and self.settings.person_detail == "admins":  # a group may be one person (reporting.py)
                raise PermissionDeniedError(
                    "A team's digest shows a user group's figures in a channel, and those are for admins here "
                    "(GAD_PERSON_DETAIL=admins); subscribe without `team:` for the totals.")
            if parsed.teams:  # a group Slack does not know is one sentence now, not a failed digest later
                if teams is None:
                    raise QueryError("`team:` reads Slack's user groups, which this face cannot ask.")
                teams().find(parsed.teams)
            hidden = self.engine.catalog.unseen(channel_viewer(), parsed.repos)
            if hidden:
                raise PermissionDeniedError(
                    f"Not everyone in this channel may see {literal(hidden[0])} (or the channel is shared outside "
                    "the workspace), so its digest cannot be posted here; subscribe a channel of its audience, "
                    f"or ask an admin who may see it ({command('access ' + hidden[0])}).")
            result = subscribe(self.engine, channel_id, parsed, user_tz=user_tz, user_id=user_id, team_id=team_id,
                               now=now)
            self._changed()
            text, blocks = render.subscribe_blocks(result, next_due=result.subscription.next_due(now)[1], by=user_id)
            return DigestReply(text, blocks, public=render.subscribe_announcement(result, user_id) is not None)
        if isinstance(parsed, Unsubscribe):
            result = unsubscribe(self.engine, channel_id, parsed, now=now)
            if result.removed:
                self._changed()
            return DigestReply(*render.unsubscribe_blocks(result, by=user_id), public=bool(result.removed))
        if isinstance(parsed, ListSubscriptions):
            return DigestReply(*render.subscriptions_blocks(channel_view(self.engine, channel_id, now), parsed.page))
        if isinstance(parsed, PreviewDigest):  # shown to one person: what the channel would get, that they may see
            return DigestReply(*preview_digest(self.engine, channel_id, now,
                                               viewer=viewer.posting_in(channel_viewer()), teams=teams))
        raise TypeError(f"not a digest command: {parsed!r}")

    def forget_repo(self, name: str) -> list[str]:
        channels = forget_repo(self.engine.index, name, self.clock())
        if channels:
            self._changed()
        return channels
