"""Syncs in worker processes, debounced: the serving process only decides what to sync, and when.

A sync fetches (network), walks history (git) and derives (numpy) for up to minutes. Run in a
thread of `serve`, it shared the interpreter with the thread acknowledging Slack; here it runs in
niced worker processes (forked from gad-bot's fork server, bot/spawning.py), each with its own Engine
(the per-repository file lock keeps one writer per repository across processes, the CLI's included):

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

Every job is bounded in time (GAD_SYNC_TIMEOUT_SECONDS): past it, the worker running it is killed and
started again (a sync has no safe point to stop at from outside: a kill is what every step is built to
survive, the next sync going on from what was finished). Each worker is a pool of its own (one process),
so stopping one job's worker stops no other job.
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
from .commands import Command, CommandFailed, SyncRepos, run_command

log = logging.getLogger(__name__)

# How long serve waits for its sync workers to stop on SIGTERM before it kills them (SIGKILL).
SHUTDOWN_WAIT_SECONDS = 5.0

# Leading-edge: a push syncs at once, and pushes during its sync coalesce into one more (`_again`). A
# 1 s wait before every sync was a fifth of push -> report on an idle machine, and coalesced no more.
DEBOUNCE_SECONDS = 0.0

# A job's error when serve's SIGTERM stopped it (its workers terminated, or it never began): not a fault, and
# the next start or request does it again.
STOPPED_AT_SHUTDOWN = "stopped by serve's shutdown"


@dataclass(frozen=True)
class SyncJob:
    # "repo", "org" (list again), "org-fetch" (list again and fetch its repositories: periodic), "sweep" (the
    # mirrors' leftovers, before each periodic sync), or "command" (one typed in Slack: `name` is a token of its
    # own, so it is never merged with another request)
    kind: str
    name: str
    command: Command | None = None


@dataclass(frozen=True)
class SyncDone:
    """What a worker sends back about one job."""

    job: SyncJob
    new_commits: int = 0
    error: str | None = None
    fetch_seconds: float | None = None  # a repository's fetch, when one ran
    result: object = None  # a command's: SyncResult, OrgTrackResult, (commits, seconds), [SyncResult] or CommandFailed


class SyncQueue:
    """Debounced sync requests, run in `workers` processes (see the module docstring)."""

    def __init__(self, settings: Settings, workers: int | None = None, debounce: float = DEBOUNCE_SECONDS,
                 runner: Callable[[SyncJob], SyncDone] | None = None, on_done: Callable[[SyncDone], None] | None = None,
                 timeout: float | None = None):
        from .workers import default_workers

        self.settings = settings
        self.workers = workers or default_workers()
        self.timeout = timeout or settings.sync_timeout_seconds  # seconds one job may run (see the docstring)
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
        # One single-process pool per worker: a pool whose process is killed fails every job it runs, so the job
        # that overran must be alone in its pool. `_busy` is which job each slot runs.
        self._slots: list[ProcessPoolExecutor | None] = [None] * self.workers
        self._busy: dict[int, SyncJob] = {}
        self._bounds: dict[SyncJob, threading.Timer] = {}  # each running job's time bound
        self._overran: set[SyncJob] = set()
        self._closed = False
        self._adding = threading.local()  # .now: this thread is adding a job's completion callback (_submit)
        # A typed command's progress: workers put (token, event) here; a thread of serve hands each event to
        # the command's listener while its future is not done (later ones are dropped: a progress update
        # must never replace the answer). `_relaying` names the command whose listener runs now: its future is
        # resolved only once that call returns (`_relay_ended` tells), so no update lands after the answer.
        self._events = None
        self._relay_thread: threading.Thread | None = None
        self._listeners: dict[str, Callable[[object], None]] = {}
        self._waiting: dict[str, Future] = {}
        self._relaying: str | None = None
        self._relay_ended = threading.Condition(self._lock)

    def start(self) -> None:
        """Create the pool and start its processes now (about a second each), not at the first push."""
        with self._lock:
            # A sync asked before (Socket Mode connects first) started a pool already: keep it, or it runs on
            # beside this one, which is the only one shutdown would stop.
            for slot, executor in enumerate(self._slots):
                if executor is None:
                    executor = self._slots[slot] = self._new_executor()
                executor.submit(_ready)

    def _new_executor(self) -> ProcessPoolExecutor:
        from ..spawning import worker_context

        # from the fork server, as the report workers: serve has threads, which fork must not copy
        context = worker_context()
        if self._events is None:
            self._events = context.SimpleQueue()
            self._relay_thread = threading.Thread(target=self._relay, args=(self._events,), name="sync-events",
                                                  daemon=True)
            self._relay_thread.start()
        return ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_init_sync_worker,
                                   initargs=(self.settings, os.getpid(), self._events))

    def _relay(self, events) -> None:
        while True:
            try:
                item = events.get()
            except (EOFError, OSError):  # the queue closed at shutdown
                return
            if item is None:  # shutdown's last word
                return
            token, event = item
            with self._lock:
                listener = self._listeners.get(token)
                if listener is None:  # answered already (or serve stopped): too late to show
                    continue
                self._relaying = token
            try:
                listener(event)  # outside the lock: a Slack update must not hold up the queue
            except Exception:
                log.exception("while reporting a command's progress")
            finally:
                with self._lock:
                    self._relaying = None
                    self._relay_ended.notify_all()

    def _stop_relaying(self, token: str | None = None) -> None:
        """Forget the listener of command `token` (every command's: None), waiting for its call that runs now, if
        any, to return; then its future may be resolved (the lock is held). Stopping (None) waits at most
        SHUTDOWN_WAIT_SECONDS: a Slack update that hangs must not hold serve's exit."""
        if token is None:
            self._listeners.clear()
            self._relay_ended.wait_for(lambda: self._relaying is None, SHUTDOWN_WAIT_SECONDS)
        else:
            self._listeners.pop(token, None)
            self._relay_ended.wait_for(lambda: self._relaying != token)

    def shutdown(self) -> None:
        """Stop: waiting requests are dropped, running syncs are abandoned (a killed sync resumes next time)."""
        with self._lock:
            self._closed = True
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()
            self._urgent.clear()
            self._background.clear()
            executors = [e for e in self._slots if e is not None]
            self._slots = [None] * self.workers
            for bound in self._bounds.values():
                bound.cancel()
            self._bounds.clear()
            waiting, self._waiting = self._waiting, {}
            self._stop_relaying()
        for future in waiting.values():
            if not future.done():
                future.set_result(None)  # the person is told serve stopped (run_command's caller)
        if executors:
            # Terminate, then one shutdown that waits: the pool's manager thread ends and drops its queues,
            # whose semaphores are unregistered; shutdown(wait=False) would leave them to os._exit, and the
            # resource tracker's "leaked semaphore objects" line (issue 20). That wait is bounded: a worker
            # that cannot act on SIGTERM (stopped, or stuck in C) must not hold serve's exit past its grace.
            processes = [p for executor in executors for p in (getattr(executor, "_processes", None) or {}).values()]
            for process in processes:
                if process.is_alive():
                    process.terminate()

            def shut_all() -> None:
                for executor in executors:
                    executor.shutdown(wait=True, cancel_futures=True)

            closing = threading.Thread(target=shut_all, name="sync-pool-shutdown", daemon=True)
            closing.start()
            closing.join(SHUTDOWN_WAIT_SECONDS)
            if closing.is_alive():
                log.warning("sync workers did not stop within %s s of SIGTERM; killing them", SHUTDOWN_WAIT_SECONDS)
                for process in processes:
                    if process.is_alive():
                        process.kill()
                closing.join(SHUTDOWN_WAIT_SECONDS)
        # The progress queue's two locks are semaphores too: the relay thread, blocked in get(), is told to end
        # (closing the pipe under it would not wake it), and the queue is closed and let go, so its semaphores are
        # unregistered now rather than reported leaked by the resource tracker at exit (issue 21).
        events, self._events = self._events, None
        if events is not None:
            events.put(None)
            if self._relay_thread is not None:  # its own: another queue's relay (tests run several) is not told to end
                self._relay_thread.join(timeout=5)
            events.close()

    # -- requests ---------------------------------------------------------------------------------
    def run_command(self, command: Command, on_event: Callable[[object], None] | None = None) -> Future:
        """Run a command typed in Slack in a worker, ahead of the periodic sync's queue; `on_event` gets its
        progress (in a thread of this process) until the returned future has the worker's SyncDone (None when
        serve stopped first): never after it, and a call under way when the result comes returns before the future
        has it."""
        import uuid

        token = uuid.uuid4().hex
        future: Future = Future()
        with self._lock:
            if self._closed:
                future.set_result(None)
                return future
            self._waiting[token] = future
            if on_event is not None:
                self._listeners[token] = on_event
        self._request(SyncJob("command", token, command), 0)
        return future

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

    def sweep_due(self) -> None:
        """Queue the sweep of the mirrors' leftovers (Engine.sweep_mirrors) in a worker: it lists every mirror's
        objects, 1.5 s for 200 mirrors with loose objects (benchmarks/bench_sweep.py), too long for serve's threads."""
        self._request(SyncJob("sweep", "mirrors"), 0, urgent=False)

    def pending(self) -> int:
        with self._lock:
            return len(self._timers) + len(self._urgent) + len(self._background) + len(self._running)

    def waiting(self) -> int:
        """Syncs asked for and not yet on a worker (for /metrics)."""
        with self._lock:
            return len(self._timers) + len(self._urgent) + len(self._background)

    def running(self) -> int:
        with self._lock:
            return len(self._running)

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
        slot = next(n for n in range(self.workers) if n not in self._busy)  # _pump: fewer running than workers
        if self._slots[slot] is None:
            self._slots[slot] = self._new_executor()
        self._running.add(job)
        self._busy[slot] = job
        try:
            future = self._slots[slot].submit(self.runner, job)
        except (BrokenProcessPool, RuntimeError):  # its worker died: a new pool for this and later syncs
            log.error("a sync worker died; starting it again")
            self._slots[slot] = self._new_executor()
            future = self._slots[slot].submit(self.runner, job)
        started = time.monotonic()
        bound = threading.Timer(self.timeout, self._overrun, args=(job, slot, future))
        bound.daemon = True
        self._bounds[job] = bound
        bound.start()

        def finish(f: Future, job: SyncJob = job, slot: int = slot) -> None:
            # A job already over (it can finish while the bound's thread starts) has add_done_callback call this at
            # once, in this thread, under the lock `_finished` takes: finished in a thread of its own instead, or the
            # queue stays locked for good (tests/test_sync_queue_done.py).
            if getattr(self._adding, "now", False):
                threading.Thread(target=self._finished, args=(job, f, started, slot), name="sync-done",
                                 daemon=True).start()
            else:
                self._finished(job, f, started, slot)

        self._adding.now = True
        try:
            future.add_done_callback(finish)
        finally:
            self._adding.now = False

    def _overrun(self, job: SyncJob, slot: int, future: Future) -> None:
        """A job still running at its time bound: its worker is killed (the pool then fails the job)."""
        with self._lock:
            if self._closed or future.done() or self._busy.get(slot) != job or self._slots[slot] is None:
                return
            self._overran.add(job)
            processes = list((getattr(self._slots[slot], "_processes", None) or {}).values())
        log.warning("%s ran past %s s (GAD_SYNC_TIMEOUT_SECONDS); stopping its worker", _job_words(job),
                    int(self.timeout))
        for process in processes:
            if process.is_alive():
                process.kill()

    def _finished(self, job: SyncJob, future: Future, started: float, slot: int = 0) -> None:
        # The pool's error is read, never raised here: this runs in the pool's manager thread, and raising it would
        # give it a traceback whose frames lead back to that thread's (which holds the error): a cycle that keeps the
        # pool's queues, and their five semaphores, until a garbage collection that serve's os._exit never waits for
        # ("5 leaked semaphore objects" when a SIGTERM stopped a job running or queued, the start-up sweep's).
        error = None if future.cancelled() else future.exception()
        with self._lock:
            bound = self._bounds.pop(job, None)
            overran = job in self._overran
            self._overran.discard(job)
        if bound is not None:
            bound.cancel()
        if future.cancelled():  # at shutdown, before a worker took it
            done = SyncDone(job, error=f"{STOPPED_AT_SHUTDOWN} before it began")
        elif isinstance(error, BrokenProcessPool):
            with self._lock:
                stopping = self._closed  # shutdown terminated the workers: the job runs again next time
                if not stopping:
                    self._slots[slot] = self._new_executor()
            if overran and not stopping:
                sentence = overrun_sentence(job, int(self.timeout))
                done = SyncDone(job, error=sentence, result=CommandFailed(sentence, False) if job.kind == "command"
                                else None)
            else:
                done = SyncDone(job, error=STOPPED_AT_SHUTDOWN if stopping
                                else "a sync worker process ended unexpectedly")
        elif error is not None:  # a bug: one line, the next request tries again
            done = SyncDone(job, error=f"{type(error).__name__}: {error}")
        else:
            done = future.result()
        with self._lock:
            self._running.discard(job)
            if self._busy.get(slot) == job:
                del self._busy[slot]
            again = job in self._again
            self._again.discard(job)
            if not self._closed:
                self._pump()
        if job.kind == "command":
            if isinstance(job.command, SyncRepos) and isinstance(done.result, list):
                _count_typed_syncs(done.result)  # `/gad sync`: syncs like the periodic ones, counted alike
            with self._lock:
                self._stop_relaying(job.name)
                waiting = self._waiting.pop(job.name, None)
            if waiting is not None:
                waiting.set_result(done)
            return
        if job.kind == "sweep":  # not a sync: the worker logged what it removed
            if done.error and done.error.startswith(STOPPED_AT_SHUTDOWN):
                log.info("the sweep of the mirrors' leftovers was %s; the next start sweeps again", done.error)
            elif done.error:
                log.warning("sweeping the mirrors' leftovers failed: %s", done.error)
        else:
            _completed(done, time.monotonic() - started)
        if self.on_done is not None:
            try:
                self.on_done(done)
            except Exception:
                log.exception("after the sync of %s", job.name)
        if again:
            self._request(job, 0)


def _job_words(job: SyncJob) -> str:
    """How a log line names a job: "the sync of web", "the listing of acme", "a command typed in Slack"."""
    if job.kind == "command":
        return f"a {type(job.command).__name__} command typed in Slack"
    if job.kind == "sweep":
        return "the sweep of the mirrors' leftovers"
    return f"the {'sync' if job.kind == 'repo' else 'listing'} of {job.name}"


def overrun_sentence(job: SyncJob, seconds: int) -> str:
    """What a job stopped at its time bound is told (a person, for a command typed in Slack; else the log)."""
    took = f"{seconds // 60:,} minutes" if seconds >= 120 else f"{seconds:,} s"
    subject = "This command" if job.kind == "command" else _job_words(job)[0].upper() + _job_words(job)[1:]
    return (f"{subject} ran for more than {took} (GAD_SYNC_TIMEOUT_SECONDS), so gad-bot stopped it to keep its "
            "sync workers free; what was finished is kept, and the next sync goes on from there.")


def _count_typed_syncs(results: list) -> None:
    """The repositories a `/gad sync` synced (its SyncResults), in /metrics as the periodic ones are."""
    from .. import metrics

    for result in results:
        metrics.SYNCS.labels(outcome="failed" if result.error else "ok").inc()
        if not result.error:
            metrics.SYNC_SECONDS.labels(kind="repo").observe(result.seconds + result.path_seconds)
        if result.fetch_seconds is not None:
            metrics.FETCH_SECONDS.observe(result.fetch_seconds)


def _completed(done: SyncDone, seconds: float) -> None:
    """The sync's one completion line (a warning when it failed), and its count in /metrics."""
    from .. import metrics

    outcome = "failed" if done.error else "ok"
    metrics.SYNCS.labels(outcome=outcome).inc()
    metrics.SYNC_SECONDS.labels(kind="repo" if done.job.kind == "repo" else "org").observe(seconds)
    if done.fetch_seconds is not None:
        metrics.FETCH_SECONDS.observe(done.fetch_seconds)
    extra = {"repo": done.job.name, "outcome": outcome, "seconds": round(seconds, 3)}
    if done.error:
        log.warning("sync of %s %s failed in %.3f s: %s", done.job.kind, done.job.name, seconds, done.error, extra=extra)
    else:
        log.info("sync of %s %s: ok in %.3f s, %d new commits", done.job.kind, done.job.name, seconds, done.new_commits,
                 extra=extra)


# -- inside a worker process ----------------------------------------------------------------------

_events = None  # the queue a typed command's progress goes to (set by _init_sync_worker)
PROGRESS_EVERY_SECONDS = 0.25  # a worker sends no more often than this: Slack's message is updated less often still


def _init_sync_worker(settings: Settings, server: int, events) -> None:
    """A report worker's start (die with serve, its logs, one Engine), and the queue for commands' progress."""
    global _events
    from .workers import _init_worker

    _init_worker(settings, server)
    _events = events


def _ready() -> None:
    """A no-op job: submitted once per worker at start, so the processes are up before the first push."""


def _notifier(token: str) -> Callable[[object], None]:
    """Send a command's progress events to serve, at most every PROGRESS_EVERY_SECONDS."""
    last = [0.0]

    def notify(event: object) -> None:
        now = time.monotonic()
        if _events is None or now - last[0] < PROGRESS_EVERY_SECONDS:
            return
        last[0] = now
        _events.put((token, event))

    return notify


def run_sync(job: SyncJob) -> SyncDone:
    """Sync one repository, or one organization's listing, with the worker's Engine."""
    from ..errors import GadError
    from . import workers

    engine = workers._engine
    try:
        if job.kind == "command":
            return SyncDone(job, result=run_command(engine, job.command, _notifier(job.name)))
        if job.kind == "sweep":
            return SyncDone(job, result=len(engine.sweep_mirrors()))
        if job.kind in ("org", "org-fetch"):
            results = engine.sync_orgs(names=[job.name], fetch=job.kind == "org-fetch")
            _announce_org_changes(engine, results)
            return SyncDone(job, error=next((r.error for r in results if r.error), None))
        try:
            repo = engine.repo(job.name)
        except GadError as error:  # untracked since it was requested
            return SyncDone(job, error=str(error))
        result = engine.sync_one(repo)
        return SyncDone(job, result.new_commits, result.error, fetch_seconds=result.fetch_seconds)
    except GadError as error:  # a command's error goes back whole: serve words it for the person who typed it
        return SyncDone(job, error=str(error), result=CommandFailed(str(error), error.operator_detail))
    except Exception as error:
        from ..faults import DiskFullError, is_disk_full

        if not is_disk_full(error):
            raise
        # a full disk is no bug: one sentence for the log and for whoever typed the command, no traceback
        sentence = str(DiskFullError.at())
        return SyncDone(job, error=sentence, result=CommandFailed(sentence, False))


def _announce_org_changes(engine, results) -> None:
    """Tell the channels subscribed to an organization's project what its new listing changed."""
    if not engine.settings.slack_bot_token or not any(r.changes for r in results):
        return
    from ..digests.orgnews import announce_org_changes
    from ..slackapi import web_client

    announce_org_changes(engine.index, web_client(engine.settings), results)
