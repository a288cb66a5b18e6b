"""Rows that cross a module boundary: one producer builds them, renderers read them.

They are frozen dataclasses rather than dicts whose keys two modules agree on by convention:
the App Home tab once showed "no weekly figure yet" for months of activity because the Slack
face wrote `weekly_two_gad` and the renderer read `two_gad`, and each side's tests fed it
hand-built dicts. A renderer's test builds its input with the constructor the producer uses.

    RepoSummary.of(repo_row)   -- `repos` in the CLI (text and --json) and in Slack
    HomeRow(...)               -- one tracked repository on the App Home tab
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the index imports sqlite-utils; the renderers need only the type
    from ..store.index import RepoRow
    from ..store.orgindex import FailedRepo


LOCAL_SOURCE = "a directory on the gad-bot server"  # what people who are not admins see of a local source


@dataclass(frozen=True)
class RepoSummary:
    """What `repos` shows of a tracked repository, the same in the CLI and in Slack."""

    name: str
    source: str  # redacted: never shows credentials
    in_place: bool = False
    commits: int | None = None  # None until the first index
    skipped: int = 0
    last_sync: datetime | None = None  # the last attempt, whatever its outcome
    last_success: datetime | None = None
    last_error: str | None = None
    next_attempt: datetime | None = None
    guarded: bool = False  # typed in Slack: every connection of its fetches is checked (bot/store/egress.py)
    missing_objects: str | None = None  # what `doctor`'s connectivity check found missing in the mirror
    # "tracked", or "not cloned": an organization lists it, but cloning (or its first index) failed; it is tried
    # again at `next_attempt`, and `untrack NAME` leaves it out (issue 32: it used to vanish)
    state: str = "tracked"
    org: str | None = None  # the organization that lists it, for a repository not cloned

    @property
    def problem(self) -> bool:
        """Whether a person should look at it: not cloned, failing to sync, or missing objects."""
        return self.state != "tracked" or bool(self.last_error) or bool(self.missing_objects)

    @classmethod
    def of_failed(cls, failed: "FailedRepo", *, paths: bool = True) -> "RepoSummary":
        """A repository an organization lists that could not be tracked (`store.orgindex.FailedRepo`)."""
        from ..store.sources import redact

        error = failed.error
        return cls(name=failed.name, source=redact(failed.source) if failed.source else failed.full_name,
                   last_sync=failed.failed_at, last_error=error, next_attempt=failed.next_attempt_at,
                   state="not cloned", org=failed.org)

    @classmethod
    def of(cls, repo: "RepoRow", *, paths: bool = True, missing_objects: str | None = None) -> "RepoSummary":
        """paths=False (Slack, for people who are not admins): no file path of the server, neither a
        local source's nor a mirror's, not even inside the last error."""
        from ..store.sources import is_local_path, redact

        source, error = redact(repo.source), repo.last_error
        if not paths:
            local = repo.in_place or is_local_path(repo.source)
            hidden = [str(repo.mirror_path), str(repo.mirror_path.parent)] + ([repo.source] if local else [])
            for path in sorted(hidden, key=len, reverse=True):
                error = error.replace(path, "…") if error else error
            source = LOCAL_SOURCE if local else source
        return cls(name=repo.name, source=source, in_place=repo.in_place,
                   commits=repo.commits if repo.generation > 0 else None, skipped=repo.skipped,
                   last_sync=repo.last_sync_at, last_success=repo.last_success_at, last_error=error,
                   next_attempt=repo.next_attempt_at, guarded=repo.guarded, missing_objects=missing_objects)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class HomeRow:
    """One tracked repository on the App Home tab: its 2GAD in the last full week."""

    name: str
    weekly_two_gad: int | None  # None when the figure could not be computed (not indexed yet)
    week: str  # the week's label, e.g. "2026-W48"
    trend: tuple[int, ...] = ()  # 2GAD per week, oldest first, ending with `week`
    last_error: str | None = None  # the last sync's error, if it failed


@dataclass(frozen=True)
class TeamWeek:
    """One of a person's teams on the App Home tab: its people's 2GAD in the last full week, over what they may see."""

    label: str  # "@backend"
    two_gad: int
    developers: int
    week: str
