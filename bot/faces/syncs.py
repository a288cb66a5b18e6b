"""Syncs in worker processes, debounced: the serving process only decides what to sync, and when.

A sync fetches (network), walks history (git) and derives (numpy) for up to minutes. Run in a
thread of `serve`, it shared the interpreter with the thread acknowledging Slack; here it runs in
spawned, niced worker processes, each with its own Engine (the per-repository file lock keeps one
writer per repository across processes, the CLI's included):

    queue = SyncQueue(settings); queue.start()
    queue.request_repo("web")      # a webhook: a sync of `web` starts at once (a worker is free)
    queue.request_repo("web")      # a second push while it runs: one more sync after it, not two
    queue.sync_due(names)          # the periodic sync: these repositories (not in back-off), at once
    queue.shutdown()

The debounce is leading-edge: a first push syncs at once (a report that counts it comes as soon as
the fetch does); pushes that arrive while its repository waits for a worker are the same request;
pushes that arrive while it syncs are one more sync after it (the push may have come after the fetch
began), never two at a time. At most `workers` syncs are handed to the pool at once, webhooks' first:
a push waits for a free worker, never behind the periodic sync's whole list. Organizations (a
repository created in one) are synced the same way. A `debounce` of more than 0 s waits that long
before the first sync instead (pushes within it are one sync).
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from ..config import Settings

log = logging.getLogger(__name__)

# Leading-edge: a push syncs at once, and pushes during its sync coalesce into one more (`_again`). A
# 1 s wait before every sync was a fifth of push -> report on an idle machine, and coalesced no more.
DEBOUNCE_SECONDS = 0.0


@dataclass(frozen=True)
class SyncJob:
    kind: str  # "repo", "org" (list again) or "org-fetch" (list again and fetch its repositories: periodic)
    name: str


@dataclass(frozen=True)
class SyncDone:
    """What a worker sends back about one job."""

    job: SyncJob
    new_commits: int = 0
    error: str | None = None


class SyncQueue:
    """Debounced sync requests, run in `workers` processes (see the module docstring)."""

    def __init__(self, settings: Settings, workers: int | None = None, debounce: float = DEBOUNCE_SECONDS,
                 runner: Callable[[SyncJob], SyncDone] | None = None, on_done: Callable[[SyncDone], None] | None = None):
        from .workers import default_workers

        self.settings = settings
        self.workers = workers or default_workers()
        self.debounce = debounce
        self.runner = runner or run_sync  # module-level: pickled by name into the workers
        self.on_done = on_done
        self._lock = threading.Lock()
        self._timers: dict[SyncJob, threading.Timer] = {}  # debouncing
        # Ready to run, in order: a push someone is waiting to see goes before the periodic sync's
        # hundreds of repositories, which would otherwise hold every worker for minutes.
        self._urgent: collections.OrderedDict[SyncJob, None] = collections.OrderedDict()
        self._background: collections.OrderedDict[SyncJob, None] = collections.OrderedDict()
        self._running: set[SyncJob] = set()
        self._again: set[SyncJob] = set()
        self._executor: ProcessPoolExecutor | None = None
        self._closed = False

    def start(self) -> None:
        """Create the pool and start its processes now (about a second each), not at the first push."""
        with self._lock:
            self._executor = self._new_executor()
            for _ in range(self.workers):
                self._executor.submit(_ready)

    def _new_executor(self) -> ProcessPoolExecutor:
        import multiprocessing

        from .workers import _init_worker

        # spawn, as the report workers: serve has threads, which fork must not copy
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker, initargs=(self.settings, os.getpid()))

    def shutdown(self) -> None:
        """Stop: waiting requests are dropped, running syncs are abandoned (a killed sync resumes next time)."""
        with self._lock:
            self._closed = True
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()
            self._urgent.clear()
            self._background.clear()
            executor, self._executor = self._executor, None
        if executor is not None:
            # Terminate, then one shutdown that waits: the pool's manager thread ends and drops its queues,
            # whose semaphores are unregistered; shutdown(wait=False) would leave them to os._exit, and the
            # resource tracker's "leaked semaphore objects" line (issue 20).
            for process in list((getattr(executor, "_processes", None) or {}).values()):
                if process.is_alive():
                    process.terminate()
            executor.shutdown(wait=True, cancel_futures=True)

    # -- requests ---------------------------------------------------------------------------------
    def request_repo(self, name: str, delay: float | None = None) -> None:
        """A webhook's request: after the debounce, ahead of the periodic sync's."""
        self._request(SyncJob("repo", name), self.debounce if delay is None else delay)

    def request_org(self, name: str, delay: float | None = None) -> None:
        self._request(SyncJob("org", name), self.debounce if delay is None else delay)

    def _request(self, job: SyncJob, delay: float, urgent: bool = True) -> None:
        with self._lock:
            if self._closed or job in self._timers or job in self._urgent:
                return
            if job in self._running:
                self._again.add(job)
                return
            if job in self._background:
                if not urgent:
                    return
                del self._background[job]  # a push to a repository the periodic sync queued: now
            if delay <= 0:
                (self._urgent if urgent else self._background)[job] = None
                self._pump()
                return
            timer = threading.Timer(delay, self._fire, args=(job,))
            timer.daemon = True
            self._timers[job] = timer
        timer.start()

    def sync_due(self, names: list[str]) -> int:
        """Queue a sync of each named repository (the periodic sync), behind any webhook's; return how many."""
        for name in names:
            self._request(SyncJob("repo", name), 0, urgent=False)
        return len(names)

    def sync_orgs_due(self, names: list[str]) -> int:
        """Queue a new listing of each named forge organization, and a fetch of its repositories (the periodic
        sync), behind any webhook's."""
        for name in names:
            self._request(SyncJob("org-fetch", name), 0, urgent=False)
        return len(names)

    def pending(self) -> int:
        with self._lock:
            return len(self._timers) + len(self._urgent) + len(self._background) + len(self._running)

    # -- running ----------------------------------------------------------------------------------
    def _fire(self, job: SyncJob) -> None:
        with self._lock:
            if self._closed or self._timers.pop(job, None) is None:
                return
            self._urgent[job] = None
            self._pump()

    def _pump(self) -> None:
        """Hand ready jobs to free workers, urgent ones first (the lock is held)."""
        while len(self._running) < self.workers and (self._urgent or self._background):
            queue = self._urgent if self._urgent else self._background
            job, _ = queue.popitem(last=False)
            self._submit(job)

    def _submit(self, job: SyncJob) -> None:
        if self._executor is None:
            self._executor = self._new_executor()
        self._running.add(job)
        try:
            future = self._executor.submit(self.runner, job)
        except (BrokenProcessPool, RuntimeError):  # a worker died: a new pool for this and later syncs
            log.error("a sync worker died; starting the sync pool again")
            self._executor = self._new_executor()
            future = self._executor.submit(self.runner, job)
        started = time.monotonic()
        future.add_done_callback(lambda f, job=job: self._finished(job, f, started))

    def _finished(self, job: SyncJob, future: Future, started: float) -> None:
        try:
            done = future.result()
        except BrokenProcessPool:
            done = SyncDone(job, error="a sync worker process ended unexpectedly")
            with self._lock:
                if not self._closed:
                    self._executor = self._new_executor()
        except Exception as error:  # cancelled at shutdown, or a bug: one line, the next request tries again
            done = SyncDone(job, error=f"{type(error).__name__}: {error}")
        with self._lock:
            self._running.discard(job)
            again = job in self._again
            self._again.discard(job)
            if not self._closed:
                self._pump()
        _completed(done, time.monotonic() - started)
        if self.on_done is not None:
            try:
                self.on_done(done)
            except Exception:
                log.exception("after the sync of %s", job.name)
        if again:
            self._request(job, 0)


def _completed(done: SyncDone, seconds: float) -> None:
    """The sync's one completion line (a warning when it failed), and its count in /metrics."""
    from .. import metrics

    outcome = "failed" if done.error else "ok"
    metrics.SYNCS.labels(outcome=outcome).inc()
    extra = {"repo": done.job.name, "outcome": outcome, "seconds": round(seconds, 3)}
    if done.error:
        log.warning("sync of %s %s failed in %.3f s: %s", done.job.kind, done.job.name, seconds, done.error, extra=extra)
    else:
        log.info("sync of %s %s: ok in %.3f s, %d new commits", done.job.kind, done.job.name, seconds, done.new_commits,
                 extra=extra)


# -- inside a worker process ----------------------------------------------------------------------

def _ready() -> None:
    """A no-op job: submitted once per worker at start, so the processes are up before the first push."""


def run_sync(job: SyncJob) -> SyncDone:
    """Sync one repository, or one organization's listing, with the worker's Engine."""
    from ..errors import GadError
    from . import workers

    engine = workers._engine
    try:
        if job.kind in ("org", "org-fetch"):
            results = engine.sync_orgs(names=[job.name], fetch=job.kind == "org-fetch")
            _announce_org_changes(engine, results)
            return SyncDone(job, error=next((r.error for r in results if r.error), None))
        try:
            repo = engine.repo(job.name)
        except GadError as error:  # untracked since it was requested
            return SyncDone(job, error=str(error))
        result = engine.sync_one(repo)
        return SyncDone(job, result.new_commits, result.error)
    except GadError as error:
        return SyncDone(job, error=str(error))


def _announce_org_changes(engine, results) -> None:
    """Tell the channels subscribed to an organization's project what its new listing changed."""
    if not engine.settings.slack_bot_token or not any(r.changes for r in results):
        return
    from ..digests.orgnews import announce_org_changes
    from .slack import web_client

    announce_org_changes(engine.index, web_client(engine.settings), results)
