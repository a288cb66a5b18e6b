"""Is `serve` able to answer? Readiness (`/readyz`) and what `/metrics` reads at each scrape.

Liveness (`/healthz`, the heartbeat) only says the process runs. Readiness says whether a
question would be answered: the index reads (a live query at each probe, and SQLite's own
integrity check every INDEX_CHECK_SECONDS in a thread of its own, since a damaged page is found
only by reading it and the check reads everything; at once, too, when a report or request meets
a damaged page: `suspect_index`), the data disk has room, the report workers are alive, the
scheduler runs, and Slack accepts the bot token (its last periodic check). Each part that fails is
named in the answer:

    health = Health(settings, engine, reports, scheduler, syncs=syncs, token=token_check); health.start()
    app = with_health(app, health)     # GET /readyz: 200 or 503, one line per part; GET /metrics
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .. import metrics
from ..config import Settings

if TYPE_CHECKING:
    from .liveness import ServeState

log = logging.getLogger(__name__)

INDEX_CHECK_SECONDS = 300  # SQLite's integrity check reads the whole index: not at every probe
# A damaged page met by a report wakes the check at once, but no more often than this: a member asking
# again and again must not have the whole index read for each question.
SUSPICION_CHECK_SECONDS = 30


@dataclass(frozen=True)
class Part:
    """One thing readiness looked at."""

    name: str  # index, disk, workers, scheduler, slack
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'FAIL'} {self.name}: {self.detail}"


class Health:
    def __init__(self, settings: Settings, engine, reports, scheduler=None, *, syncs=None, token=None,
                 index_check_seconds: float = INDEX_CHECK_SECONDS):
        self.settings, self.engine, self.reports, self.scheduler = settings, engine, reports, scheduler
        self.syncs = syncs  # bot.service.syncs.SyncQueue: its depth in /metrics
        self.token = token  # bot.service.tokencheck.TokenCheck: Slack's word on the bot token
        self.index_check_seconds = index_check_seconds
        self._index_problem: str | None = None
        self._index_checked = False
        self._stop = threading.Event()
        self._wake = threading.Event()  # a damaged page was met: check now
        self._last_check = 0.0
        self._last_suspicion = -SUSPICION_CHECK_SECONDS
        self._disk_ok = True
        self.on_change: Callable[[], None] | None = None  # told when readiness changes (serve: beat the heartbeat)
        self._thread = threading.Thread(target=self._check_index_now_and_then, name="index-check", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def changed(self) -> None:
        """Readiness changed (the index, the token): tell whoever writes it down (the heartbeat)."""
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:
                log.exception("telling of a change of readiness failed")

    def suspect_index(self, where: str) -> None:
        """A report or request met a damaged page (`where` says which): have the integrity check run now."""
        if not self._wake.is_set():
            log.warning("%s met a damaged page of the index; checking its integrity now", where)
        self._wake.set()

    # -- the index's integrity, in its own thread ---------------------------------------------
    def _check_index_now_and_then(self) -> None:
        from ..store.index import integrity_pragma, integrity_problems

        while not self._stop.is_set():
            self._last_check = time.monotonic()
            try:
                found = integrity_problems(self.engine.index, integrity_pragma())
                problem = f"SQLite's integrity check found {len(found)} problem(s), first: {found[0][:200]}" \
                    if found else None
            except Exception as error:  # a damaged file can fail the check itself
                problem = f"the integrity check could not read the index ({type(error).__name__}: {error})"
            # A connection keeps the pages it read for as long as SQLite sees no write to the file; bytes damaged
            # under it (a bad disk, a stray write) change nothing SQLite watches, so a second check on the same
            # connection would read its own memory and pass. Each check reads the file afresh.
            self.engine.index.close()
            if problem and problem != self._index_problem:
                log.error("the index is damaged: %s; run `gad-bot doctor`, then `gad-bot restore` from the latest "
                          "backup", problem)
            elif self._index_problem and not problem:
                log.info("the index passes its integrity check again")
            changed = problem != self._index_problem
            self._index_problem, self._index_checked = problem, True
            if changed:
                self.changed()
            self._wake.clear()
            if self._wake.wait(self.index_check_seconds) and not self._stop.is_set():
                # woken by a suspicion: at once, but no sooner than SUSPICION_CHECK_SECONDS after the last one
                self._stop.wait(max(0.0, self._last_suspicion + SUSPICION_CHECK_SECONDS - time.monotonic()))
                self._last_suspicion = time.monotonic()
        self.engine.index.close()  # this thread's connection

    # -- readiness ---------------------------------------------------------------------------------
    def parts(self) -> list[Part]:
        disk = self._disk()
        if disk.ok != self._disk_ok:  # the disk filled up or has room again: the heartbeat says so now
            self._disk_ok = disk.ok
            self.changed()
        parts = [self._index(), disk, self._workers(), self._scheduler()]
        return parts + ([self._slack()] if self.token is not None else [])

    def _index(self) -> Part:
        try:
            count = self.engine.index.execute("SELECT count(*) FROM repos").fetchone()[0]
        except Exception as error:
            return Part("index", False, f"cannot read it ({type(error).__name__}: {error})")
        if self._index_problem:
            return Part("index", False, self._index_problem)
        checked = "integrity checked" if self._index_checked else "integrity check running"
        return Part("index", True, f"{count} repositories, {checked}")

    def _disk(self) -> Part:
        from ..faults import FULL_BELOW_BYTES, free_bytes

        where = self.settings.data_dir
        free = free_bytes(where)
        if free is None:
            return Part("disk", False, f"cannot read the free space under {where}")
        if free < FULL_BELOW_BYTES:
            return Part("disk", False, f"the data disk is full ({_size(free)} free under {where}); changes are "
                                       "refused, reports still answer; free space there")
        return Part("disk", True, f"{_size(free)} free under {where}")

    def _slack(self) -> Part:
        state = self.token.state()
        return Part("slack", state.ok is not False, state.detail)

    def _workers(self) -> Part:
        alive, wanted = self.reports.alive(), self.reports.workers
        return Part("workers", alive == wanted, f"{alive} of {wanted} report workers alive")

    def _scheduler(self) -> Part:
        if self.scheduler is None:
            return Part("scheduler", True, "not used")
        inner = self.scheduler.scheduler
        thread = getattr(inner, "_thread", None)
        running = inner.running and (thread is None or thread.is_alive())
        return Part("scheduler", running, "running" if running else "stopped: digests and syncs are not run")

    # -- the heartbeat: what `gad-bot status` reads ----------------------------------------------
    def serve_state(self, mode: str) -> ServeState:
        import os

        from ..version import package_version
        from .liveness import JobState, ServeState

        jobs = []
        problems = [part.line() for part in self.parts() if not part.ok]
        if self.scheduler is not None:
            jobs = [JobState(run.id, run.name, run.last_run.isoformat() if run.last_run else None, run.last_outcome,
                             run.next_run.isoformat() if run.next_run else None) for run in self.scheduler.job_runs()]
        return ServeState(pid=os.getpid(), written_at=time.time(), version=package_version(), mode=mode,
                          queue_waiting=self.reports.waiting(), reports_running=self.reports.running(),
                          workers=self.reports.workers, workers_alive=self.reports.alive(), jobs=jobs,
                          problems=problems)

    # -- /metrics ----------------------------------------------------------------------------------
    def snapshot(self) -> metrics.Snapshot:
        from ..faults import FULL_BELOW_BYTES, free_bytes
        from .liveness import heartbeat_age

        now = datetime.now(timezone.utc)
        repos = []
        try:
            for repo in self.engine.index.repos():
                lag = (now - repo.last_success_at).total_seconds() if repo.last_success_at else None
                repos.append(metrics.RepoGauge(repo.name, lag, bool(repo.last_error)))
        except Exception as error:  # a damaged index: every other figure still tells the truth
            log.debug("the scrape could not read the repositories (%s)", type(error).__name__)
        path = self.settings.index_path
        size = sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
        free = free_bytes(self.settings.data_dir)
        token = self.token.state().ok if self.token is not None else None
        return metrics.Snapshot(queue_depth=self.reports.waiting(), reports_running=self.reports.running(),
                                workers_alive=self.reports.alive(), index_bytes=size, repos=repos,
                                sync_waiting=self.syncs.waiting() if self.syncs is not None else 0,
                                syncs_running=self.syncs.running() if self.syncs is not None else 0,
                                data_free_bytes=free, disk_full=free is not None and free < FULL_BELOW_BYTES,
                                heartbeat_age_seconds=heartbeat_age(self.settings), slack_token_ok=token,
                                ready={part.name: part.ok for part in self.parts()})


def _size(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size:,} bytes"


def with_health(application, health: Health | None):
    """`application` with GET /readyz (200 or 503, a line per part) and GET /metrics answered before it."""

    def answer(start_response, status: str, body: bytes, content_type: str) -> list[bytes]:
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body)))])
        return [body]

    def wrapped(environ, start_response):
        path = environ.get("PATH_INFO")
        if path == "/metrics":
            body, content_type = metrics.exposition()
            return answer(start_response, "200 OK", body, content_type)
        if path == "/readyz" and health is not None:
            parts = health.parts()
            ready = all(part.ok for part in parts)
            body = ("\n".join(part.line() for part in parts) + "\n").encode()
            return answer(start_response, "200 OK" if ready else "503 Service Unavailable", body, "text/plain")
        return application(environ, start_response)

    return wrapped
