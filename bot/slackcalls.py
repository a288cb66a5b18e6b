"""Every Slack Web API call gad-bot makes, counted by method: errors (Slack's `ok: false`, or no answer)
and retries (a rate limit, a 5xx), for `/metrics`.

    client = CountingWebClient(token=..., base_url=..., retry_handlers=counted([...]))

A revoked token, a missing scope or a Slack outage shows as `gad_slack_api_errors_total{method}`
climbing, with the error code on the client's log line; rate limiting as
`gad_slack_api_retries_total{method}`. Both families are exported at 0 for the methods gad-bot calls
before the first one happens, so an alert on `increase()` sees the first error too.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.handler import RetryHandler

from . import metrics

log = logging.getLogger(__name__)


def method_of(url: str) -> str:
    """`chat.postMessage` from `https://slack.com/api/chat.postMessage` (a method name, never a query string)."""
    name = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    return name if name.replace(".", "").isalnum() and len(name) <= 64 else "other"


class CountingWebClient(WebClient):
    """A WebClient whose failed calls are counted in /metrics, by method."""

    def api_call(self, api_method: str, **kwargs):
        try:
            return super().api_call(api_method, **kwargs)
        except SlackApiError as error:
            _count_error(api_method, str(error.response.get("error") or "error"))
            raise
        except Exception as error:  # no answer: refused connection, time-out, DNS
            _count_error(api_method, type(error).__name__)
            raise


def _count_error(method: str, reason: str) -> None:
    metrics.SLACK_API_ERRORS.labels(method=method_of(method)).inc()
    log.debug("Slack API %s failed: %s", method, reason)


class _Counted(RetryHandler):
    """A retry handler that counts each retry it decides on, then does exactly what `inner` does."""

    def __init__(self, inner: RetryHandler):
        super().__init__(max_retry_count=inner.max_retry_count, interval_calculator=inner.interval_calculator)
        self.inner = inner

    def can_retry(self, *, state, request, response=None, error=None) -> bool:
        return self.inner.can_retry(state=state, request=request, response=response, error=error)

    def prepare_for_next_attempt(self, *, state, request, response=None, error=None) -> None:
        metrics.SLACK_API_RETRIES.labels(method=method_of(request.url)).inc()
        self.inner.prepare_for_next_attempt(state=state, request=request, response=response, error=error)


def counted(handlers: list[RetryHandler]) -> list[RetryHandler]:
    """`handlers`, each counting the retries it asks for."""
    return [h if isinstance(h, _Counted) else _Counted(h) for h in handlers]
