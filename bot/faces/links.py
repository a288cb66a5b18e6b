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
from .slacktext import decode

log = logging.getLogger(__name__)

SHORTCUT_CALLBACK_ID = "gad_repo_card"
MAX_UNFURLS = 5  # cards per message: Slack shows a handful; more would only cost reports
_WORD = re.compile(r"[\w./-]{1,200}")


class LinksFace:
    """Registered next to the /gad face; `ask(text, body, respond, client)` answers a query like /gad does."""

    def __init__(self, settings: Settings, engine, today: Callable[[], date],
                 ask: Callable[[str, dict, Callable, WebClient], None]):
        self.settings, self.engine, self.today, self.ask = settings, engine, today, ask

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
        unfurls = {}
        for link in (event.get("links") or [])[:MAX_UNFURLS]:
            url = str(link.get("url") or "") if isinstance(link, dict) else ""
            target = tracked_link(self.engine, url)
            if target is None:
                continue
            try:
                unfurls[url] = {"blocks": card_blocks(card_figures(self.engine, target, self.today()))}
            except GadError as error:  # e.g. not indexed yet: no card rather than a wrong one
                log.info("no card for a link to %s: %s", target.name, type(error).__name__)
        if not unfurls:
            return  # an untracked link stays as Slack shows it
        where = ({"channel": event["channel"], "ts": event["message_ts"]} if event.get("channel")
                 and event.get("message_ts") else {"unfurl_id": event.get("unfurl_id"), "source": event.get("source")})
        try:
            client.chat_unfurl(unfurls=unfurls, **where)
        except SlackApiError as error:
            log.info("chat.unfurl refused: %s", error.response.get("error"))

    # -- the message shortcut ----------------------------------------------------------------------
    def run_shortcut(self, body: dict, client: WebClient) -> None:
        user = body.get("user", {}).get("id", "")
        channel = (body.get("channel") or {}).get("id", "")
        message = body.get("message") or {}
        thread = message.get("thread_ts") or message.get("ts") or body.get("message_ts")
        target = self._target_of(decode(str(message.get("text") or "")))
        if target is None:
            text = ("That message links to no tracked repository or organization and names none; "
                    "`/gad repos` lists what is tracked.")
            blocks = [kit.section(text)]
        else:
            try:
                card = card_figures(self.engine, target, self.today())
                text, blocks = card_text(card), card_blocks(card)
            except GadError as error:
                text = str(error)
                blocks = [kit.section(kit.escape_mrkdwn(text))]
        try:
            client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread, text=text, blocks=blocks)
        except SlackApiError as error:  # e.g. gad-bot is not in that channel: the person's DM instead
            log.info("shortcut answer in %s refused (%s); sent to the DM", channel, error.response.get("error"))
            client.chat_postMessage(channel=user, text=text, blocks=blocks)

    def _target_of(self, text: str) -> LinkTarget | None:
        """The first tracked thing a message links to, else the first tracked name it mentions."""
        for url in urls_in(text):
            target = tracked_link(self.engine, url)
            if target is not None:
                return target
        names = set(self.engine.known_names())
        for word in _WORD.findall(text):
            name = word.strip("./-")
            if name in names:
                return LinkTarget(name, name, "repository")
        return None

    # -- the card's button --------------------------------------------------------------------------
    def run_more(self, body: dict, respond, client: WebClient) -> None:
        name = str(body["actions"][0].get("value", ""))
        self.ask(f"{name} since:12w by:week", body, respond, client)  # a tracked name: the grammar reads it as one
