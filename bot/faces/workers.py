"""Reports in worker processes: a bounded pool fed by one queue, so acknowledging never waits on them.

A report is CPU work in Python and numpy. Run in threads of the process that acknowledges
Slack's requests, it shares that process's interpreter lock, and 100 heavy queries at once held
acks past Slack's 3 s limit. Here reports run in `workers` processes (one per CPU by default),
fed in order from a queue in the serving process:

    pool = ReportPool(settings); pool.start()
    ahead = pool.submit(ReportJob(...), deliver)   # returns at once; deliver(answer) is called later
    pool.shutdown()

`submit` says how many reports are ahead of the new one (running or waiting), so the face can
tell a person where they stand, and refuses with one sentence when the person already has
`per_user` reports waiting or running, or when the queue is full. Each worker opens its own
Engine (and its own column cache) once; a report's answer is rendered there too and comes back
as a `ReportAnswer` of plain data. A worker that dies (out of memory, say) fails only the report
it was running; the pool is started again for the next one.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import date

from ..config import Settings
from ..errors import GadError
from ..metric import Report
from ..engine.query import Query

log = logging.getLogger(__name__)

MAX_WAITING = 1000  # beyond this many queued reports, new ones are refused with a sentence
REPORT_NICENESS = 10


class BusyError(GadError):
    """A report was refused because its person, or everyone, has too many waiting."""


@dataclass(frozen=True)
class ReportJob:
    """One report to compute and render: what the face knows when the request arrives."""

    query: Query
    query_text: str
    user: str
    today: date
    shared_by: str | None = None  # the Share button: rendered for the channel, naming who shared it
    csv: bool = False  # also render the CSV attachment


@dataclass(frozen=True)
class ReportAnswer:
    """What a worker sends back: the message to post, or a sentence saying why there is none."""

    text: str
    blocks: list[dict]
    public: bool = False
    csv: str | None = None
    report: Report | None = None  # with `csv` or a share: the face renders it again (where the file went;
    #                               the private answer without its button)
    failed: bool = False  # text/blocks are an error message (a GadError's, or an internal error's)


def default_workers() -> int:
    """One worker per CPU this process may use (at least one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class ReportPool:
    """The queue and the worker processes (see the module docstring)."""

    def __init__(self, settings: Settings, workers: int | None = None, per_user: int = 3,
                 max_waiting: int = MAX_WAITING, runner: Callable[[ReportJob], ReportAnswer] | None = None):
        self.settings = settings
        self.runner = runner or run_report  # what a worker does with a job (module-level: it is pickled by name)
        self.workers = workers or default_workers()
        self.per_user = per_user
        self.max_waiting = max_waiting
        self._jobs: collections.deque[tuple[ReportJob, Callable[[ReportAnswer], None]]] = collections.deque()
        self._users: collections.Counter[str] = collections.Counter()  # reports waiting or running, per person
        self._running = 0
        self._cond = threading.Condition()
        self._closed = False
        self._executor: ProcessPoolExecutor | None = None
        self._deliveries = ThreadPoolExecutor(max_workers=4, thread_name_prefix="report-delivery")
        self._dispatchers: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker processes (and wait until each has opened its Engine)."""
        self._executor = self._new_executor()
        for future in [self._executor.submit(_ready) for _ in range(self.workers)]:
            future.result(timeout=120)
        for i in range(self.workers):
            thread = threading.Thread(target=self._dispatch, name=f"report-dispatch-{i}", daemon=True)
            thread.start()
            self._dispatchers.append(thread)

    def shutdown(self) -> None:
        """Stop taking reports; drop the waiting ones; workers exit (running reports are abandoned)."""
        with self._cond:
            self._closed = True
            self._jobs.clear()
            self._cond.notify_all()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        self._deliveries.shutdown(wait=False, cancel_futures=True)

    def _new_executor(self) -> ProcessPoolExecutor:
        import multiprocessing

        # spawn: the serving process has threads, which fork must not copy. Not forkserver: its
        # workers are the forkserver's children and keep it alive, so a kill -9 of the server
        # would leave them all running; spawned workers are the server's own children and die
        # with it (PR_SET_PDEATHSIG in _init_worker). They start once, in about a second.
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=context, initializer=_init_worker,
                                   initargs=(self.settings, os.getpid()))

    # -- the queue -------------------------------------------------------------------------------
    def room_for(self, user: str) -> str | None:
        """None when `user` may queue a report now, else the sentence saying why not."""
        with self._cond:
            return self._refusal(user)

    def _refusal(self, user: str) -> str | None:
        if self._closed:
            return "gad-bot is shutting down; ask again in a minute."
        if self._users[user] >= self.per_user:
            return (f"You already have {self._users[user]} reports on their way (at most {self.per_user} at a time); "
                    "wait for them, then ask again.")
        if len(self._jobs) >= self.max_waiting:
            return f"gad-bot has {len(self._jobs):,} reports waiting; ask again in a minute."
        return None

    def submit(self, job: ReportJob, deliver: Callable[[ReportAnswer], None]) -> int:
        """Queue `job`; return how many reports are ahead of it (running or waiting), or raise BusyError."""
        with self._cond:
            refusal = self._refusal(job.user)
            if refusal:
                raise BusyError(refusal)
            ahead = self._running + len(self._jobs)
            self._jobs.append((job, deliver))
            self._users[job.user] += 1
            self._cond.notify()
        return ahead

    def waiting(self) -> int:
        with self._cond:
            return len(self._jobs)

    def _dispatch(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                job, deliver = self._jobs.popleft()
                self._running += 1
            try:
                answer = self._compute(job)
            finally:
                with self._cond:
                    self._running -= 1
                    self._users[job.user] -= 1
                    if self._users[job.user] <= 0:
                        del self._users[job.user]
            if answer is not None:
                try:
                    self._deliveries.submit(_deliver, deliver, answer)
                except RuntimeError:  # shutting down
                    return

    def _compute(self, job: ReportJob) -> ReportAnswer | None:
        executor = self._executor
        try:
            return executor.submit(self.runner, job).result()  # type: ignore[union-attr]
        except BrokenProcessPool:
            with self._cond:
                if self._closed:
                    return None
                if self._executor is executor:  # the first dispatcher to notice starts a new pool
                    log.error("a report worker died; starting the report pool again")
                    self._executor = self._new_executor()
            return _failure("The report stopped unexpectedly on gad-bot's side (a worker process ended); "
                            "ask again, and tell the operator if it happens again.")
        except RuntimeError:  # the executor was shut down under us
            return None


def _deliver(deliver: Callable[[ReportAnswer], None], answer: ReportAnswer) -> None:
    try:
        deliver(answer)
    except Exception:
        log.exception("delivering a report failed")


def _failure(sentence: str, reference: str | None = None) -> ReportAnswer:
    from ..render import blocks as kit

    text, blocks = kit.error_blocks(sentence, reference)
    return ReportAnswer(text, blocks, failed=True)


# -- inside a worker process ----------------------------------------------------------------------

_engine = None


def _init_worker(settings: Settings, server: int) -> None:
    """Die with the server (kill -9 included), log like it, and open the Engine once."""
    global _engine
    import ctypes
    import signal

    from ..engine.engine import Engine
    from ..logs import setup_logging

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass
    if os.getppid() != server:  # the server died before prctl took effect
        os._exit(4)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the server decides
    # Reports are background work; acks are what Slack times. With every CPU busy computing
    # reports, a lower priority lets the serving process run the moment a request arrives.
    os.nice(REPORT_NICENESS)
    setup_logging(settings.log_level, settings.log_format == "json", secrets=settings.secrets())
    _engine = Engine(settings)


def _ready() -> int:
    return os.getpid()


def run_report(job: ReportJob) -> ReportAnswer:
    """Compute and render one report (in a worker process; in tests, anywhere an Engine is open)."""
    from ..errors import UnknownRepoError
    from ..engine.query import explain_unknown
    from ..render import blocks as kit

    try:
        try:
            report = _engine.report(job.query, job.today)  # type: ignore[union-attr]
        except UnknownRepoError as error:
            raise explain_unknown(error, job.query_text) from None
        public = job.shared_by is not None or job.query.public
        text, blocks = kit.report_blocks(report, job.query_text, shared_by=job.shared_by, public=public)
        if job.csv:
            from ..render.csvout import report_to_csv

            return ReportAnswer(text, blocks, public=public, csv=report_to_csv(report), report=report)
        if job.shared_by is not None:  # the face also replaces the private answer it was shared from
            return ReportAnswer(text, blocks, public=public, report=report)
        return ReportAnswer(text, blocks, public=public)
    except GadError as error:
        return _failure(str(error))
    except Exception:
        reference = uuid.uuid4().hex[:8]
        log.exception("internal error computing a report (reference %s)", reference, extra={"reference": reference})
        return _failure("Something went wrong on gad-bot's side; the operator can find the details in the logs.",
                        reference)
