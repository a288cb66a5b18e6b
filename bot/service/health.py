"""Is `serve` able to answer? Readiness (`/readyz`) and what `/metrics` reads at each scrape.

Liveness (`/healthz`, the heartbeat) only says the process runs. Readiness says whether a
question would be answered: the index reads (a live query at each probe, and SQLite's own
integrity check every INDEX_CHECK_SECONDS in a thread of its own, since a damaged page is found
only by reading it and the check reads everything), the report workers are alive, and the
scheduler runs. Each part that fails is named in the answer:

    health = Health(settings, engine, reports, scheduler); health.start()
    app = with_health(app, health)     # GET /readyz: 200 or 503, one line per part; GET /metrics
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .. import metrics
from ..config import Settings

if TYPE_CHECKING:
    from .liveness import ServeState

log = logging.getLogger(__name__)

INDEX_CHECK_SECONDS = 300  # SQLite's integrity check reads the whole index: not at every probe


@dataclass(frozen=True)
class Part:
    """One thing readiness looked at."""

    name: str  # index, workers, scheduler
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'FAIL'} {self.name}: {self.detail}"


class Health:
    def __init__(self, settings: Settings, engine, reports, scheduler=None, *,
                 index_check_seconds: float = INDEX_CHECK_SECONDS):
        self.settings, self.engine, self.reports, self.scheduler = settings, engine, reports, scheduler
        self.index_check_seconds = index_check_seconds
        self._index_problem: str | None = None
        self._index_checked = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._check_index_now_and_then, name="index-check", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    # -- the index's integrity, in its own thread ---------------------------------------------
    def _check_index_now_and_then(self) -> None:
        from ..store.index import integrity_pragma, integrity_problems

        while not self._stop.is_set():
            try:
                found = integrity_problems(self.engine.index, integrity_pragma())
                problem = f"SQLite's integrity check found {len(found)} problem(s), first: {found[0][:200]}" \
                    if found else None
            except Exception as error:  # a damaged file can fail the check itself
                problem = f"the integrity check could not read the index ({type(error).__name__}: {error})"
            if problem and problem != self._index_problem:
                log.error("the index is damaged: %s; run `gad-bot doctor`", problem)
            self._index_problem, self._index_checked = problem, True
            self._stop.wait(self.index_check_seconds)
        self.engine.index.close()  # this thread's connection

    # -- readiness ---------------------------------------------------------------------------------
    def parts(self) -> list[Part]:
        return [self._index(), self._workers(), self._scheduler()]

    def _index(self) -> Part:
        try:
            count = self.engine.index.execute("SELECT count(*) FROM repos").fetchone()[0]
        except Exception as error:
            return Part("index", False, f"cannot read it ({type(error).__name__}: {error})")
        if self._index_problem:
            return Part("index", False, self._index_problem)
        checked = "integrity checked" if self._index_checked else "integrity check running"
        return Part("index", True, f"{count} repositories, {checked}")

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
        if self.scheduler is not None:
            jobs = [JobState(run.id, run.name, run.last_run.isoformat() if run.last_run else None, run.last_outcome,
                             run.next_run.isoformat() if run.next_run else None) for run in self.scheduler.job_runs()]
        return ServeState(pid=os.getpid(), written_at=time.time(), version=package_version(), mode=mode,
                          queue_waiting=self.reports.waiting(), reports_running=self.reports.running(),
                          workers=self.reports.workers, workers_alive=self.reports.alive(), jobs=jobs)

    # -- /metrics ----------------------------------------------------------------------------------
    def snapshot(self) -> metrics.Snapshot:
        now = datetime.now(timezone.utc)
        repos = []
        for repo in self.engine.index.repos():
            lag = (now - repo.last_success_at).total_seconds() if repo.last_success_at else None
            repos.append(metrics.RepoGauge(repo.name, lag, bool(repo.last_error)))
        path = self.settings.index_path
        size = sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
        return metrics.Snapshot(queue_depth=self.reports.waiting(), reports_running=self.reports.running(),
                                workers_alive=self.reports.alive(), index_bytes=size, repos=repos)


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
