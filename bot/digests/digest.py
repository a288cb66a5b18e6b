"""Weekly digests: build them from the engine, and deliver each one at most once per channel and week.

    run_due_digests(engine, client_factory, at=None, dry_run=False) -> list[DeliveryResult]

is what both `gad-bot digest` and the scheduler in `gad-bot serve` run: every digest due at `at`
(within the grace period) and not delivered yet is synced, built, claimed in the ledger, and
posted. `preview_digest(engine, channel_id, now)` builds the channel's next digest for an
ephemeral `/gad digest` answer and never touches the ledger.

The ledger (table `deliveries`, one row per (channel, period_start))
--------------------------------------------------------------------
Slack has no idempotency key for chat.postMessage, so "exactly once" is built as "at most once,
and nearly always once". A row moves through these states; every move is one SQLite statement
or one BEGIN IMMEDIATE transaction, so two deliverers (threads, `serve` and `gad-bot digest`, or
two hosts on one data directory) can never both post:

    (none) --claim--> claimed --start_post--> posting --> posted      (message_ts kept)
                         |                        |-----> failed      Slack said no (ok:false), or 429/5xx
                         |                        |                   until the retries ran out: not posted
                         |                        '-----> unknown     the request went out and no answer came
                         '-- (crash / took over) -- stale claimed rows are claimable again
    (none) --------------------------------------------> missed      due longer ago than the grace period

* **claim** (BEGIN IMMEDIATE): insert the row as `claimed` with a fresh random token, or take over
  a row that is verifiably unposted: `claimed` for longer than STALE_CLAIM (its owner died while
  syncing or uploading the chart, before it ever called chat.postMessage), or `failed` at least
  RETRY_FAILED_AFTER ago and fewer than MAX_CLAIMS times. Anything else means someone else has
  it: skip.
* **start_post** is a compare-and-set `claimed -> posting` on the claimer's own token, made just
  before chat.postMessage. A deliverer that was slow (not dead) and got taken over fails the CAS
  and does not post: the token is a fencing token.
* Within one claim, 429 (sleeping Retry-After) and 5xx are retried (MAX_POST_ATTEMPTS, with
  back-off), as is a refused connection; Slack does not post on those answers.
* The crash window is the chat.postMessage call itself: a row left in `posting` by a dead process
  (or a request that timed out / lost its connection, stored as `unknown`) may or may not have
  been posted. It is **never reposted automatically**; `/gad subscriptions` shows it as
  "unknown", and an operator who has looked at the channel may `release()` it (then the next run
  posts it, if still within the grace period).
* Slack errors that will not heal (PERMANENT_ERRORS) pause the subscription; subscribing again
  unpauses it, and a failed row within the grace period is then retried.

A digest that fell due while nothing was running is delivered by the next run that sees it within
`Settings.digest_grace_hours`; older ones are recorded as `missed` and not posted late. A period
that fell due before the subscription was created is never delivered.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time as _time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone

from ..errors import DigestError, GadError, UnknownRepoError
from ..store.index import Index, RepoRow, _iso, parse_time, utcnow
from ..metric import Row
from ..engine.audiences import OPERATOR, Viewer
from ..engine.query import Query
from ..engine.teams import Teams
from ..slackapi import channel_facts
from . import subscriptions as subs
from .rows import Digest, Figures
from .subscriptions import DeliveryRecord, Subscription

log = logging.getLogger(__name__)

STALE_CLAIM = timedelta(minutes=15)  # a claim that never reached chat.postMessage is free again after this
STALE_POSTING = timedelta(minutes=15)  # longer than any post with its retries may take: shown as unknown
RETRY_FAILED_AFTER = timedelta(minutes=10)
MAX_CLAIMS = 5
MAX_POST_ATTEMPTS = 5
MAX_RETRY_AFTER = 120.0  # seconds; a longer Retry-After ends this claim as failed (retried by a later run)
FRESH_SYNC = timedelta(minutes=10)  # repositories synced this recently are not fetched again for a digest
TREND_WEEKS = 12
PERMANENT_ERRORS = frozenset({"channel_not_found", "is_archived", "not_in_channel", "token_revoked",
                              "account_inactive"})

ClientFactory = Callable[[], "object"]


def slack_client_factory(settings) -> ClientFactory:
    """A factory of fresh WebClients for the configured Slack API, without the SDK's own retries.

    The SDK's default ConnectionErrorRetryHandler would resend a chat.postMessage whose answer was
    lost, which could post a digest twice; the deliverer does its own, safe, retrying.
    """
    from ..slackcalls import CountingWebClient  # its errors counted by method in /metrics

    def make():
        return CountingWebClient(base_url=settings.slack_api_url, token=settings.slack_bot_token, retry_handlers=[])

    return make


# -- the ledger -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    channel_id: str
    period_start: date
    token: str


def _worker_token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _record(row: tuple, now: datetime) -> DeliveryRecord:
    channel, period, state, claimed_at, posted_at, ts, attempts, error = row
    claimed = parse_time(claimed_at)
    shown = state
    if state == "claimed":
        shown = "failed" if claimed and now - claimed >= STALE_CLAIM else "in progress"
    elif state == "posting":
        shown = "unknown" if claimed and now - claimed >= STALE_POSTING else "in progress"
    return DeliveryRecord(channel, date.fromisoformat(period), state, shown, claimed, parse_time(posted_at), ts,
                          attempts, error)


_COLUMNS = "channel_id, period_start, state, claimed_at, posted_at, message_ts, attempts, error"


class Ledger:
    """The `deliveries` table: who may post the digest for (channel, week). See the module docstring."""

    def __init__(self, index: Index):
        self.index = index

    def get(self, channel_id: str, period_start: date, now: datetime | None = None) -> DeliveryRecord | None:
        row = self.index.execute(f"SELECT {_COLUMNS} FROM deliveries WHERE channel_id = ? AND period_start = ?",
                                 (channel_id, period_start.isoformat())).fetchone()
        return _record(tuple(row), now or utcnow()) if row else None

    @staticmethod
    def claimable(state: str, claimed_at: datetime | None, attempts: int, now: datetime) -> bool:
        """Whether a row is verifiably unposted and may be claimed again."""
        if claimed_at is None:
            return False
        if state == "claimed":
            return now - claimed_at >= STALE_CLAIM
        if state == "failed":
            return now - claimed_at >= RETRY_FAILED_AFTER and attempts < MAX_CLAIMS
        return False

    def claim(self, channel_id: str, period_start: date, now: datetime, token: str | None = None) -> Claim | None:
        """Claim (channel, week) for posting, in one BEGIN IMMEDIATE transaction; None when someone else has it."""
        token = token or _worker_token()
        key = (channel_id, period_start.isoformat())
        with self.index.transaction() as db:
            row = db.execute("SELECT state, claimed_at, attempts FROM deliveries WHERE channel_id = ? AND period_start = ?",
                             key).fetchone()
            if row is None:
                db.execute("INSERT INTO deliveries (channel_id, period_start, state, claimed_by, claimed_at, attempts) "
                           "VALUES (?, ?, 'claimed', ?, ?, 1)", (*key, token, _iso(now)))
            elif self.claimable(row[0], parse_time(row[1]), row[2], now):
                db.execute("UPDATE deliveries SET state = 'claimed', claimed_by = ?, claimed_at = ?, attempts = attempts + 1, "
                           "error = NULL WHERE channel_id = ? AND period_start = ?", (token, _iso(now), *key))
            else:
                return None
        return Claim(channel_id, period_start, token)

    def start_post(self, claim: Claim) -> bool:
        """claimed -> posting, only if the claim is still ours (the fencing step before chat.postMessage)."""
        cursor = self.index.execute(
            "UPDATE deliveries SET state = 'posting' WHERE channel_id = ? AND period_start = ? AND claimed_by = ? "
            "AND state = 'claimed'", (claim.channel_id, claim.period_start.isoformat(), claim.token))
        return cursor.rowcount == 1

    def finish(self, claim: Claim, state: str, now: datetime, *, message_ts: str | None = None,
               error: str | None = None) -> None:
        assert state in ("posted", "failed", "unknown")
        self.index.execute(
            "UPDATE deliveries SET state = ?, posted_at = ?, message_ts = ?, error = ? "
            "WHERE channel_id = ? AND period_start = ? AND claimed_by = ?",
            (state, _iso(now) if state == "posted" else None, message_ts, error,
             claim.channel_id, claim.period_start.isoformat(), claim.token))

    def mark_missed(self, channel_id: str, period_start: date, now: datetime, reason: str) -> bool:
        """Record a digest that fell due longer ago than the grace period (never posted late)."""
        cursor = self.index.execute(
            "INSERT OR IGNORE INTO deliveries (channel_id, period_start, state, claimed_at, attempts, error) "
            "VALUES (?, ?, 'missed', ?, 0, ?)", (channel_id, period_start.isoformat(), _iso(now), reason))
        return cursor.rowcount == 1

    def overlapping_delivery(self, channel_id: str, period_start: date, due_at: datetime) -> DeliveryRecord | None:
        """Another period's delivery that covers some of these days and was made at or after `due_at`.

        Periods are named by their first day. Before digests covered the seven days up to the day
        before delivery, every period started on a Monday; a Friday digest posted just before an
        upgrade is keyed by that Monday, and must not be posted again under the new key.
        """
        low, high = period_start - timedelta(days=6), period_start + timedelta(days=6)
        for row in self.index.execute(
                f"SELECT {_COLUMNS} FROM deliveries WHERE channel_id = ? AND period_start BETWEEN ? AND ? "
                "AND period_start != ? AND state IN ('claimed', 'posting', 'posted', 'unknown')",
                (channel_id, low.isoformat(), high.isoformat(), period_start.isoformat())):
            record = _record(tuple(row), utcnow())
            if record.claimed_at is not None and record.claimed_at >= due_at:
                return record
        return None

    def release(self, channel_id: str, period_start: date) -> bool:
        """Operator's escape hatch: forget an unposted or unknown row so the next run may post it.

        Only for `unknown`/`posting`/`failed`/`claimed` rows, after checking the channel by hand;
        posted and missed rows stay.
        """
        cursor = self.index.execute(
            "DELETE FROM deliveries WHERE channel_id = ? AND period_start = ? AND state IN "
            "('unknown', 'posting', 'failed', 'claimed')", (channel_id, period_start.isoformat()))
        return cursor.rowcount == 1

    def rows(self, channel_id: str | None = None) -> list[DeliveryRecord]:
        now = utcnow()
        sql = f"SELECT {_COLUMNS} FROM deliveries"
        params: tuple = ()
        if channel_id:
            sql += " WHERE channel_id = ?"
            params = (channel_id,)
        return [_record(tuple(r), now) for r in self.index.execute(sql + " ORDER BY channel_id, period_start", params)]


def last_delivery(index: Index, channel_id: str, now: datetime | None = None) -> DeliveryRecord | None:
    row = index.execute(f"SELECT {_COLUMNS} FROM deliveries WHERE channel_id = ? ORDER BY period_start DESC LIMIT 1",
                        (channel_id,)).fetchone()
    return _record(tuple(row), now or utcnow()) if row else None


# -- building -------------------------------------------------------------------------------------


class ReportCache:
    """Engine reports shared by every digest of one run (many channels watch the same repositories)."""

    def __init__(self, engine, teams: Callable[[], Teams] | None = None):
        self.engine = engine
        self._teams_source = teams  # Slack's user groups, asked once a run, for the digests of teams
        self._teams: Teams | None = None
        self._reports: dict = {}
        self._lock = threading.Lock()

    def teams(self) -> Teams:
        with self._lock:
            if self._teams is None:
                if self._teams_source is None:
                    raise DigestError("This digest counts Slack user groups' people, and this run cannot ask Slack "
                                      "for them (no SLACK_BOT_TOKEN).")
                self._teams = self._teams_source()
            return self._teams

    def report(self, names: tuple[str, ...], since: date | None, until: date | None, by: str | None, today: date,
               viewer: Viewer, teams: tuple[str, ...] = ()):
        key = (names, since, until, by, viewer, teams)  # a channel may see less of a project than another
        with self._lock:
            found = self._reports.get(key)
        if found is None:
            found = self.engine.report(Query(repos=names, since=since, until=until, by=by, teams=teams), today, viewer,
                                       self.teams() if teams else None)
            with self._lock:
                self._reports[key] = found
        return found


def _period_rows(cache: ReportCache, names: tuple[str, ...], start: date, today: date, viewer: Viewer,
                 teams: tuple[str, ...] = ()) -> list[Row]:
    """The TREND_WEEKS + 1 seven-day periods ending with the one from `start`, oldest first.

    Periods starting on a Monday are ISO weeks: one `by:week` report gives them all. Others
    (`day:fri` covers Friday to Thursday) are one report each, keyed by their first day.
    """
    end = start + timedelta(days=6)
    if start.weekday() == 0:
        rows = list(cache.report(names, start - timedelta(weeks=TREND_WEEKS), end, "week", today, viewer, teams).rows)
    else:
        rows = []
        for k in range(TREND_WEEKS, -1, -1):
            first = start - timedelta(weeks=k)
            totals = cache.report(names, first, first + timedelta(days=6), None, today, viewer, teams).totals
            rows.append(Row(first.isoformat(), totals, first))
    if len(rows) != TREND_WEEKS + 1:  # by_period always fills the span; be loud if that ever changes
        raise DigestError(f"The weekly trend for {', '.join(names)} has {len(rows)} weeks instead of "
                          f"{TREND_WEEKS + 1}.")
    return rows


def _figures(cache: ReportCache, name: str, names: tuple[str, ...], start: date, today: date,
             before_people: set[str], viewer: Viewer, teams: tuple[str, ...] = ()) -> tuple[Figures, object]:
    end = start + timedelta(days=6)
    week = cache.report(names, start, end, "person", today, viewer, teams)
    rows = _period_rows(cache, names, start, today, viewer, teams)
    earlier = rows[:TREND_WEEKS]
    average = sum(r.totals.two_gad for r in earlier) / TREND_WEEKS
    week_people = tuple(r.key for r in week.rows)
    new = tuple(sorted(p for p in week_people if p not in before_people))
    return Figures(name, week.totals, earlier[-1].totals, average, tuple(rows[1:]), tuple(week.rows), new), week


def channel_viewer(client_factory: ClientFactory | None, channel: str) -> Viewer:
    """The channel a digest is posted in, as audiences see it (conversations.info: shared outside the workspace?).
    When Slack cannot say, nothing is posted: a DigestError, recorded and tried again by a later run."""
    if client_factory is None:
        raise DigestError("No Slack client is configured; set SLACK_BOT_TOKEN.")
    facts = channel_facts(client_factory(), channel)
    if facts is None:
        raise DigestError(f"Slack could not say whether <#{channel}> is shared outside the workspace, so its digest "
                          "waits until it can (who may see each repository depends on it).")
    return Viewer.of_channel(channel, shared_outside=facts[0])


def _resolve(engine, names: Iterable[str], viewer: Viewer) -> tuple[list[RepoRow], list[str], list[str]]:
    """The repositories the channel (`viewer`) may see, the names untracked since, the names it may not see."""
    repos: dict[int, RepoRow] = {}
    missing, closed = [], []
    for name in names:
        try:
            for repo in engine.resolve([name], viewer):
                repos[repo.id] = repo
        except UnknownRepoError:
            (closed if engine.catalog.unseen(viewer, [name]) else missing).append(name)
    return sorted(repos.values(), key=lambda r: r.name), missing, closed


def build_digest(engine, sub: Subscription, period_start: date, *, viewer: Viewer, cache: ReportCache | None = None,
                 stale: dict[str, str] | None = None, preview: bool = False, now: datetime | None = None) -> Digest:
    """The digest of `sub` for the week starting on Monday `period_start` (figures equal `engine.report`'s), of
    what `viewer` (the channel it is posted in) may see; a name it may no longer see is left out, and said."""
    cache = cache or ReportCache(engine)
    now = now or utcnow()
    today = now.astimezone(sub.zone).date()
    repos, missing, closed = _resolve(engine, sub.repos, viewer)
    if not repos and closed:
        raise DigestError("This channel may no longer see " + ", ".join(f"`{n}`" for n in closed)
                          + " (an admin changed who may see them), so its digest has nothing to show; subscribe to "
                            "others or `unsubscribe all`.")
    if not repos:
        raise DigestError("None of this channel's repositories is tracked any more ("
                          + ", ".join(f"`{n}`" for n in sub.repos) + "); subscribe to others or `unsubscribe all`.")
    before: dict[str, set[str]] = {}
    for repo in repos:
        earlier = cache.report((repo.name,), None, period_start - timedelta(days=1), "person", today, viewer,
                               sub.teams)
        before[repo.name] = {r.key for r in earlier.rows}
    per_repo = []
    for repo in repos:
        figures, _ = _figures(cache, repo.name, (repo.name,), period_start, today, before[repo.name], viewer,
                              sub.teams)
        per_repo.append(figures)
    names = tuple(r.name for r in repos)
    if len(repos) == 1:
        total = per_repo[0]
        week_report = cache.report(names, period_start, period_start + timedelta(days=6), "person", today, viewer,
                                   sub.teams)
    else:
        everyone_before = set().union(*before.values())
        total, week_report = _figures(cache, "all", names, period_start, today, everyone_before, viewer, sub.teams)
    stale = stale or {}
    end = period_start + timedelta(days=6)
    return Digest(channel_id=sub.channel_id, period_start=period_start, period_end=end, tz=sub.tz,
                  people=sub.people, total=total, repos=tuple(per_repo), untracked=tuple(missing),
                  restricted=tuple(closed), teams=sub.teams,
                  scope_words=week_report.scope_words, data_as_of=week_report.data_as_of,
                  stale=tuple((n, stale[n]) for n in names if n in stale), preview=preview,
                  so_far=today if preview and today < end else None)


def sync_repos(engine, repos: Iterable[RepoRow], now: datetime) -> dict[str, str]:
    """Fetch each repository before its digest is built, honouring back-off; return {name: why stale}."""
    stale: dict[str, str] = {}
    for repo in repos:
        if repo.last_success_at and now - repo.last_success_at < FRESH_SYNC and not repo.last_error:
            continue
        if repo.next_attempt_at and repo.next_attempt_at > now:
            stale[repo.name] = f"fetching has been failing ({repo.last_error or 'error'}); next try {_iso(repo.next_attempt_at)}"
            continue
        result = engine.sync_one(repo, now=now)
        if result.error:
            stale[repo.name] = f"fetch failed: {result.error}"
    return stale


# -- delivering -----------------------------------------------------------------------------------


@dataclass
class DeliveryResult:
    channel_id: str
    period_start: date
    due_at: datetime | None
    state: str  # posted | dry_run | skipped | failed | paused | unknown | missed
    detail: str = ""
    message_ts: str | None = None
    post_attempts: int = 0
    chart: str | None = None  # "image" (PNG uploaded) or "sparkline"
    data_as_of: datetime | None = None
    stale: tuple[str, ...] = ()
    text: str | None = None
    blocks: list | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        out = {"channel": self.channel_id, "period_start": self.period_start.isoformat(),
               "period_end": (self.period_start + timedelta(days=6)).isoformat(),
               "due_at": _iso(self.due_at), "state": self.state, "detail": self.detail,
               "message_ts": self.message_ts, "post_attempts": self.post_attempts, "chart": self.chart,
               "data_as_of": _iso(self.data_as_of), "stale_repos": list(self.stale), "text": self.text}
        if self.blocks is not None:
            out["blocks"] = self.blocks
        return out

    def line(self) -> str:
        """One line for the CLI: 'C123 2026-11-23 to 2026-11-29: posted (ts 1796...)'."""
        end = self.period_start + timedelta(days=6)
        text = f"{self.channel_id} {self.period_start.isoformat()} to {end.isoformat()}: {self.state}"
        if self.message_ts:
            text += f" (ts {self.message_ts})"
        if self.detail:
            text += f": {self.detail}"
        return text


class ChannelPacer:
    """At most one message per second per channel (Slack's chat.postMessage limit), across threads."""

    def __init__(self, interval: float = 1.0, clock: Callable[[], float] = _time.monotonic,
                 sleep: Callable[[float], None] = _time.sleep):
        self.interval, self.clock, self.sleep = interval, clock, sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, channel_id: str) -> None:
        with self._lock:
            now = self.clock()
            start = max(now, self._next.get(channel_id, now))
            self._next[channel_id] = start + self.interval
        if start > now:
            self.sleep(start - now)

    def hold(self, channel_id: str, seconds: float) -> None:
        """Slack said Retry-After: nobody posts to the channel before then."""
        with self._lock:
            self._next[channel_id] = max(self._next.get(channel_id, 0.0), self.clock() + seconds)


PACER = ChannelPacer()  # shared by every deliverer in the process (scheduler jobs and the CLI)


def _not_sent(error: BaseException) -> bool:
    """Connection errors that prove the request never reached Slack (so retrying cannot double-post)."""
    reason = getattr(error, "reason", None)
    for candidate in (error, reason, error.__cause__, error.__context__):
        if isinstance(candidate, (ConnectionRefusedError, socket.gaierror)):
            return True
    return False


def _slack_error(error) -> tuple[int, str, float | None]:
    response = error.response
    status = getattr(response, "status_code", 200) or 200
    code = ""
    try:
        code = response.get("error") or ""
    except Exception:  # a non-JSON body
        code = ""
    retry_after = None
    headers = getattr(response, "headers", None) or {}
    for key in ("Retry-After", "retry-after"):
        value = headers.get(key) if hasattr(headers, "get") else None
        if value is not None:
            try:
                retry_after = float(value if not isinstance(value, list) else value[0])
            except ValueError:
                retry_after = None
            break
    return status, code, retry_after


class Deliverer:
    """Posts digests: one claim per (channel, week), retries inside it, pauses on errors that will not heal."""

    def __init__(self, engine, client_factory: ClientFactory | None, *, clock: Callable[[], datetime] = utcnow,
                 sleep: Callable[[float], None] = _time.sleep, pacer: ChannelPacer | None = None, charts: bool = True):
        self.engine = engine
        self.ledger = Ledger(engine.index)
        self.client_factory = client_factory
        self.clock = clock
        self.sleep = sleep
        self.pacer = pacer or PACER
        self.charts = charts
        self._local = threading.local()
        self._no_files = False  # learned from a missing_scope answer: the app lacks files:write

    def client(self):
        client = getattr(self._local, "client", None)
        if client is None:
            if self.client_factory is None:
                raise DigestError("No Slack client is configured; set SLACK_BOT_TOKEN.")
            client = self.client_factory()
            client.retry_handlers = []  # see slack_client_factory: never let the SDK resend a post
            self._local.client = client
        return client

    # -- charts --------------------------------------------------------------
    def _upload_chart(self, digest: Digest) -> str | None:
        if not self.charts or self._no_files:
            return None
        from slack_sdk.errors import SlackApiError

        from .blocks import chart_alt_text, digest_chart_png

        try:
            png = digest_chart_png(digest)
            response = self.client().files_upload_v2(
                filename=f"gad-digest-{digest.period_start.isoformat()}.png", content=png,
                title=f"2GAD per week, {TREND_WEEKS} weeks to {digest.period_end.isoformat()}",
                alt_txt=chart_alt_text(digest), request_file_info=False)
            files = response.get("files") or [response.get("file") or {}]
            return files[0].get("id")
        except SlackApiError as error:
            _, code, _ = _slack_error(error)
            if code == "missing_scope":
                self._no_files = True
                log.info("the Slack app lacks files:write; digests show a text sparkline instead of a chart")
            else:
                log.warning("uploading the digest chart for %s failed (%s); using a sparkline", digest.channel_id, code)
        except Exception as error:  # a chart is never worth losing the digest
            log.warning("uploading the digest chart for %s failed (%s); using a sparkline", digest.channel_id, error)
        return None

    def _tell_subscriber(self, sub: Subscription, reason: str) -> None:
        """A direct message to whoever subscribed the channel: why its digest paused and how to resume."""
        from slack_sdk.errors import SlackApiError

        from .blocks import paused_dm_blocks

        message = paused_dm_blocks(sub, reason)
        if message is None or not sub.created_by:
            return
        try:  # posting to a user id opens the app's DM with them
            self.client().chat_postMessage(channel=sub.created_by, text=message[0], blocks=message[1],
                                           unfurl_links=False, unfurl_media=False)
        except SlackApiError as error:  # the pause stands and `/gad subscriptions` shows it; the DM is a courtesy
            log.info("could not tell %s that the digest of %s paused: %s", sub.created_by, sub.channel_id,
                     _slack_error(error)[1])

    # -- one digest ----------------------------------------------------------
    def deliver(self, sub: Subscription, digest: Digest, due_at: datetime | None) -> DeliveryResult:
        from slack_sdk.errors import SlackApiError

        from .blocks import digest_blocks

        base = DeliveryResult(sub.channel_id, digest.period_start, due_at, "skipped", data_as_of=digest.data_as_of,
                              stale=tuple(n for n, _ in digest.stale))
        claim = self.ledger.claim(sub.channel_id, digest.period_start, self.clock())
        if claim is None:
            record = self.ledger.get(sub.channel_id, digest.period_start, self.clock())
            return replace(base, detail=_why_skipped(record))
        file_id = self._upload_chart(digest)
        text, blocks = digest_blocks(digest, chart_file_id=file_id)
        chart = "image" if file_id else "sparkline"
        self.pacer.wait(sub.channel_id)
        if not self.ledger.start_post(claim):
            return replace(base, detail="another deliverer took this digest over")
        attempts = 0
        backoff = 1.0
        while True:
            attempts += 1
            try:
                response = self.client().chat_postMessage(channel=sub.channel_id, text=text, blocks=blocks,
                                                          unfurl_links=False, unfurl_media=False)
            except SlackApiError as error:
                status, code, retry_after = _slack_error(error)
                if status == 429 or code == "ratelimited":
                    wait = retry_after if retry_after is not None else 1.0
                    if attempts < MAX_POST_ATTEMPTS and wait <= MAX_RETRY_AFTER:
                        self.pacer.hold(sub.channel_id, wait)
                        self.sleep(wait)
                        continue
                    return self._failed(claim, base, attempts, chart, f"rate limited ({code or status})")
                if status >= 500:
                    if attempts < MAX_POST_ATTEMPTS:
                        self.sleep(backoff)
                        backoff = min(backoff * 2, 30.0)
                        continue
                    return self._failed(claim, base, attempts, chart, f"Slack answered HTTP {status}")
                if code == "invalid_blocks" and file_id:
                    # Slack may refuse a chart it has not finished processing: post the sparkline version.
                    file_id, chart = None, "sparkline"
                    text, blocks = digest_blocks(digest, chart_file_id=None)
                    continue
                if code in PERMANENT_ERRORS:
                    self.ledger.finish(claim, "failed", self.clock(), error=code)
                    subs.pause(self.engine.index, sub.channel_id, code, self.clock())
                    log.warning("digest for %s paused: %s", sub.channel_id, code)
                    self._tell_subscriber(sub, code)
                    return replace(base, state="paused", detail=code, post_attempts=attempts, chart=chart)
                return self._failed(claim, base, attempts, chart, code or f"HTTP {status}")
            except Exception as error:
                if _not_sent(error) and attempts < MAX_POST_ATTEMPTS:
                    self.sleep(backoff)
                    backoff = min(backoff * 2, 30.0)
                    continue
                if _not_sent(error):
                    return self._failed(claim, base, attempts, chart, f"could not reach Slack: {error}")
                # The request may have reached Slack: never resend (at most once).
                self.ledger.finish(claim, "unknown", self.clock(), error=f"{type(error).__name__}: {error}")
                log.error("digest for %s: no answer from Slack (%s); not reposting", sub.channel_id, error)
                return replace(base, state="unknown", detail=f"no answer from Slack ({type(error).__name__}); "
                               "not reposted", post_attempts=attempts, chart=chart)
            ts = response.get("ts")
            self.ledger.finish(claim, "posted", self.clock(), message_ts=ts)
            return replace(base, state="posted", message_ts=ts, post_attempts=attempts, chart=chart, text=text)

    def _failed(self, claim: Claim, base: DeliveryResult, attempts: int, chart: str | None, why: str) -> DeliveryResult:
        self.ledger.finish(claim, "failed", self.clock(), error=why)
        log.warning("digest for %s failed: %s", claim.channel_id, why)
        return replace(base, state="failed", detail=why + " (retried by a later run within the grace period)",
                       post_attempts=attempts, chart=chart)


def release_words(ledger: Ledger, channel_id: str, period_start: date | None, grace_hours: int) -> str:
    """`gad-bot release-digest`: release the channel's one digest left `unknown` (or the one of `period_start`),
    so the next run may post it; DigestError (one sentence) when there is nothing such to release."""
    rows = ledger.rows(channel_id)
    if period_start is not None:
        rows = [r for r in rows if r.period_start == period_start]
        if not rows:
            raise DigestError(f"{channel_id} has no digest for the week of {period_start.isoformat()} in the ledger; "
                              f"`/gad subscriptions` in that channel lists its weeks.")
    unknown = [r for r in rows if r.shown_state == "unknown"]
    if not unknown:
        if period_start is not None:
            (row,) = rows
            if row.shown_state == "in progress":
                raise DigestError(f"The digest of {channel_id} for the week of {period_start.isoformat()} is being "
                                  f"posted (since {_iso(row.claimed_at)}); a post that never ends counts as unknown "
                                  f"{int(STALE_POSTING.total_seconds() // 60)} minutes after it began: release it then.")
            raise DigestError(f"The digest of {channel_id} for the week of {period_start.isoformat()} is {row.state}, "
                              "not unknown: there is nothing to release.")
        raise DigestError(f"{channel_id} has no digest left unknown: there is nothing to release.")
    if len(unknown) > 1:
        weeks = ", ".join(r.period_start.isoformat() for r in unknown)
        raise DigestError(f"{channel_id} has {len(unknown)} digests left unknown (weeks of {weeks}); name the week "
                          f"to release, e.g. `gad-bot release-digest {channel_id} {unknown[-1].period_start.isoformat()}`.")
    (row,) = unknown
    if not ledger.release(channel_id, row.period_start):
        raise DigestError(f"The digest of {channel_id} for the week of {row.period_start.isoformat()} changed meanwhile; "
                          "run the command again.")
    log.info("digest for %s (week of %s) released by the operator", channel_id, row.period_start.isoformat())
    return (f"released the digest of {channel_id} for the week of {row.period_start.isoformat()}: the next run posts "
            f"it, if that is within GAD_DIGEST_GRACE_HOURS ({grace_hours} h) of when it fell due.")


def _why_skipped(record: DeliveryRecord | None) -> str:
    if record is None:
        return "already handled"
    if record.state == "posted":
        return f"already posted at {_iso(record.posted_at)}"
    if record.shown_state == "in progress":
        return "being delivered by another process"
    if record.shown_state == "unknown":
        return "an earlier post got no answer from Slack; not reposted (see gad-bot docs: release)"
    if record.state == "missed":
        return "missed: it fell due longer ago than the grace period"
    return f"{record.state}: {record.error or ''}".rstrip(": ")


def parse_at(text: str) -> datetime:
    """`gad-bot digest --at TEXT`: an ISO-8601 instant; without an offset it is taken as UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise DigestError(f"`{text}` is not an ISO-8601 time; use e.g. 2026-11-30T09:00Z or 2026-11-30T10:00+01:00.") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def run_due_digests(engine, client_factory: ClientFactory | None, at: datetime | None = None, dry_run: bool = False,
                    *, channels: Iterable[str] | None = None, sync: bool = True, workers: int = 8,
                    clock: Callable[[], datetime] = utcnow, sleep: Callable[[float], None] = _time.sleep,
                    pacer: ChannelPacer | None = None, charts: bool = True,
                    teams: Callable[[], Teams] | None = None) -> list[DeliveryResult]:
    """Deliver every digest due at `at` (default: now) that is not delivered yet, each at most once.

    The same code path for `gad-bot digest [--at TIME]` and for the scheduler's jobs. `dry_run` is
    `preview_due_digests`: every subscription's digest as it would be posted, nothing synced,
    claimed or posted.
    `channels` limits the run to those channels (a scheduler job passes its own). `clock` stamps the
    ledger; `at` only decides what is due.
    """
    now = clock()
    at = at or now
    if at.tzinfo is None:
        raise DigestError("The time to deliver at needs a time zone, e.g. 2026-11-30T09:00+00:00 or ...Z.")
    if dry_run:
        return preview_due_digests(engine, at, channels=channels, workers=workers, client_factory=client_factory,
                                   teams=teams)
    if at > now + timedelta(minutes=1):
        raise DigestError("Digests can only be delivered for times that have come: "
                          f"{_iso(at)} is in the future.")
    grace = timedelta(hours=engine.settings.digest_grace_hours)
    ledger = Ledger(engine.index)
    wanted = set(channels) if channels is not None else None
    results: list[DeliveryResult] = []
    work: list[tuple[Subscription, date, datetime]] = []
    for sub in subs.all_subscriptions(engine.index):
        if wanted is not None and sub.channel_id not in wanted:
            continue
        due = sorted(sub.due_periods(at, grace))  # oldest first
        if not due:
            newest = sub.period_due_before(at)
            due_at = sub.due_at(newest)
            if sub.created_at <= due_at <= at - grace and ledger.get(sub.channel_id, newest) is None:
                if ledger.mark_missed(sub.channel_id, newest, now, f"not delivered within {engine.settings.digest_grace_hours} h"):
                    results.append(DeliveryResult(sub.channel_id, newest, due_at, "missed",
                                                  "fell due longer ago than the grace period; not posted late"))
            continue
        for period, due_at in due:
            earlier = ledger.overlapping_delivery(sub.channel_id, period, due_at)
            if earlier is not None:
                results.append(DeliveryResult(sub.channel_id, period, due_at, "skipped",
                                              f"already delivered as the period from {earlier.period_start.isoformat()}"))
                continue
            record = ledger.get(sub.channel_id, period, now)
            if record is not None and not Ledger.claimable(record.state, record.claimed_at, record.attempts, now):
                if record.state != "posted":  # posted ones are the normal case: say nothing
                    results.append(DeliveryResult(sub.channel_id, period, due_at, "skipped", _why_skipped(record),
                                                  message_ts=record.message_ts))
                continue
            if sub.paused:
                results.append(DeliveryResult(sub.channel_id, period, due_at, "paused",
                                              f"subscription paused ({sub.paused_reason}); subscribe again to resume"))
                continue
            work.append((sub, period, due_at))
    if not work:
        return results

    stale: dict[str, str] = {}
    if sync:
        repos: dict[int, RepoRow] = {}
        for sub, _, _ in work:
            for repo in _resolve(engine, sub.repos, OPERATOR)[0]:  # fetched whoever may see them
                repos[repo.id] = repo
        stale = sync_repos(engine, repos.values(), now)
    cache = ReportCache(engine, teams)
    deliverer = Deliverer(engine, client_factory, clock=clock, sleep=sleep, pacer=pacer, charts=charts)

    def one(item: tuple[Subscription, date, datetime]) -> DeliveryResult:
        sub, period, due_at = item
        try:
            # Slack is asked about the channel only when there is something to show in it
            viewer = channel_viewer(client_factory, sub.channel_id) if _resolve(engine, sub.repos, OPERATOR)[0] \
                else OPERATOR
            digest = build_digest(engine, sub, period, viewer=viewer, cache=cache, stale=stale, now=at)
        except Exception as error:
            if not isinstance(error, GadError):
                log.exception("building the digest for %s failed", sub.channel_id)
            why = str(error) if isinstance(error, GadError) else f"internal error: {error}"
            claim = ledger.claim(sub.channel_id, period, clock())  # a ledger row bounds the retries (MAX_CLAIMS)
            if claim is not None:
                ledger.finish(claim, "failed", clock(), error=why)
            return DeliveryResult(sub.channel_id, period, due_at, "failed", why)
        try:
            return deliverer.deliver(sub, digest, due_at)
        except Exception as error:  # a bug or the database: log it, keep delivering the others
            log.exception("digest for %s failed", sub.channel_id)
            return DeliveryResult(sub.channel_id, period, due_at, "failed", f"internal error: {error}")

    if len(work) == 1 or workers <= 1:
        results.extend(one(item) for item in work)
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(work)), thread_name_prefix="digest") as pool:
            results.extend(pool.map(one, work))
    return results


def preview_due_digests(engine, at: datetime, *, channels: Iterable[str] | None = None,
                        workers: int = 8, client_factory: ClientFactory | None = None,
                        teams: Callable[[], Teams] | None = None) -> list[DeliveryResult]:
    """For each subscription (or those of `channels`), the digest as it would be posted at `at`.

    `gad-bot digest --dry-run`: the period is the newest one due at `at` (a future `at` previews a
    digest to come, with today's data), whatever the ledger says and whenever the subscription was
    made; nothing is synced, claimed, uploaded or posted. What the ledger says is in `detail`.
    """
    from .blocks import digest_blocks

    wanted = set(channels) if channels is not None else None
    ledger = Ledger(engine.index)
    cache = ReportCache(engine, teams)
    chosen = [sub for sub in subs.all_subscriptions(engine.index) if wanted is None or sub.channel_id in wanted]

    def one(sub: Subscription) -> DeliveryResult:
        period = sub.period_due_before(at)
        due_at = sub.due_at(period)
        try:
            try:
                viewer, unchecked = channel_viewer(client_factory, sub.channel_id), False
            except DigestError:  # the operator's preview: everything, and a word that audiences were not checked
                viewer, unchecked = OPERATOR, True
            digest = build_digest(engine, sub, period, viewer=viewer, cache=cache, now=min(at, utcnow()))
        except GadError as error:
            return DeliveryResult(sub.channel_id, period, due_at, "failed", str(error))
        text, blocks = digest_blocks(digest, chart_file_id=None)
        record = ledger.get(sub.channel_id, period)
        notes = ["not posted (dry run)"]
        if unchecked:
            notes.append("who may see each repository was not checked (Slack could not say what the channel is)")
        if record is not None:
            notes.append(f"the ledger says {record.shown_state}")
        if sub.paused:
            notes.append(f"the subscription is paused ({sub.paused_reason})")
        return DeliveryResult(sub.channel_id, period, due_at, "dry_run", "; ".join(notes),
                              data_as_of=digest.data_as_of, stale=tuple(n for n, _ in digest.stale),
                              chart="sparkline", text=text, blocks=blocks)

    if len(chosen) <= 1 or workers <= 1:
        return [one(sub) for sub in chosen]
    with ThreadPoolExecutor(max_workers=min(workers, len(chosen)), thread_name_prefix="digest") as pool:
        return list(pool.map(one, chosen))


def preview_digest(engine, channel_id: str, now: datetime | None = None, *, viewer: Viewer,
                   teams: Callable[[], Teams] | None = None) -> tuple[str, list[dict]]:
    """`/gad digest`: the channel's next digest as it stands now (text, blocks), for an ephemeral answer.

    The week shown is the one the next scheduled delivery will cover; while that week is still in
    progress the figures are "so far". Nothing is synced, uploaded or written to the ledger.
    """
    from .blocks import digest_blocks

    now = now or utcnow()
    sub = subs.get(engine.index, channel_id)
    if sub is None:
        raise DigestError("This channel has no digest subscription; subscribe with `/gad subscribe REPO`.")
    period, due = sub.next_due(now)
    digest = build_digest(engine, sub, period, viewer=viewer, cache=ReportCache(engine, teams), preview=True, now=now)
    return digest_blocks(digest, chart_file_id=None, next_due=due)
