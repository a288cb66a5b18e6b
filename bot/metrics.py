"""What `GET /metrics` shows, in Prometheus' text format: the one module that uses prometheus_client.

Events are counted where they happen, on any floor (a report's end in the workers, a sync's in the
sync queue, a digest's in the scheduler, a webhook's in its face):

    metrics.REPORTS.labels(outcome="ok").inc(); metrics.REPORT_SECONDS.observe(1.2)

What is true at scrape time (queue depth, each repository's sync lag, the index's size) is not
kept here: `serve` hands a function returning a `Snapshot` to `watch()`, and each scrape calls it.
The names follow Prometheus' conventions (base units, `_total` on counters, `gad_` prefix); the
help text is what docs/operations.md's alerts are written against. Every outcome a counter can have is
exported at 0 from the start: `increase()` over a series that appears at 1 sees no increase, so an
alert on the first failed digest would never fire. The process's own memory, CPU and open files come
from prometheus_client's process collector (`process_resident_memory_bytes`, `process_open_fds`, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, ProcessCollector,
                               generate_latest)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry()

ProcessCollector(registry=REGISTRY)  # process_resident_memory_bytes, process_open_fds, process_max_fds, CPU

REPORT_OUTCOMES = ("ok", "refused", "failed", "timed_out", "cut_off")
REPORTS = Counter("gad_reports", "Reports answered in serve, by outcome: ok, refused (the question cannot be "
                  "answered as asked: a typo, an untracked name; told in a sentence), failed (gad-bot's side: "
                  "an internal error, a damaged index, a dead worker), timed_out, cut_off (by a restart).",
                  ["outcome"], registry=REGISTRY)
REPORT_SECONDS = Histogram("gad_report_duration_seconds", "Seconds from a report's start on a worker to its answer.",
                           buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300), registry=REGISTRY)
ACK_SECONDS = Histogram("gad_ack_duration_seconds", "Seconds from a Slack request's arrival to its HTTP answer "
                        "(the ack; Slack gives up after 3).", buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5),
                        registry=REGISTRY)
SYNCS = Counter("gad_syncs", "Syncs of a repository or organization finished in serve, by outcome: ok, failed.",
                ["outcome"], registry=REGISTRY)
SYNC_SECONDS = Histogram("gad_sync_duration_seconds", "Seconds a sync took in serve, from its start on a sync worker "
                         "to its end, by kind: repo (fetch, index, changed paths) or org (a new listing).", ["kind"],
                         buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600), registry=REGISTRY)
FETCH_SECONDS = Histogram("gad_fetch_duration_seconds", "Seconds one repository's fetch from its source took (in a "
                          "sync of serve).", buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800),
                          registry=REGISTRY)
DIGEST_OUTCOMES = ("posted", "failed", "missed", "unknown", "paused")
DIGESTS = Counter("gad_digests", "Weekly digests, by outcome: posted, failed (retried later), missed (due longer ago "
                  "than the grace), unknown (no answer from Slack: never reposted by itself), paused (the channel "
                  "refused it).", ["outcome"], registry=REGISTRY)
WEBHOOK_DELIVERIES = Counter("gad_webhook_deliveries", "Forge webhook deliveries received, by forge and HTTP status.",
                             ["forge", "status"], registry=REGISTRY)
# The Web API methods gad-bot calls: their error and retry series exist (at 0) before the first one.
SLACK_METHODS = ("auth.test", "chat.postMessage", "chat.postEphemeral", "chat.update", "chat.unfurl", "views.publish",
                 "views.open", "users.info", "conversations.info", "files.getUploadURLExternal",
                 "files.completeUploadExternal", "functions.completeSuccess", "functions.completeError",
                 "apps.connections.open")
SLACK_API_ERRORS = Counter("gad_slack_api_errors", "Slack Web API calls that failed, by method: Slack answered "
                           "ok: false (invalid_auth, missing_scope, ...: the log line names it) or did not answer.",
                           ["method"], registry=REGISTRY)
SLACK_API_RETRIES = Counter("gad_slack_api_retries", "Slack Web API calls sent again, by method (a rate limit "
                            "honoured, a 5xx).", ["method"], registry=REGISTRY)

for _outcome in REPORT_OUTCOMES:
    REPORTS.labels(outcome=_outcome)
for _outcome in ("ok", "failed"):
    SYNCS.labels(outcome=_outcome)
for _kind in ("repo", "org"):
    SYNC_SECONDS.labels(kind=_kind)
for _outcome in DIGEST_OUTCOMES:
    DIGESTS.labels(outcome=_outcome)
for _method in SLACK_METHODS:
    SLACK_API_ERRORS.labels(method=_method)
    SLACK_API_RETRIES.labels(method=_method)


@dataclass(frozen=True)
class RepoGauge:
    """One tracked repository at scrape time."""

    repo: str
    lag_seconds: float | None  # since its last successful sync (None: never synced)
    failing: bool  # its last sync failed


@dataclass(frozen=True)
class Snapshot:
    """What is true now, read by `serve` at each scrape."""

    queue_depth: int
    reports_running: int
    workers_alive: int
    index_bytes: int
    repos: list[RepoGauge] = field(default_factory=list)
    sync_waiting: int = 0
    syncs_running: int = 0
    data_free_bytes: int | None = None  # what the service user may still write in the data directory
    disk_full: bool = False
    heartbeat_age_seconds: float | None = None
    slack_token_ok: bool | None = None  # None: not checked yet
    ready: dict[str, bool] = field(default_factory=dict)  # readiness part -> ok


class _Now(Collector):
    def __init__(self, read: Callable[[], Snapshot]):
        self.read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self.read()
        yield GaugeMetricFamily("gad_report_queue_depth", "Reports waiting for a worker.", value=now.queue_depth)
        yield GaugeMetricFamily("gad_reports_running", "Reports computing on a worker now.", value=now.reports_running)
        yield GaugeMetricFamily("gad_report_workers_alive", "Report worker processes alive.", value=now.workers_alive)
        yield GaugeMetricFamily("gad_index_bytes", "Size of the index file (with its WAL), in bytes.",
                                value=now.index_bytes)
        yield GaugeMetricFamily("gad_sync_queue_depth", "Syncs waiting for a sync worker.", value=now.sync_waiting)
        yield GaugeMetricFamily("gad_syncs_running", "Syncs running on a sync worker now.", value=now.syncs_running)
        if now.data_free_bytes is not None:
            yield GaugeMetricFamily("gad_data_dir_free_bytes", "Bytes the service user may still write on the data "
                                    "directory's file system.", value=now.data_free_bytes)
        yield GaugeMetricFamily("gad_data_disk_full", "1 when the data directory's disk is full: writes are refused, "
                                "reports still answer.", value=1 if now.disk_full else 0)
        if now.heartbeat_age_seconds is not None:
            yield GaugeMetricFamily("gad_heartbeat_age_seconds", "Seconds since serve last rewrote its heartbeat file "
                                    "(what `gad-bot healthcheck` reads).", value=now.heartbeat_age_seconds)
        if now.slack_token_ok is not None:
            yield GaugeMetricFamily("gad_slack_token_valid", "1 when Slack accepted SLACK_BOT_TOKEN at its last "
                                    "check (auth.test), 0 when it refused it (revoked, invalid).",
                                    value=1 if now.slack_token_ok else 0)
        ready = GaugeMetricFamily("gad_ready", "1 when this part of readiness (/readyz) is ok, 0 when it fails.",
                                  labels=["part"])
        for part, ok in now.ready.items():
            ready.add_metric([part], 1 if ok else 0)
        yield ready
        lag = GaugeMetricFamily("gad_sync_lag_seconds", "Seconds since the repository's last successful sync.",
                                labels=["repo"])
        failing = GaugeMetricFamily("gad_sync_failing", "1 when the repository's last sync failed.", labels=["repo"])
        for repo in now.repos:
            if repo.lag_seconds is not None:
                lag.add_metric([repo.repo], repo.lag_seconds)
            failing.add_metric([repo.repo], 1 if repo.failing else 0)
        yield lag
        yield failing


_watched: list[Collector] = []


def watch(read: Callable[[], Snapshot]) -> None:
    """Have each scrape call `read` (one at a time: a second call replaces the first)."""
    for old in _watched:
        REGISTRY.unregister(old)
    _watched.clear()
    collector = _Now(read)
    REGISTRY.register(collector)
    _watched.append(collector)


def exposition() -> tuple[bytes, str]:
    """The body and Content-Type of an answer to `GET /metrics`."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
