"""Link unfurls and the "2GAD of this repository" message shortcut: the card of what is tracked.

`link_shared` (a person pasted a link on a domain the manifest lists) -> chat.unfurl with a card
for each link naming a tracked repository or organization; links to anything else are left
alone, and nothing is ever fetched or tracked from here (bot/engine/links.py only compares
addresses). GAD_UNFURLS=off turns the cards off. The message shortcut answers privately in the
message's thread with the card of the first tracked thing the message links to or names. The
card's button asks `NAME since:12w by:week` through the same path as `/gad`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import date

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ..config import Settings
from ..engine.links import LinkTarget, card_figures, tracked_link, urls_in
from ..errors import GadError
from ..render import blocks as kit
from ..render.card import CARD_MORE_ACTION_ID, card_blocks, card_text
from ..engine.audiences import Viewer
from ..service.members import Members
from .slacktext import decode

log = logging.getLogger(__name__)

SHORTCUT_CALLBACK_ID = "gad_repo_card"
MAX_UNFURLS = 5  # cards per message: Slack shows a handful; more would only cost reports
_WORD = re.compile(r"[\w./-]{1,200}")


class LinksFace:
    """Registered next to the /gad face; `ask(text, body, respond, client)` answers a query like /gad does."""

    def __init__(self, settings: Settings, engine, today: Callable[[], date],
                 ask: Callable[[str, dict, Callable, WebClient], None], members: Members):
        self.settings, self.engine, self.today, self.ask = settings, engine, today, ask
        self.members = members  # a card shows only what both the person and the channel it lands in may see

    def register(self, app) -> None:
        app.event("link_shared")(self.link_shared)
        app.shortcut(SHORTCUT_CALLBACK_ID)(ack=self.ack_shortcut, lazy=[self.run_shortcut])
        app.action(CARD_MORE_ACTION_ID)(ack=self.ack_shortcut, lazy=[self.run_more])

    def ack_shortcut(self, ack) -> None:
        ack()

    # -- unfurls -------------------------------------------------------------------------------
    def link_shared(self, event: dict, client: WebClient) -> None:
        if not self.settings.unfurls:
            return
        channel = str(event.get("channel") or "")
        if not channel or not channel[0] in "CGD" or not event.get("message_ts"):
            # a draft (the composer): its card would go wherever the message is sent, which is not known yet
            return
        try:
            reader = self.members.viewer(str(event.get("user") or "")).posting_in(self.members.channel_viewer(channel))
        except GadError as error:  # Slack cannot say who pasted it: no card, as for an untracked link
            log.info("no cards in %s: %s", channel, type(error).__name__)
            return
        unfurls = {}
        for link in (event.get("links") or [])[:MAX_UNFURLS]:
            url = str(link.get("url") or "") if isinstance(link, dict) else ""
            target = tracked_link(self.engine, url, reader)  # what the channel may not see stays a plain link
            if target is None:
                continue
            try:
                unfurls[url] = {"blocks": card_blocks(card_figures(self.engine, target, self.today(), reader))}
            except GadError as error:  # e.g. not indexed yet: no card rather than a wrong one
                log.info("no card for a link to %s: %s", target.name, type(error).__name__)
        if not unfurls:
            return  # an untracked link stays as Slack shows it
        try:
            client.chat_unfurl(unfurls=unfurls, channel=channel, ts=event["message_ts"])
        except SlackApiError as error:
            log.info("chat.unfurl refused: %s", error.response.get("error"))

    # -- the message shortcut ----------------------------------------------------------------------
    def run_shortcut(self, body: dict, client: WebClient) -> None:
        user = body.get("user", {}).get("id", "")
        channel = (body.get("channel") or {}).get("id", "")
        message = body.get("message") or {}
        thread = message.get("thread_ts") or message.get("ts") or body.get("message_ts")
        try:  # the answer lands in the message's thread: the person and that channel must both may see it
            reader = self.members.viewer(user).posting_in(self.members.channel_viewer(channel))
        except GadError as error:
            client.chat_postMessage(channel=user, text=kit.fallback(str(error)),
                                    blocks=[kit.section(kit.escape_mrkdwn(str(error)))])
            return
        target = self._target_of(decode(str(message.get("text") or "")), reader)
        if target is None:
            text = ("That message links to no tracked repository or organization and names none; "
                    "`/gad repos` lists what is tracked.")
            blocks = [kit.section(text)]
        else:
            try:
                card = card_figures(self.engine, target, self.today(), reader)
                text, blocks = kit.fallback(card_text(card)), card_blocks(card)
            except GadError as error:
                text = kit.fallback(str(error))
                blocks = [kit.section(kit.escape_mrkdwn(str(error)))]
        try:
            client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread, text=text, blocks=blocks)
        except SlackApiError as error:  # e.g. gad-bot is not in that channel: the person's DM instead
            log.info("shortcut answer in %s refused (%s); sent to the DM", channel, error.response.get("error"))
            client.chat_postMessage(channel=user, text=text, blocks=blocks)

    def _target_of(self, text: str, reader: Viewer) -> LinkTarget | None:
        """The first tracked thing a message links to, else the first tracked name it mentions (of what `reader`
        may see: the rest is, to them, not tracked)."""
        for url in urls_in(text):
            target = tracked_link(self.engine, url, reader)
            if target is not None:
                return target
        names = set(self.engine.known_names(reader))
        for word in _WORD.findall(text):
            name = word.strip("./-")
            if name in names:
                return LinkTarget(name, name, "repository")
        return None

    # -- the card's button --------------------------------------------------------------------------
    def run_more(self, body: dict, respond, client: WebClient) -> None:
        name = str(body["actions"][0].get("value", ""))
        self.ask(f"{name} since:12w by:week", body, respond, client)  # a tracked name: the grammar reads it as one
