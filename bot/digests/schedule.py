"""APScheduler jobs in `gad-bot serve`: weekly digests and the periodic sync.

    scheduler = DigestScheduler(settings, engine, slack_client_factory(settings))
    scheduler.start()          # jobs built from the database; a catch-up sweep runs at once
    scheduler.reload()         # after /gad subscribe or /gad unsubscribe (also noticed within a minute)
    scheduler.shutdown(wait=True)

Jobs (a BackgroundScheduler with an in-memory job store, rebuilt from SQLite at every start):
- `digest:<channel>`: one per active subscription, a CronTrigger in the subscription's own time
  zone (day of week, hour, minute). It runs `run_due_digests(..., channels=[channel])`.
- `digest-sweep`: every SWEEP_MINUTES (and once at start) `run_due_digests` for every channel. The
  ledger makes it a no-op when nothing is owed; it delivers what fell due while the bot was down
  (within the grace period) and anything a cron job missed (a misfire while the process was busy,
  a failed post due for a retry). DST cannot skip a digest: a wall time skipped by the change fires
  one hour later by the new clock, and a wall time that happens twice fires twice, the second
  finding the ledger row already there.
- `sync`: every GAD_SYNC_INTERVAL_MINUTES (GAD_WEBHOOK_SYNC_INTERVAL_MINUTES when webhooks are
  configured), fetch and index every tracked repository whose back-off (repos.next_attempt_at, set by
  Engine.sync_one after a failure) has passed; in `serve`, in the sync worker processes. Then every
  tracked forge organization is listed again (bot/engine/forgeorgs.py), its repositories are fetched
  in batches (not one by one with the others), and the channels subscribed to its project are told
  what changed (bot/digests/orgnews.py).
- `subscriptions-watch`: every WATCH_SECONDS, rebuild the digest jobs if the subscriptions changed
  (e.g. from another process), so a missed `reload()` costs at most a minute.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from . import subscriptions as subs
from .digest import ClientFactory, DeliveryResult, run_due_digests
from ..store.index import utcnow

log = logging.getLogger(__name__)

SWEEP_MINUTES = 5
WATCH_SECONDS = 60
# Serve's first periodic sync, after its start. GAD_FIRST_SYNC_SECONDS is a hook for tests (not a setting, not in
# the docs' table): a test that must see that first sync over before it counts syncs waits for it, not 30 s.
FIRST_SYNC_DELAY = timedelta(seconds=float(os.environ.get("GAD_FIRST_SYNC_SECONDS") or 30))
DIGEST_PREFIX = "digest:"


@dataclass(frozen=True)
class JobRun:
    """One scheduled job as `gad-bot status` shows it."""

    id: str
    name: str
    last_run: datetime | None  # when it last finished in this process (None: not yet)
    last_outcome: str | None  # ok, failed, missed
    next_run: datetime | None  # None: paused


def job_id(channel_id: str) -> str:
    return f"{DIGEST_PREFIX}{channel_id}"


def due_repos(engine, now: datetime | None = None, exclude: frozenset[int] | set[int] = frozenset()) -> list:
    """Every tracked repository whose back-off (after a failed sync) has passed (but those in `exclude`)."""
    now = now or utcnow()
    return [repo for repo in engine.repos()
            if repo.id not in exclude and not (repo.next_attempt_at and repo.next_attempt_at > now)]


def sync_due_repos(engine, now: datetime | None = None, exclude: frozenset[int] | set[int] = frozenset()) -> list:
    """Sync every tracked repository not in back-off; one failure never stops the others."""
    now = now or utcnow()
    results = []
    for repo in due_repos(engine, now, exclude):
        try:
            results.append(engine.sync_one(repo, now=now))
        except Exception:  # sync_one records GadErrors itself; anything else is a bug worth a log line
            log.exception("sync of %s failed", repo.name)
    return results


class DigestScheduler:
    def __init__(self, settings, engine, client_factory: ClientFactory | None = None, *,
                 clock: Callable[[], datetime] = utcnow, scheduler: BackgroundScheduler | None = None,
                 sweep_minutes: float = SWEEP_MINUTES, watch_seconds: float = WATCH_SECONDS, sync: bool = True,
                 syncer: Callable[[list], object] | None = None, org_syncer: Callable[[list], object] | None = None,
                 sweeper: Callable[[], object] | None = None, teams: Callable[[], object] | None = None):
        """`client_factory` returns a fresh WebClient per call (default: SLACK_API_URL with SLACK_BOT_TOKEN).

        `syncer`, when given, is handed the names of the repositories due a sync and syncs them
        elsewhere (serve: in the sync worker processes, bot/service/syncs.py); without it the sync job
        syncs them itself, one after the other. `org_syncer` is handed the names of the forge
        organizations to list again (serve: the same workers, which tell subscribed channels what
        changed); without it they are listed here, and their changes announced, after the repositories.
        `sweeper` has the mirrors' leftovers swept before each periodic sync (serve: in a sync worker);
        without it they are swept here (Engine.sweep_mirrors). `teams` returns Slack's user groups (bot/engine/
        teams.py), for the digests of teams.
        """
        from .digest import slack_client_factory

        self.settings = settings
        self.engine = engine
        client_factory = client_factory or slack_client_factory(settings)
        self.client_factory = client_factory
        self.teams = teams
        self.clock = clock
        self.sweep_minutes = sweep_minutes
        self.watch_seconds = watch_seconds
        self.sync_enabled = sync
        self.syncer = syncer
        self.org_syncer = org_syncer
        self.sweeper = sweeper
        self.scheduler = scheduler or BackgroundScheduler(timezone=timezone.utc)
        self._lock = threading.RLock()
        self._signatures: dict[str, tuple] = {}
        self._fingerprint: str | None = None
        self._last_runs: dict[str, tuple[datetime, str]] = {}  # job id: when it last finished, how

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> None:
        """Build every job from the database and start the scheduler thread; catch-up runs at once."""
        wall = datetime.now(timezone.utc)
        grace = int(self.settings.digest_grace_hours * 3600)
        self.scheduler.add_job(self.sweep, IntervalTrigger(minutes=self.sweep_minutes, timezone=timezone.utc),
                               id="digest-sweep", name="deliver every digest owed", replace_existing=True,
                               next_run_time=wall, coalesce=True, max_instances=1, misfire_grace_time=grace)
        if self.sync_enabled:
            # With webhooks on, a push syncs its repository at once; polling is the slower safety net.
            self.scheduler.add_job(self.sync_all, IntervalTrigger(minutes=self.settings.polling_minutes,
                                                                  timezone=timezone.utc),
                                   id="sync", name="sync every tracked repository", replace_existing=True,
                                   next_run_time=wall + FIRST_SYNC_DELAY, coalesce=True, max_instances=1,
                                   misfire_grace_time=None)
        self.scheduler.add_job(self.watch, IntervalTrigger(seconds=self.watch_seconds, timezone=timezone.utc),
                               id="subscriptions-watch", name="follow subscription changes", replace_existing=True,
                               coalesce=True, max_instances=1)
        self.reload()
        from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MISSED

        outcomes = {EVENT_JOB_EXECUTED: "ok", EVENT_JOB_ERROR: "failed", EVENT_JOB_MISSED: "missed"}
        self.scheduler.add_listener(
            lambda event: self._last_runs.__setitem__(event.job_id, (datetime.now(timezone.utc), outcomes[event.code])),
            EVENT_JOB_EXECUTED | EVENT_JOB_ERROR | EVENT_JOB_MISSED)
        self.scheduler.start()

    def shutdown(self, wait: bool = True) -> None:
        """Stop the scheduler; with wait=True, running jobs (a digest being posted) finish first."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=wait)

    def reload(self) -> None:
        """Make the digest jobs match the subscriptions table: add, change or remove `digest:<channel>` jobs."""
        with self._lock:
            grace = int(self.settings.digest_grace_hours * 3600)
            wanted = {job_id(s.channel_id): s for s in subs.all_subscriptions(self.engine.index, include_paused=False)}
            for job in self.scheduler.get_jobs():
                if job.id.startswith(DIGEST_PREFIX) and job.id not in wanted:
                    self.scheduler.remove_job(job.id)
                    self._signatures.pop(job.id, None)
            present = {job.id for job in self.scheduler.get_jobs()}
            for jid, sub in wanted.items():
                signature = (sub.weekday, sub.at, sub.tz)
                if jid in present and self._signatures.get(jid) == signature:
                    continue
                self.scheduler.add_job(self.run_channel, self.trigger_for(sub), args=[sub.channel_id], id=jid,
                                       name=f"weekly digest for {sub.channel_id}", replace_existing=True,
                                       coalesce=True, max_instances=1, misfire_grace_time=grace)
                self._signatures[jid] = signature
            self._fingerprint = subs.fingerprint(self.engine.index)

    @staticmethod
    def trigger_for(sub: subs.Subscription) -> CronTrigger:
        return CronTrigger(**sub.cron_fields(), timezone=sub.zone)

    def job_runs(self) -> list[JobRun]:
        """Every job with its last run in this process and its next, for `gad-bot status` (via serve's heartbeat)."""
        runs = []
        for job in self.scheduler.get_jobs():
            last, outcome = self._last_runs.get(job.id, (None, None))
            runs.append(JobRun(job.id, job.name, last, outcome, getattr(job, "next_run_time", None)))
        return sorted(runs, key=lambda run: run.id)

    def digest_job_ids(self) -> list[str]:
        return sorted(job.id for job in self.scheduler.get_jobs() if job.id.startswith(DIGEST_PREFIX))

    # -- jobs ------------------------------------------------------------------
    def run_channel(self, channel_id: str) -> list[DeliveryResult]:
        return self._run(channels=[channel_id])

    def sweep(self) -> list[DeliveryResult]:
        return self._run(channels=None)

    def _run(self, channels) -> list[DeliveryResult]:
        from .. import metrics

        started = time.monotonic()
        try:
            results = run_due_digests(self.engine, self.client_factory, at=self.clock(), channels=channels,
                                      clock=self.clock, teams=self.teams)
        except Exception as error:
            from ..faults import is_disk_full

            if is_disk_full(error):  # the ledger cannot record a claim: nothing posted, the next run tries again
                log.error("digests are not delivered while the data disk is full; the next run tries again")
            else:
                log.exception("delivering digests failed")
            return []
        seconds = round(time.monotonic() - started, 3)  # the run's: digests of one run are delivered together
        for result in results:
            level = {"posted": logging.INFO, "skipped": logging.DEBUG}.get(result.state, logging.WARNING)
            if result.state in metrics.DIGEST_OUTCOMES:  # posted, failed, missed, unknown, paused
                metrics.DIGESTS.labels(outcome=result.state).inc()
            log.log(level, "digest %s (%.3f s)", result.line(), seconds,
                    extra={"channel": result.channel_id, "outcome": result.state, "seconds": seconds})
        return results

    def sync_all(self) -> list:
        from ..store.orgindex import OrgIndex

        try:  # a serve that runs for months: what a killed `gad-bot track` or untrack left goes here, not at a restart
            (self.sweeper or self.engine.sweep_mirrors)()
        except Exception:
            log.exception("sweeping the mirrors' leftovers failed")
        try:
            members = OrgIndex(self.engine.index).member_repo_ids()  # fetched in batches with their organization
            if self.syncer is not None:
                self.syncer([repo.name for repo in due_repos(self.engine, self.clock(), members)])
                results = []
            else:
                results = sync_due_repos(self.engine, self.clock(), members)
        except Exception:
            log.exception("the periodic sync failed")
            return []
        self.sync_orgs()
        return results

    def sync_orgs(self) -> None:
        """List every tracked forge organization again (new, renamed, gone upstream) and tell its channels."""
        from ..store.orgindex import OrgIndex
        from .orgnews import announce_org_changes

        try:
            names = [org.name for org in OrgIndex(self.engine.index).orgs()]
            if not names:
                return
            if self.org_syncer is not None:
                self.org_syncer(names)
                return
            announce_org_changes(self.engine.index, self.client_factory(), self.engine.sync_orgs(names, fetch=True))
        except Exception:
            log.exception("listing the forge organizations again failed")

    def watch(self) -> None:
        try:
            if subs.fingerprint(self.engine.index) != self._fingerprint:
                self.reload()
        except Exception:
            log.exception("following subscription changes failed")


def next_digest_times(engine, now: datetime | None = None) -> list[tuple[str, datetime | None]]:
    """Each subscribed channel with the next time its digest is due (None while paused), for `gad-bot doctor`."""
    now = now or utcnow()
    times = []
    for sub in subs.all_subscriptions(engine.index, include_paused=True):
        if sub.paused_reason:
            times.append((sub.channel_id, None))
            continue
        times.append((sub.channel_id, DigestScheduler.trigger_for(sub).get_next_fire_time(None, now)))
    return times
