"""Reports in worker processes: a bounded pool fed fairly between people, so acknowledging never waits on them.

A report is CPU work in Python and numpy. Run in threads of the process that acknowledges
Slack's requests, it shares that process's interpreter lock, and 100 heavy queries at once held
acks past Slack's 3 s limit. Here reports (and compares, Share included) run in `workers`
processes (one per CPU by default), each owned by one dispatcher thread of the serving process:

    pool = ReportPool(settings); pool.start()
    ahead = pool.submit(ReportJob(...), deliver)   # returns at once; deliver(answer) is called later
    pool.shutdown()

What one person can do to everyone is bounded (issue 22):
- Turns, not arrival order: the next job to run is the first waiting one of the person with the
  fewest jobs running, who has waited longest since their last one started. A person's fourth
  question waits behind other people's first ones instead of being refused (issue 18).
- Nobody holds every worker: with two workers or more one person runs on at most all but one, so
  another person's quick question always finds a worker within one job's time at most.
- A job's time is bounded (GAD_REPORT_TIMEOUT_SECONDS): past it the worker is killed (nothing
  short of that stops numpy or a line counter mid-way), a new one is started, and the person is
  told in one sentence how to narrow the question.
- Only a flood is refused: `per_user` jobs waiting or running for one person, or `max_waiting`
  in all, each with a sentence.

`submit` says how many jobs are ahead of the new one, so the face can tell a person where they
stand. Each worker opens its own Engine (and its own column cache) once; a job's answer is
rendered there too and comes back as a `ReportAnswer` of plain data. A worker that dies (out of
memory, say) fails only the job it was running and is started again.
"""

from __future__ import annotations

import dataclasses

import collections
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date

from ..config import Settings
from ..store import graph
from ..errors import GadError, for_member
from ..faults import DiskFullError, IndexDamagedError, is_damaged_index, is_disk_full
from ..metric import CompareReport, Report
from ..engine.audiences import Viewer
from ..engine.query import Compare, Query
from ..engine.teams import Teams

log = logging.getLogger(__name__)

MAX_WAITING = 1000  # beyond this many queued reports, new ones are refused with a sentence
REPORT_NICENESS = 10
START_SECONDS = 120  # a new worker opens its Engine in about a second; past this it is given up
RESTART_PAUSE_SECONDS = 1.0  # between attempts to start a worker that failed to start


class BusyError(GadError):
    """A report was refused because its person, or everyone, has too many waiting."""


@dataclass(frozen=True)
class ReportJob:
    """One report or compare to compute and render: what the face knows when the request arrives."""

    query: Query
    query_text: str
    user: str
    today: date
    shared_by: str | None = None  # the Share button: rendered for the channel, naming who shared it
    csv: bool = False  # also render the CSV attachment
    compare: Compare | None = None  # a `compare ...`: `query` is its shared query, the items are here
    share_id: str | None = None  # the id its Share button carries (the face keeps the answer under it)
    public: bool = False  # posted for everyone by its face (a Home modal's answer to a channel): no Share button
    channel: str | None = None  # a Home modal's answer goes to this channel, its failures to the person's DM:
    #                             a timeout's or cut-off's sentence names the channel
    keep_report: bool = False  # the face builds its answer from `report` (the Workflow step's outputs)
    asker: str = "You"  # who a refusal for too many questions names: a person, or "gad-bot's workflow steps"
    me: bool = False  # `/gad me`: the viewer's own figures
    teams: Teams | None = None  # Slack's user groups, for `team:` and `by:team` (asked by the face, not the worker)
    # whom the answer is for (bot/engine/audiences.py): every face says it; there is no default to forget
    viewer: Viewer = field(kw_only=True)


@dataclass(frozen=True)
class ReportAnswer:
    """What a worker sends back: the message to post, or a sentence saying why there is none."""

    text: str
    blocks: list[dict]
    public: bool = False
    csv: str | None = None
    report: Report | CompareReport | None = None  # with `csv` or a share: the face renders it again (where
    #                                               the file went; the private answer without its button)
    failed: bool = False  # text/blocks are an error message (a GadError's, or an internal error's)
    detail: str | None = None  # failed with operator detail: text/blocks are for members, this for admins
    sentence: str | None = None  # failed: the sentence as plain text, for a face without blocks (a Workflow step)
    reference: str | None = None  # failed: the reference for the logs that `blocks` show
    refused: bool = False  # failed because the question cannot be answered as asked (a typo, an untracked name):
    #                        the person's to fix, counted apart so that typos never page the operator
    reason: str | None = None  # failed: the kind of error (its class name), for the completion line
    fault: str | None = None  # "index": the index is damaged (readiness checks it at once)
    timed_out: bool = False  # stopped at GAD_REPORT_TIMEOUT_SECONDS

    @property
    def outcome(self) -> str:
        """How /metrics and the completion line count it: ok, refused, timed_out or failed."""
        return "refused" if self.refused else "timed_out" if self.timed_out else "failed" if self.failed else "ok"


def default_workers() -> int:
    """One worker per CPU this process may use (at least one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def timeout_sentence(seconds: int, channel: str | None = None) -> str:
    question = f"Your question for <#{channel}>" if channel else "Your question"
    return (f"{question} was still computing after {seconds:,} s, so gad-bot stopped it to keep answering "
            "everyone else; narrow it (a shorter `since:`, a `path:`, fewer repositories or no `vs:cocomo`) "
            "and ask again.")


def queued_words(ahead: int, workers: int) -> str | None:
    """Where a new report stands ("3 reports ahead of yours"), or None when a worker takes it at once."""
    if ahead < workers:
        return None
    return f"{ahead:,} {'report' if ahead == 1 else 'reports'} ahead of yours"


class ReportPool:
    """The turns and the worker processes (see the module docstring)."""

    def __init__(self, settings: Settings, workers: int | None = None, per_user: int | None = None,
                 max_waiting: int = MAX_WAITING, runner: Callable[[ReportJob], ReportAnswer] | None = None,
                 timeout: float | None = None):
        self.settings = settings
        self.runner = runner or run_report  # what a worker does with a job (module-level: it is pickled by name)
        self.workers = workers or default_workers()
        self.per_user = per_user or settings.reports_per_user
        self.max_waiting = max_waiting
        self.timeout = timeout or settings.report_timeout_seconds
        # no one person runs on every worker: one is left for everybody else
        self.per_user_running = max(1, self.workers - 1)
        self._waiting: dict[str, collections.deque[tuple[int, ReportJob, Callable]]] = {}
        self._running: collections.Counter[str] = collections.Counter()  # per person
        self._last_start: dict[str, int] = {}  # per person: the turn their latest job started at
        self._turn = 0
        self._count = 0  # jobs waiting, everyone's
        self._cond = threading.Condition()
        self._closed = False
        self._draining = False  # drain() has begun: new reports are refused, the queued ones still run
        self._in_flight: dict[object, tuple[ReportJob, Callable]] = {}  # running now, by a token per run
        self._deliveries_closed = False
        self._processes: list[_Worker | None] = [None] * self.workers
        self._deliveries = ThreadPoolExecutor(max_workers=4, thread_name_prefix="report-delivery")
        self._dispatchers: list[threading.Thread] = []
        # Told when a report met a damaged index (serve: Health.suspect_index, so /readyz says so at once).
        self.on_fault: Callable[[str], None] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker processes (and wait until each has opened its Engine)."""
        started = [_Worker.spawn(self.settings, self.runner) for _ in range(self.workers)]
        for worker in started:
            worker.wait_ready(START_SECONDS)
        for i, worker in enumerate(started):
            self._processes[i] = worker
            thread = threading.Thread(target=self._dispatch, args=(i,), name=f"report-dispatch-{i}", daemon=True)
            thread.start()
            self._dispatchers.append(thread)

    def drain(self, grace: float) -> int:
        """Stop taking reports; let the waiting and running ones finish for up to `grace` seconds; tell each
        person whose report did not finish by then that it was cut off and to ask again. Then `shutdown()`.

        Returns how many reports were cut off. Every answer (finished or cut off) is handed to its
        delivery before this returns, so a restart loses no one silently.
        """
        with self._cond:
            self._draining = True
            self._cond.wait_for(lambda: not self._count and not self._in_flight, timeout=max(0.0, grace))
            waiting = sorted((entry for jobs in self._waiting.values() for entry in jobs), key=lambda entry: entry[0])
            cut = [*self._in_flight.values(), *((job, deliver) for _, job, deliver in waiting)]
            self._in_flight.clear()  # a report finishing after this is not delivered: its person was told
            self._waiting.clear()
            self._count = 0
            self._closed = True
            self._cond.notify_all()
        for job, deliver in cut:
            _completed(job, "cut_off", None)
            self._deliveries.submit(_deliver, deliver, cut_off(job))
        if cut:
            log.warning("shutting down: %d report(s) did not finish within %s s; each person was told to ask again",
                        len(cut), grace)
        self.shutdown()
        return len(cut)

    def shutdown(self) -> None:
        """Stop taking reports; drop the waiting ones; workers are stopped (running reports are abandoned);
        the answers already handed over (cut-offs included) are delivered before this returns."""
        with self._cond:
            self._closed = True
            self._waiting.clear()
            self._count = 0
            self._deliveries_closed = True
            self._cond.notify_all()
            workers = [w for w in self._processes if w is not None]
        for worker in workers:
            worker.kill()
        self._deliveries.shutdown(wait=True)

    def alive(self) -> int:
        """How many worker processes are alive now (for readiness and /metrics)."""
        with self._cond:
            return sum(1 for w in self._processes if w is not None and w.process.is_alive())

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests and the benchmark's memory figures)."""
        with self._cond:
            return [w.pid for w in self._processes if w is not None]

    # -- the turns -------------------------------------------------------------------------------
    def room_for(self, user: str) -> str | None:
        """None when `user` may queue a report now, else the sentence saying why not."""
        with self._cond:
            return self._refusal(user)

    def _refusal(self, user: str, asker: str = "You") -> str | None:
        if self._closed or self._draining:
            return "gad-bot is shutting down; ask again in a minute."
        mine = self._running[user] + len(self._waiting.get(user, ()))
        if mine >= self.per_user:
            return (f"{asker} already have {mine} question{'s' * (mine != 1)} waiting or computing (at most {self.per_user} at a time); "
                    "wait for some of them to be answered, then ask again.")
        if self._count >= self.max_waiting:
            return f"gad-bot has {self._count:,} reports waiting; ask again in a minute."
        return None

    def submit(self, job: ReportJob, deliver: Callable[[ReportAnswer], None]) -> int:
        """Queue `job`; return how many jobs are ahead of it (running, or before it in the turns), or raise BusyError."""
        with self._cond:
            refusal = self._refusal(job.user, job.asker)
            if refusal:
                raise BusyError(refusal)
            mine = len(self._waiting.get(job.user, ()))
            # Its turn comes after the person's own waiting jobs, and after at most as many again
            # (plus one) of each other person's: people take turns.
            ahead = sum(self._running.values()) + mine + sum(
                min(len(jobs), mine + 1) for user, jobs in self._waiting.items() if user != job.user)
            self._turn += 1
            self._waiting.setdefault(job.user, collections.deque()).append((self._turn, job, deliver))
            self._count += 1
            self._cond.notify_all()
        return ahead

    def waiting(self) -> int:
        with self._cond:
            return self._count

    def running(self) -> int:
        with self._cond:
            return sum(self._running.values())

    def _next(self) -> tuple[ReportJob, Callable] | None:
        """The job whose turn it is (under the lock): fewest running first, then longest since the last start."""
        eligible = [user for user, jobs in self._waiting.items()
                    if jobs and self._running[user] < self.per_user_running]
        if not eligible:
            return None
        user = min(eligible, key=lambda u: (self._running[u], self._last_start.get(u, 0), self._waiting[u][0][0]))
        _, job, deliver = self._waiting[user].popleft()
        if not self._waiting[user]:
            del self._waiting[user]
        self._count -= 1
        self._turn += 1
        self._last_start[user] = self._turn
        self._running[user] += 1
        return job, deliver

    def _dispatch(self, slot: int) -> None:
        while True:
            with self._cond:
                while not self._closed and (picked := self._next()) is None:
                    self._cond.wait()
                if self._closed:
                    return
                job, deliver = picked
                token = object()
                self._in_flight[token] = picked
            started = time.monotonic()
            try:
                answer = self._compute(slot, job)
                if answer is not None and answer.fault and self.on_fault is not None:
                    try:
                        self.on_fault("a report")  # /readyz checks the index now, not in up to 5 minutes
                    except Exception:
                        log.exception("telling readiness of a damaged index failed")
            finally:
                with self._cond:
                    self._running[job.user] -= 1
                    if self._running[job.user] <= 0:
                        del self._running[job.user]
                        if job.user not in self._waiting:
                            self._last_start.pop(job.user, None)  # nothing of theirs left: forget them
                    if self._in_flight.pop(token, None) is None:
                        answer = None  # cut off by drain(): its person has been told already (and counted)
                    elif answer is not None:
                        _completed(job, answer.outcome, time.monotonic() - started, answer.reason)
                    # handed over under the lock: shutdown() closes the deliveries only after taking it,
                    # so an answer made before the drain ended is never dropped between the two
                    if answer is not None and not self._deliveries_closed:
                        self._deliveries.submit(_deliver, deliver, answer)
                    self._cond.notify_all()

    def _compute(self, slot: int, job: ReportJob) -> ReportAnswer | None:
        worker = self._processes[slot]
        outcome = worker.run(job, self.timeout) if worker is not None else _Worker.DIED
        if isinstance(outcome, ReportAnswer):
            return outcome
        if outcome is _Worker.TIMED_OUT:
            log.warning("a report ran past %s s; stopping its worker and starting another", self.timeout)
        else:
            log.error("a report worker died; starting another")
        self._restart(slot)
        if self._closed:
            return None
        if outcome is _Worker.TIMED_OUT:
            return dataclasses.replace(_failure(timeout_sentence(int(self.timeout), job.channel), channel=job.channel),
                                       timed_out=True)
        return dataclasses.replace(_failure("The report stopped unexpectedly on gad-bot's side (a worker process "
                                            "ended); ask again, and tell the operator if it happens again."),
                                   reason="the worker process died")

    def _restart(self, slot: int) -> None:
        """Replace the worker of `slot` (killed or dead) with a new one, trying until it starts or the pool closes."""
        old = self._processes[slot]
        if old is not None:
            old.kill()
        while not self._closed:
            try:
                worker = _Worker.spawn(self.settings, self.runner)
                worker.wait_ready(START_SECONDS)
            except Exception:
                log.exception("a report worker failed to start; trying again")
                time.sleep(RESTART_PAUSE_SECONDS)
                continue
            with self._cond:
                if self._closed:
                    worker.kill()
                    return
                self._processes[slot] = worker
            return


class _Worker:
    """One worker process and the pipe to it: a job goes in, its answer comes out, or time runs out."""

    TIMED_OUT = object()
    DIED = object()

    def __init__(self, process, conn):
        self.process, self.conn = process, conn

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def spawn(cls, settings: Settings, runner: Callable[[ReportJob], ReportAnswer]) -> "_Worker":
        from ..spawning import worker_context

        # Forked from gad-bot's fork server (bot/spawning.py), never from serve itself: serve has threads, which
        # fork must not copy. A worker ends with serve (`end_with` in _init_worker).
        context = worker_context()
        ours, theirs = context.Pipe()
        process = context.Process(target=_worker_main, args=(theirs, settings, os.getpid(), runner),
                                  name="gad-bot report worker", daemon=True)
        process.start()
        theirs.close()
        return cls(process, ours)

    def wait_ready(self, seconds: float) -> None:
        """Wait for the worker's first word (its Engine is open); raise RuntimeError when it does not come."""
        try:
            if self.conn.poll(seconds):
                self.conn.recv()
                return
        except (EOFError, OSError):
            pass
        self.kill()
        raise RuntimeError("a report worker did not start")

    def run(self, job: ReportJob, timeout: float):
        """The job's ReportAnswer, TIMED_OUT (the worker is still computing) or DIED."""
        try:
            self.conn.send(job)
            if not self.conn.poll(timeout):
                return self.TIMED_OUT
            return self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            return self.DIED

    def kill(self) -> None:
        """Stop the worker now, whatever it is doing, and reap it."""
        try:
            self.process.kill()
        except (OSError, ValueError, AttributeError):
            pass
        self.process.join(5)
        try:
            self.conn.close()
        except OSError:
            pass  # a shutdown closing every worker may have closed this pipe from another thread first


def _completed(job: ReportJob, outcome: str, seconds: float | None, reason: str | None = None) -> None:
    """The report's one completion line, and its count in /metrics.

    A refusal (the question cannot be answered as asked) is counted and logged as `refused`, never as
    `failed`: the documented alert on the failed ratio is for gad-bot's faults, and one person's typos
    must not page anyone. The line names the kind of error (its class), never its sentence, which
    quotes what the member typed."""
    from .. import metrics

    metrics.REPORTS.labels(outcome=outcome).inc()
    if seconds is not None:
        metrics.REPORT_SECONDS.observe(seconds)
    # Names are logged only once answered: a failed one may be anything a member typed (request content).
    repos = ",".join(job.query.repos)[:200] if outcome == "ok" else f"{len(job.query.repos)} names"
    said = f"{outcome} ({reason})" if reason else outcome
    log.log(logging.WARNING if outcome == "failed" else logging.INFO, "report for %s on %s: %s in %s", job.user,
            repos or "-", said, "-" if seconds is None else f"{seconds:.3f} s",
            extra={"repo": repos, "outcome": outcome, "seconds": None if seconds is None else round(seconds, 3),
                   "reason": reason})


def cut_off(job: ReportJob) -> ReportAnswer:
    """What a person is told when a restart stops their report before it is done."""
    where = f" for <#{job.channel}>" if job.channel else ""
    return _failure(f"gad-bot restarted before your report `{job.query_text[:200]}`{where} was done; "
                    "ask again in a minute.", channel=job.channel)


def _deliver(deliver: Callable[[ReportAnswer], None], answer: ReportAnswer) -> None:
    try:
        deliver(answer)
    except Exception:
        log.exception("delivering a report failed")


def _failure(sentence: str, reference: str | None = None, *, channel: str | None = None) -> ReportAnswer:
    from ..render import blocks as kit

    text, blocks = kit.error_blocks(sentence, reference, channels=(channel,) if channel else ())
    return ReportAnswer(text, blocks, failed=True, sentence=sentence, reference=reference)


# -- inside a worker process ----------------------------------------------------------------------

_engine = None


def _worker_main(conn, settings: Settings, server: int, runner: Callable[[ReportJob], ReportAnswer]) -> None:
    """A worker's life: open the Engine, say so, then answer jobs one at a time until the pipe closes."""
    _init_worker(settings, server)
    conn.send(os.getpid())
    # range:, branch: and by:release search the commit graph with scipy, whose import takes 0.2-0.3 s
    # (benchmarks/bench_engine.py: the whole range: report was 0.4 s where a plain one is 0.2 s). A worker
    # waits idle for its first job, so it imports it now, in the background, and nobody's first such
    # question pays for it; a job that needs it meanwhile waits on Python's import lock, never repeats it.
    graph.warm_up()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer = runner(job)
        except Exception:  # run_report answers every error itself; a stand-in runner may not
            log.exception("a report runner raised")
            answer = _failure("Something went wrong on gad-bot's side; the operator can find the details in the logs.")
        conn.send(answer)


def _init_worker(settings: Settings, server: int) -> None:
    """End with the server (kill -9 included), log like it, and open the Engine once."""
    global _engine
    from ..engine.engine import Engine
    from ..logs import setup_logging
    from ..spawning import end_with

    end_with(server)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the server decides
    # Reports are background work; acks are what Slack times. With every CPU busy computing
    # reports, a lower priority lets the serving process run the moment a request arrives.
    os.nice(REPORT_NICENESS)
    setup_logging(settings.log_level, settings.log_format == "json", secrets=settings.secrets())
    _engine = Engine(settings)


def run_report(job: ReportJob) -> ReportAnswer:
    """Compute and render one report (in a worker process; in tests, anywhere an Engine is open)."""
    from ..errors import UnknownRepoError
    from ..engine.query import explain_unknown
    from ..render import blocks as kit

    try:
        if job.compare is not None:
            return _run_compare(job)
        try:
            report = (_engine.me(job.query, job.today, job.viewer) if job.me  # type: ignore[union-attr]
                      else _engine.report(job.query, job.today, job.viewer, job.teams))  # type: ignore[union-attr]
        except UnknownRepoError as error:
            raise explain_unknown(error, job.query_text) from None
        public = job.public or job.shared_by is not None or job.query.public
        text, blocks = kit.report_blocks(report, job.query_text, shared_by=job.shared_by, public=public,
                                         share_id=job.share_id)
        if job.csv:
            from ..render.csvout import report_to_csv

            return ReportAnswer(text, blocks, public=public, csv=report_to_csv(report), report=report)
        if job.shared_by is not None or job.share_id is not None or job.keep_report:  # the face keeps or uses it
            return ReportAnswer(text, blocks, public=public, report=report)
        return ReportAnswer(text, blocks, public=public)
    except GadError as error:
        sentence, reference = for_member(error)
        failure = _failure(sentence, reference)
        # a setting to fix (ConfigError: operator detail) or a full disk is gad-bot's side; the rest the asker's
        refused = not error.operator_detail and not isinstance(error, DiskFullError)
        failure = dataclasses.replace(failure, refused=refused, reason=type(error).__name__)
        return dataclasses.replace(failure, detail=str(error)) if reference else failure
    except Exception as error:
        reference = uuid.uuid4().hex[:8]
        if is_damaged_index(error):  # every question will fail alike: say what it is, and have readiness see it
            log.error("a report met a damaged index (reference %s): %s", reference, error, extra={"reference": reference})
            failure = _failure(str(IndexDamagedError.sentence()), reference)
            return dataclasses.replace(failure, reason=type(error).__name__, fault="index")
        if is_disk_full(error):
            log.error("a report could not write: the disk is full (reference %s): %s", reference, error,
                      extra={"reference": reference})
            return dataclasses.replace(_failure(str(DiskFullError.at()), reference), reason="DiskFullError")
        log.exception("internal error computing a report (reference %s)", reference, extra={"reference": reference})
        return dataclasses.replace(_failure("Something went wrong on gad-bot's side; the operator can find the "
                                            "details in the logs.", reference), reason=type(error).__name__)


def _run_compare(job: ReportJob) -> ReportAnswer:
    """Compute and render one `compare` (errors are answered by run_report)."""
    from ..render.compare import compare_blocks, compare_to_csv

    report = _engine.compare(job.compare, job.today, job.viewer, job.teams)  # type: ignore[union-attr]
    public = job.public or job.shared_by is not None or job.query.public
    text, blocks = compare_blocks(report, job.query_text, shared_by=job.shared_by, public=public,
                                  share_id=job.share_id)
    if job.csv:
        return ReportAnswer(text, blocks, public=public, csv=compare_to_csv(report), report=report)
    kept = job.shared_by is not None or job.share_id is not None  # the face keeps or re-renders it
    return ReportAnswer(text, blocks, public=public, report=report if kept else None)
