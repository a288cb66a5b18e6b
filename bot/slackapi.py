"""The Slack Web API client every floor asks through: SLACK_API_URL, the bot token, retries.

Here, on the lowest floor, so that serve's machinery (the sync queue announcing an organization's news)
and the faces make their clients the same way without one reaching up into the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import Settings

if TYPE_CHECKING:
    from slack_sdk import WebClient


def web_client(settings: Settings, token: str | None = None) -> "WebClient":
    """A Web API client for SLACK_API_URL that retries rate limits (honouring Retry-After) and 5xx; its errors
    and retries are counted by method in /metrics (bot/slackcalls.py)."""
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler, ServerErrorRetryHandler

    from .slackcalls import CountingWebClient, counted

    client = CountingWebClient(token=token if token is not None else settings.slack_bot_token,
                               base_url=settings.slack_api_url)
    client.retry_handlers = counted([*client.retry_handlers, RateLimitErrorRetryHandler(max_retry_count=3),
                                     ServerErrorRetryHandler(max_retry_count=2)])
    return client


def channel_facts(client, channel: str) -> tuple[bool, bool] | None:
    """(shared outside the workspace, gad-bot can post there) from conversations.info; None when Slack did not say
    (then nothing meant for `everyone` goes there: each caller says so in its own words). gad-bot posts in a channel
    it is in, and in any public one (the manifest's chat:write.public)."""
    import logging

    try:
        info = client.conversations_info(channel=channel)["channel"]
    except Exception as error:  # SlackApiError or the network: Slack did not say
        response = getattr(error, "response", None)
        why = response.get("error") if response is not None else type(error).__name__
        logging.getLogger(__name__).warning("conversations.info for %s failed: %s", channel, why)
        return None
    shared = bool(info.get("is_ext_shared") or info.get("is_shared") or info.get("is_pending_ext_shared")
                  or info.get("is_org_shared"))
    return shared, bool(info.get("is_member") or not info.get("is_private"))
