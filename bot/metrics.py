"""What `GET /metrics` shows, in Prometheus' text format: the one module that uses prometheus_client.

Events are counted where they happen, on any floor (a report's end in the workers, a sync's in the
sync queue, a digest's in the scheduler, a webhook's in its face):

    metrics.REPORTS.labels(outcome="ok").inc(); metrics.REPORT_SECONDS.observe(1.2)

What is true at scrape time (queue depth, each repository's sync lag, the index's size) is not
kept here: `serve` hands a function returning a `Snapshot` to `watch()`, and each scrape calls it.
The names follow Prometheus' conventions (base units, `_total` on counters, `gad_` prefix); the
help text is what docs/operations.md's alerts are written against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry()

REPORTS = Counter("gad_reports", "Reports answered in serve, by outcome: ok, failed (an error sentence), "
                  "timed_out, cut_off (by a restart).", ["outcome"], registry=REGISTRY)
REPORT_SECONDS = Histogram("gad_report_duration_seconds", "Seconds from a report's start on a worker to its answer.",
                           buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300), registry=REGISTRY)
ACK_SECONDS = Histogram("gad_ack_duration_seconds", "Seconds from a Slack request's arrival to its HTTP answer "
                        "(the ack; Slack gives up after 3).", buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5),
                        registry=REGISTRY)
SYNCS = Counter("gad_syncs", "Syncs of a repository or organization finished in serve, by outcome: ok, failed.",
                ["outcome"], registry=REGISTRY)
DIGESTS = Counter("gad_digests", "Weekly digests, by outcome: posted, failed, missed.", ["outcome"], registry=REGISTRY)
WEBHOOK_DELIVERIES = Counter("gad_webhook_deliveries", "Forge webhook deliveries received, by forge and HTTP status.",
                             ["forge", "status"], registry=REGISTRY)


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
