"""`gad-bot status`: the one command for 3 a.m. What runs, what waits, what is stale, what is left.

    status = gather(settings, engine)      # a Status of typed rows
    print(render(status))

Whether `serve` runs comes from its lock (liveness.serve_pid: the kernel's word, `kill -9`
included); its queue, workers and jobs from its last heartbeat (written every 30 s); each
repository's sync lag and last error from the index; disk space from the data directory's
file system. Read-only: it changes nothing, so it is safe beside a running `serve`.

`problems` is what needs the operator now: an index that cannot be read, a full data disk, and what
serve's own readiness fails on (its heartbeat carries /readyz's FAIL lines: a damaged index, a
refused bot token). `gad-bot status` exits 1 when there is any, so a cron job or a monitoring check
can run it.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..config import Settings
from ..faults import FULL_BELOW_BYTES
from .doctor import ago
from ..service.liveness import ServeState, heartbeat_age, read_state, serve_pid


@dataclass(frozen=True)
class RepoStatus:
    name: str
    last_success_at: datetime | None
    last_error: str | None
    failures: int
    next_attempt_at: datetime | None


@dataclass(frozen=True)
class Versions:
    gad_bot: str
    schema: int
    git: str
    sqlite: str


@dataclass(frozen=True)
class Status:
    versions: Versions
    serve_pid: int | None  # None: not running
    heartbeat_age: float | None
    serve: ServeState | None
    disk_free: int
    disk_total: int
    data_dir: str
    repos: list[RepoStatus] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each a `FAIL part: ...` line, as /readyz words it
    not_cloned: list = field(default_factory=list)  # orgindex.FailedRepo: listed by an organization, not cloned


def gather(settings: Settings, open_engine) -> Status:
    """What status shows; `open_engine()` gives the Engine (an index that cannot be read is a problem, not a crash)."""
    import sqlite3

    from ..faults import is_damaged_index
    from ..store.history import git_version
    from ..version import package_version

    git = git_version()
    problems: list[str] = []
    schema, repos, not_cloned = 0, [], []
    try:
        engine = open_engine()
        schema = engine.index.schema_version()
        repos = [RepoStatus(r.name, r.last_success_at, r.last_error, r.failures, r.next_attempt_at)
                 for r in engine.index.repos()]
        not_cloned = engine.failed_repos()
    except Exception as error:
        fix = ("run `gad-bot doctor`, then `gad-bot restore` from the latest backup" if is_damaged_index(error)
               else "run `gad-bot doctor`")
        problems.append(f"FAIL index: cannot read {settings.index_path} ({type(error).__name__}: {error}); {fix}")
    versions = Versions(package_version(), schema, ".".join(map(str, git)) if git else "not installed",
                        sqlite3.sqlite_version)
    pid = serve_pid(settings)
    try:
        usage = shutil.disk_usage(settings.data_dir)
        free, total = usage.free, usage.total
    except OSError as error:  # another user's data directory: said, not a crash
        free, total = 0, 0
        problems.append(f"FAIL disk: cannot read the free space under {settings.data_dir} ({error.strerror}); run "
                        "gad-bot as the service user that owns it")
    if total and free < FULL_BELOW_BYTES:
        problems.append(f"FAIL disk: the data disk is full ({free / 2**20:,.1f} MiB free under "
                        f"{settings.data_dir}); changes are refused, reports still answer; free space there")
    state = read_state(settings) if pid is not None else None
    for line in state.problems if state is not None else ():
        if line not in problems and not (line.startswith("FAIL disk:") and any(p.startswith("FAIL disk:")
                                                                              for p in problems)):
            problems.append(line)
    return Status(versions, pid, heartbeat_age(settings) if pid is not None else None, state, free, total,
                  str(settings.data_dir), repos, problems, not_cloned)


def _when(iso: str | None) -> str:
    if not iso:
        return "-"
    moment = datetime.fromisoformat(iso).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _gib(size: int) -> str:
    return f"{size / 2**30:,.1f} GiB"


LISTED_AT_MOST = 50  # more repositories than this: counts and the failing ones, unless every=True (`--all`)


def render(status: Status, now: datetime | None = None, *, every: bool = False) -> str:
    now = now or datetime.now(timezone.utc)
    v = status.versions
    schema = f"index schema {v.schema}" if v.schema else "index unreadable"
    lines = [f"gad-bot {v.gad_bot} · {schema} · git {v.git} · SQLite {v.sqlite}"]
    if status.serve_pid is None:
        lines.append("serve: not running")
    else:
        beat = "no heartbeat yet" if status.heartbeat_age is None else f"heartbeat {int(status.heartbeat_age)} s ago"
        state = status.serve
        mode = f", {state.mode}" if state and state.mode else ""
        lines.append(f"serve: running (process {status.serve_pid}{mode}), {beat}")
        if state is not None:
            age = int(time.time() - state.written_at)
            lines.append(f"reports: {state.queue_waiting} waiting, {state.reports_running} running; "
                         f"workers {state.workers_alive} of {state.workers} alive (as of {age} s ago)")
            if state.jobs:
                lines.append("jobs:")
                for job in state.jobs:
                    last = f"{_when(job.last_run)} {job.last_outcome}" if job.last_run else "not yet"
                    lines.append(f"  {job.id}: last {last}; next {_when(job.next_run)}")
    lines.append(f"disk: {_gib(status.disk_free)} free of {_gib(status.disk_total)} under {status.data_dir}")
    if not status.repos:
        lines.append("repositories: none tracked")
    else:
        failing = [r for r in status.repos if r.last_error]
        many = len(status.repos) > LISTED_AT_MOST and not every
        listed = failing[:LISTED_AT_MOST] if many else status.repos
        if many:  # an organization of thousands: the counts, what failed first, and the failing ones
            never = sum(1 for r in status.repos if r.last_success_at is None and not r.last_error)
            lines.append(f"repositories: {len(status.repos):,} tracked: {len(status.repos) - len(failing) - never:,} "
                         f"synced, {len(failing):,} failing" + (f", {never:,} never synced" if never else "")
                         + (" (failing ones below, first failure first; `gad-bot status --all` lists all)"
                            if failing else " (`gad-bot status --all` lists all)"))
            listed = sorted(failing, key=lambda r: r.next_attempt_at or now)[:LISTED_AT_MOST]
        else:
            lines.append("repositories:")
        for repo in listed:
            synced = f"synced {ago((now - repo.last_success_at).total_seconds())}" if repo.last_success_at \
                else "never synced"
            line = f"  {repo.name}: {synced}"
            if repo.last_error:
                retry = f"; next try {_when(repo.next_attempt_at.isoformat())}" if repo.next_attempt_at else ""
                line += f"; the last {max(1, repo.failures)} sync(s) failed: {repo.last_error[:300]}{retry}"
            lines.append(line)
    if status.not_cloned:
        lines.append(f"not cloned: {len(status.not_cloned):,} repositor{'y' if len(status.not_cloned) == 1 else 'ies'} "
                     "an organization lists (tried again later; `gad-bot untrack NAME` leaves one out):")
        for failed in status.not_cloned[:LISTED_AT_MOST if not every else None]:
            retry = f"; next try {_when(failed.next_attempt_at.isoformat())}" if failed.next_attempt_at else ""
            lines.append(f"  {failed.name} ({failed.org}): {failed.failures} tr{'y' if failed.failures == 1 else 'ies'} "
                         f"failed: {failed.error[:300]}{retry}")
        if not every and len(status.not_cloned) > LISTED_AT_MOST:
            lines.append(f"  ... and {len(status.not_cloned) - LISTED_AT_MOST:,} more (`gad-bot status --all`)")
    if status.problems:
        lines.append("problems:")
        lines += [f"  {problem}" for problem in status.problems]
    return "\n".join(lines)
