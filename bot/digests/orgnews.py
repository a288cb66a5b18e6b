"""What an organization's listing changed, told to the channels subscribed to its project.

    announce_org_changes(engine.index, client, engine.sync_orgs())   # [(channel, text)] posted

A new repository, one renamed or transferred upstream, one deleted upstream (its history stays
counted) or one back in the listing is a change to what the channel's digest counts, so the
channels whose subscription names the organization's project are told, in one message per
organization, as the channel is told of other changes to its digest. A failed post is logged and
never fails the sync: the change itself is already made and shows in the next digest.
"""

from __future__ import annotations

import logging

from ..engine.audiences import Viewer
from ..engine.catalog import Catalog
from ..render import blocks as kit
from ..slackapi import channel_facts
from ..store.orgindex import OrgIndex

log = logging.getLogger(__name__)

MAX_CHANGES_SHOWN = 20  # an organization that moved 500 repositories at once gets a short message


def org_news(result, changes=None) -> str | None:
    """The message for one OrgSyncResult (None when nothing changed); `changes`: those of it to tell."""
    changes = result.changes if changes is None else changes
    if not changes:
        return None
    lines = [change.sentence() for change in changes[:MAX_CHANGES_SHOWN]]
    more = len(changes) - MAX_CHANGES_SHOWN
    if more > 0:
        lines.append(f"… and {more:,} more changes (`/gad repos` lists every repository).")
    return f"{result.org} changed on its forge:\n" + "\n".join(f"• {line}" for line in lines)


def announce_org_changes(index, client, results) -> list[tuple[str, str]]:
    """Post each organization's changes in the channels subscribed to it; return the (channel, text) posted."""
    posted = []
    rows = OrgIndex(index)
    catalog = Catalog(index)
    for result in results:
        if not result.changes:
            continue
        for channel in rows.subscribed_channels(result.org):
            # told only what the channel may see: the organization, and each repository named
            facts = channel_facts(client, channel)
            if facts is None:  # Slack cannot say who reads it: the next digest shows the changes anyway
                continue
            where = Viewer.of_channel(channel, shared_outside=facts[0])
            if catalog.unseen(where, [result.org]):
                continue
            text = org_news(result, [c for c in result.changes
                                     if not catalog.unseen(where, [n for n in (c.name, c.old_name) if n])])
            if text is None:
                continue
            try:
                # the fallback text is escaped as the blocks are: Slack reads `<!channel>` and links in both
                shown = kit.escape_mrkdwn(text)
                client.chat_postMessage(channel=channel, text=shown, blocks=[kit.section(shown)],
                                        unfurl_links=False, unfurl_media=False)
                posted.append((channel, text))
            except Exception as error:  # the change is made; the next digest shows it anyway
                log.warning("telling %s about %s's changes failed: %s", channel, result.org, type(error).__name__)
    return posted
