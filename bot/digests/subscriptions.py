"""Channel subscriptions to weekly digests, and the calendar arithmetic of when a digest is due.

One subscription per channel (table `subscriptions`, migration 3) covering any number of
repository or project names (`subscription_repos`). The Slack layer calls:

    subscribe(engine, channel_id, Subscribe(...), user_tz=..., user_id=..., team_id=..., now=...)
    unsubscribe(engine, channel_id, Unsubscribe(...), now=...)

usually through `DigestFace(settings, engine).handle(parsed, channel_id=..., user_tz=...)` (in
bot/digests/face.py, above the deliverer and the renderer, so this module imports neither), which
also renders the answer and calls `on_change` (the scheduler's `reload()`) so the cron job follows
the change; the scheduler also notices changes made by other processes within a minute (`fingerprint`).

When is a digest due? A subscription says "weekday at HH:MM in zone Z". The digest delivered on
local date D covers the seven days that end the day before: D - 7 to D - 1 (the *period*, named by
its first day, `period_start`, which falls on the subscription's weekday). For `day:mon` that is
the Monday-to-Sunday week just ended; for `day:fri` it is Friday to Thursday, so a Friday digest
is never five days stale. The due instant is D at HH:MM in Z, resolved the way APScheduler's
CronTrigger resolves it:
- a wall time skipped by a DST change (01:30 on Europe/London's March change day) is read with
  the offset in force before the change, i.e. it falls due one hour later by the new clock
  (01:30 GMT = 02:30 BST), so the digest is not skipped;
- a wall time that occurs twice (01:30 on the October change day) is due at its first occurrence.
  (CronTrigger fires at both; the ledger, keyed by period, makes the second a no-op.)
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from ..errors import QueryError
from ..store.index import Index, _iso, parse_time, utcnow
from ..engine.query import WEEKDAYS, Subscribe, Unsubscribe

DEFAULT_WEEKDAY = 0  # Monday
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DEFAULT_AT = time(9, 0)
log = logging.getLogger(__name__)


def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def valid_tz(name: str | None) -> str | None:
    """The zone name when it is a real IANA zone, else None."""
    if not name:
        return None
    try:
        ZoneInfo(name)
    except Exception:
        return None
    return name


@dataclass(frozen=True)
class Subscription:
    id: int
    channel_id: str
    team_id: str | None
    weekday: int  # 0 = Monday
    at: time
    tz: str
    people: bool
    repos: tuple[str, ...]
    created_by: str | None
    created_at: datetime
    updated_at: datetime
    paused_reason: str | None = None
    paused_at: datetime | None = None
    teams: tuple[str, ...] = ()  # Slack user groups (handles or ids): the digest counts only their people

    @property
    def paused(self) -> bool:
        return self.paused_reason is not None

    @property
    def zone(self) -> ZoneInfo:
        return _zone(self.tz)

    def schedule_words(self) -> str:
        """'Mondays at 09:00 (Europe/London)'."""
        day = ("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays")[self.weekday]
        return f"{day} at {self.at.strftime('%H:%M')} ({self.tz})"

    def cron_fields(self) -> dict:
        """CronTrigger keyword arguments (besides the time zone) for this schedule."""
        return {"day_of_week": WEEKDAYS[self.weekday], "hour": self.at.hour, "minute": self.at.minute}

    # -- calendar ------------------------------------------------------------
    def due_at(self, period_start: date) -> datetime:
        """The UTC instant the digest for the seven days from `period_start` falls due: the day after them."""
        return resolve_local(period_start + timedelta(days=7), self.at, self.zone)

    def period_due_before(self, moment: datetime) -> date:
        """The newest period whose digest fell due at or before `moment`."""
        local = moment.astimezone(self.zone).date()
        delivery = local - timedelta(days=(local.weekday() - self.weekday) % 7)  # the latest delivery day so far
        candidate = delivery - timedelta(days=7)
        while self.due_at(candidate) > moment:
            candidate -= timedelta(days=7)
        return candidate

    def period_words(self) -> str:
        """'the previous week (Monday to Sunday)' or 'the 7 days before it (Friday to Thursday)'."""
        first, last = _DAY_NAMES[self.weekday], _DAY_NAMES[(self.weekday + 6) % 7]
        if self.weekday == 0:
            return "the previous week (Monday to Sunday)"
        return f"the 7 days before it ({first} to {last})"

    def next_due(self, moment: datetime) -> tuple[date, datetime]:
        """(period_start, due instant) of the first digest falling due strictly after `moment`."""
        period = self.period_due_before(moment) + timedelta(days=7)
        while self.due_at(period) <= moment:  # defensive; DST cannot move a week
            period += timedelta(days=7)
        return period, self.due_at(period)

    def due_periods(self, moment: datetime, grace: timedelta) -> list[tuple[date, datetime]]:
        """Periods due in (moment - grace, moment], newest first, never before the subscription existed."""
        out = []
        period = self.period_due_before(moment)
        while True:
            due = self.due_at(period)
            if due <= moment - grace or due < self.created_at:
                break
            out.append((period, due))
            period -= timedelta(days=7)
        return out


def resolve_local(day: date, at: time, zone: ZoneInfo) -> datetime:
    """Wall time `day at` in `zone` as a UTC instant (gap: offset before the change; overlap: first)."""
    return datetime.combine(day, at, tzinfo=zone).replace(fold=0).astimezone(timezone.utc)


def period_of(period_start: date) -> tuple[date, date]:
    """(first, last day) of the seven-day digest period starting on `period_start`."""
    return period_start, period_start + timedelta(days=6)


# -- the store ------------------------------------------------------------------------------------


def _subscription(row: dict, repos: tuple[str, ...]) -> Subscription:
    hour, minute = (int(p) for p in row["at"].split(":"))
    return Subscription(id=row["id"], channel_id=row["channel_id"], team_id=row["team_id"], weekday=row["weekday"],
                        at=time(hour, minute), tz=row["tz"], people=bool(row["people"]), repos=repos,
                        created_by=row["created_by"], created_at=parse_time(row["created_at"]),
                        updated_at=parse_time(row["updated_at"]), paused_reason=row["paused_reason"],
                        paused_at=parse_time(row["paused_at"]), teams=tuple((row.get("teams") or "").split()))


def get(index: Index, channel_id: str) -> Subscription | None:
    rows = index.rows("SELECT * FROM subscriptions WHERE channel_id = ?", (channel_id,))
    if not rows:
        return None
    repos = tuple(r[0] for r in index.execute(
        "SELECT name FROM subscription_repos WHERE subscription_id = ? ORDER BY name", (rows[0]["id"],)))
    return _subscription(rows[0], repos)


def all_subscriptions(index: Index, *, include_paused: bool = True) -> list[Subscription]:
    """Every subscription (with its repositories), by channel."""
    names: dict[int, list[str]] = {}
    for sub_id, name in index.execute("SELECT subscription_id, name FROM subscription_repos ORDER BY name"):
        names.setdefault(sub_id, []).append(name)
    sql = "SELECT * FROM subscriptions" + ("" if include_paused else " WHERE paused_reason IS NULL")
    return [_subscription(row, tuple(names.get(row["id"], ()))) for row in index.rows(sql + " ORDER BY channel_id")]


def fingerprint(index: Index) -> str:
    """Changes whenever any subscription (or its repositories) changes; cheap to poll."""
    parts = [repr(tuple(r)) for r in index.execute(
        "SELECT channel_id, weekday, at, tz, people, teams, updated_at, paused_reason FROM subscriptions "
        "ORDER BY channel_id")]
    parts += [repr(tuple(r)) for r in index.execute(
        "SELECT subscription_id, name FROM subscription_repos ORDER BY subscription_id, name")]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class SubscribeResult:
    subscription: Subscription
    created: bool  # a new subscription, rather than a change to the channel's existing one
    added: tuple[str, ...]  # names newly added
    unpaused: str | None = None  # the pause reason lifted by subscribing again
    changed: tuple[str, ...] = ()  # settings that changed: "day", "time", "tz", "people"


@dataclass(frozen=True)
class UnsubscribeResult:
    channel_id: str
    removed: tuple[str, ...]
    not_subscribed: tuple[str, ...]
    remaining: Subscription | None  # None when the channel has no subscription left


def subscribe(engine, channel_id: str, command: Subscribe, *, user_tz: str | None = None,
              user_id: str | None = None, team_id: str | None = None, now: datetime | None = None) -> SubscribeResult:
    """Subscribe the channel to `command.repos` (adding to what it has), updating any setting given.

    New subscriptions default to Mondays at 09:00 in `user_tz` (the subscriber's Slack time zone), else
    the operator's GAD_TZ. Subscribing again keeps settings not given and unpauses the subscription.
    Unknown names raise UnknownRepoError before anything is written.
    """
    now = now or utcnow()
    if not channel_id:
        raise QueryError("Subscriptions belong to a channel; run `/gad subscribe` in the channel that should get the digest.")
    engine.resolve(command.repos)  # every name must be a tracked repository or project
    index: Index = engine.index
    weekday = WEEKDAYS.index(command.day) if command.day else None
    with index.transaction() as db:
        row = db.execute("SELECT id, weekday, at, tz, people, teams, paused_reason FROM subscriptions "
                         "WHERE channel_id = ?", (channel_id,)).fetchone()
        changed: list[str] = []
        if row is None:
            tz = command.tz or valid_tz(user_tz) or engine.settings.tz
            at = (command.at or DEFAULT_AT).strftime("%H:%M")
            cursor = db.execute(
                "INSERT INTO subscriptions (channel_id, team_id, weekday, at, tz, people, teams, created_by, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (channel_id, team_id, DEFAULT_WEEKDAY if weekday is None else weekday, at, tz, int(bool(command.people)),
                 " ".join(command.teams or ()), user_id, _iso(now), _iso(now)))
            sub_id, unpaused, created = cursor.lastrowid, None, True
        else:
            sub_id, old_weekday, old_at, old_tz, old_people, old_teams, unpaused = row
            created = False
            new = {"day": old_weekday if weekday is None else weekday,
                   "time": command.at.strftime("%H:%M") if command.at else old_at,
                   "tz": command.tz or old_tz,
                   "people": old_people if command.people is None else int(command.people),
                   "teams": old_teams if command.teams is None else " ".join(command.teams)}
            for key, old in (("day", old_weekday), ("time", old_at), ("tz", old_tz), ("people", old_people),
                             ("teams", old_teams)):
                if new[key] != old:
                    changed.append(key)
            db.execute("UPDATE subscriptions SET weekday = ?, at = ?, tz = ?, people = ?, teams = ?, "
                       "team_id = coalesce(?, team_id), updated_at = ?, paused_reason = NULL, paused_at = NULL "
                       "WHERE id = ?", (new["day"], new["time"], new["tz"], new["people"], new["teams"], team_id,
                                        _iso(now), sub_id))
        before = {r[0] for r in db.execute("SELECT name FROM subscription_repos WHERE subscription_id = ?", (sub_id,))}
        added = tuple(n for n in command.repos if n not in before)
        db.conn.executemany("INSERT OR IGNORE INTO subscription_repos VALUES (?, ?)", ((sub_id, n) for n in added))
    sub = get(index, channel_id)
    assert sub is not None
    return SubscribeResult(sub, created, added, unpaused, tuple(changed))


def unsubscribe(engine, channel_id: str, command: Unsubscribe, *, now: datetime | None = None) -> UnsubscribeResult:
    """Remove names from the channel's subscription (`all`: the whole subscription); none left deletes it.

    The delivery ledger is kept, so unsubscribing and subscribing again within a week cannot repost
    a digest that was already delivered.
    """
    now = now or utcnow()
    index: Index = engine.index
    everything = any(n.lower() == "all" for n in command.repos)
    with index.transaction() as db:
        row = db.execute("SELECT id FROM subscriptions WHERE channel_id = ?", (channel_id,)).fetchone()
        if row is None:
            return UnsubscribeResult(channel_id, (), tuple(command.repos) if not everything else (), None)
        sub_id = row[0]
        current = [r[0] for r in db.execute("SELECT name FROM subscription_repos WHERE subscription_id = ? ORDER BY name",
                                            (sub_id,))]
        if everything:
            removed, missing = tuple(current), ()
        else:
            removed = tuple(n for n in command.repos if n in current)
            missing = tuple(n for n in command.repos if n not in current)
        db.conn.executemany("DELETE FROM subscription_repos WHERE subscription_id = ? AND name = ?",
                            ((sub_id, n) for n in removed))
        left = db.execute("SELECT count(*) FROM subscription_repos WHERE subscription_id = ?", (sub_id,)).fetchone()[0]
        if left == 0:
            db.execute("DELETE FROM subscriptions WHERE id = ?", (sub_id,))
        elif removed:
            db.execute("UPDATE subscriptions SET updated_at = ? WHERE id = ?", (_iso(now), sub_id))
    return UnsubscribeResult(channel_id, removed, missing, get(index, channel_id))


def pause(index: Index, channel_id: str, reason: str, now: datetime | None = None) -> None:
    """Stop delivering to the channel until someone subscribes again (a Slack error that will not heal)."""
    now = now or utcnow()
    index.execute("UPDATE subscriptions SET paused_reason = ?, paused_at = ? WHERE channel_id = ?",
                  (reason, _iso(now), channel_id))


# -- what `/gad subscriptions` shows -------------------------------------------------------------


@dataclass(frozen=True)
class DeliveryRecord:
    """One ledger row, with the state people are shown ('unknown' for a post whose fate is unknown)."""

    channel_id: str
    period_start: date
    state: str  # raw: claimed, posting, posted, failed, unknown, missed
    shown_state: str  # posted, in progress, unknown, failed, missed
    claimed_at: datetime | None
    posted_at: datetime | None
    message_ts: str | None
    attempts: int
    error: str | None


@dataclass(frozen=True)
class ChannelView:
    subscription: Subscription
    tracked: tuple[str, ...]  # subscribed names that are tracked repositories or projects
    untracked: tuple[str, ...]  # subscribed names no longer tracked
    next_period: date
    next_due: datetime  # UTC
    last: DeliveryRecord | None
    now: datetime = field(default_factory=utcnow)


def forget_repo(index: Index, name: str, now: datetime | None = None) -> list[str]:
    """An untracked repository leaves every subscription; subscriptions left empty end. Returns the channels."""
    now = now or utcnow()
    with index.transaction() as db:
        channels = [r[0] for r in db.execute(
            "SELECT s.channel_id FROM subscriptions s JOIN subscription_repos r ON r.subscription_id = s.id "
            "WHERE r.name = ? ORDER BY s.channel_id", (name,))]
        db.execute("DELETE FROM subscription_repos WHERE name = ?", (name,))
        db.execute("DELETE FROM subscriptions WHERE NOT EXISTS "
                   "(SELECT 1 FROM subscription_repos r WHERE r.subscription_id = subscriptions.id)")
        if channels:
            marks = ",".join("?" * len(channels))
            db.execute(f"UPDATE subscriptions SET updated_at = ? WHERE channel_id IN ({marks})", (_iso(now), *channels))
    return channels
