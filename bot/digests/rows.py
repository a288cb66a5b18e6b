"""What a weekly digest shows, as typed rows: built by bot/digests/digest.py, drawn by bot/digests/blocks.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from ..metric import Row, Totals


@dataclass(frozen=True)
class Figures:
    """One repository's week (or all of the channel's repositories together, as one union)."""

    name: str
    week: Totals
    previous: Totals
    average_two_gad: float  # mean 2GAD of the TREND_WEEKS weeks before the week
    trend: tuple[Row, ...]  # TREND_WEEKS weekly rows ending with the week
    people: tuple[Row, ...] = ()  # by-person rows of the week (keys are people: lower-cased e-mails)
    new_people: tuple[str, ...] = ()  # active this week, never before in these repositories

    @property
    def quiet(self) -> bool:
        return self.week.person_days == 0


@dataclass(frozen=True)
class Digest:
    channel_id: str
    period_start: date
    period_end: date
    tz: str
    people: bool  # individual names may be shown
    total: Figures
    repos: tuple[Figures, ...]
    untracked: tuple[str, ...] = ()
    restricted: tuple[str, ...] = ()  # subscribed, but this channel may no longer see them: left out, and said
    teams: tuple[str, ...] = ()  # `team:@group` subscriptions: only those groups' people are counted
    scope_words: str = ""
    data_as_of: datetime | None = None
    stale: tuple[tuple[str, str], ...] = ()  # (repository, why its data may be old)
    preview: bool = False
    so_far: date | None = None  # preview of a week still in progress: figures up to this day
