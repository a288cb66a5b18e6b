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

from ..render import blocks as kit
from ..store.orgindex import OrgIndex

log = logging.getLogger(__name__)

MAX_CHANGES_SHOWN = 20  # an organization that moved 500 repositories at once gets a short message


def org_news(result) -> str | None:
    """The message for one OrgSyncResult (None when nothing changed)."""
    if not result.changes:
        return None
    lines = [change.sentence() for change in result.changes[:MAX_CHANGES_SHOWN]]
    more = len(result.changes) - MAX_CHANGES_SHOWN
    if more > 0:
        lines.append(f"… and {more:,} more changes (`/gad repos` lists every repository).")
    return f"{result.org} changed on its forge:\n" + "\n".join(f"• {line}" for line in lines)


def announce_org_changes(index, client, results) -> list[tuple[str, str]]:
    """Post each organization's changes in the channels subscribed to it; return the (channel, text) posted."""
    posted = []
    rows = OrgIndex(index)
    for result in results:
        text = org_news(result)
        if text is None:
            continue
        for channel in rows.subscribed_channels(result.org):
            try:
                client.chat_postMessage(channel=channel, text=text, blocks=[kit.section(kit.escape_mrkdwn(text))],
                                        unfurl_links=False, unfurl_media=False)
                posted.append((channel, text))
            except Exception as error:  # the change is made; the next digest shows it anyway
                log.warning("telling %s about %s's changes failed: %s", channel, result.org, type(error).__name__)
    return posted
