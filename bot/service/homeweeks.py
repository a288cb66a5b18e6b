"""The Home tab's weekly figures: kept, and computed in a thread of `serve` before anyone opens the tab.

The Home tab shows each tracked repository's 2GAD for the last full week. A closed week of one snapshot never
changes and a sync makes a new generation, so a figure is kept under the repository's id (never given twice:
Index.remove_repo), generation and Monday, and an open computes only what is not kept. Kept in the process alone, though, the first open after `serve` started paid
for every repository (1.76 s at 2,000 repositories, benchmarks/bench_home.py) while a person waited on the tab. So
`serve` starts a thread that computes what is missing right after its start, after each sync its workers finish,
and every REFRESH_SECONDS (a sync by the CLI in another process, a new week), and the first open finds it kept.

    weeks = HomeWeeks(engine, today)
    weeks.start()                                   # serve, once it answers: the thread warms in the background
    figures, computed = weeks.for_open(engine.repos(), monday, today)  # an open: only what is not kept
    weeks.wake()                                    # a sync finished: its repository's new generation
    weeks.stop()                                    # SIGTERM: the thread ends between two repositories
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import date, timedelta

from ..engine import periods
from ..engine import query as q
from ..errors import GadError
from ..render.words import plural

log = logging.getLogger(__name__)

# A sync by the CLI (another process) or a new week is noticed within this long; a sync in serve's own
# workers wakes the thread at once.
REFRESH_SECONDS = 60.0
# At SIGTERM the thread is told to stop and ends between two repositories (milliseconds each); serve waits at
# most this long for it before it closes the index, and never more (the thread is a daemon).
STOP_WAIT_SECONDS = 2.0
# An open while the thread computes (right after serve's start, at a new week) waits for it rather than computing
# beside it: the two share one interpreter, and side by side took longer than either alone (bench_home.py). Past
# this, the open computes what is still missing itself.
OPEN_WAIT_SECONDS = 10.0

Key = tuple[int, int, date]  # (repository id, generation, Monday of the week)


def last_full_week(today: date) -> date:
    """The Monday of the last full week before `today`: the week the Home tab shows."""
    return periods.bucket_start(today, "week") - timedelta(days=7)


class HomeWeeks:
    """Each repository's 2GAD for a week, kept per (repository, generation, Monday); see the module docstring."""

    def __init__(self, engine, today: Callable[[], date]):
        self.engine = engine
        self.today = today
        self._kept: dict[Key, int] = {}
        # Figures that raised more than a GadError (a repository whose stored history is damaged): logged once per
        # generation, not at every pass of the thread (every REFRESH_SECONDS) and every open.
        self._failed: set[Key] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()  # clear while the thread computes
        self._idle.set()

    # -- what an open asks -------------------------------------------------------------------------
    def for_open(self, tracked: Sequence, monday: date, today: date) -> tuple[dict[int, int | None], int]:
        """figures() for a Home open: once the thread, if it is computing, is done (at most OPEN_WAIT_SECONDS)."""
        self._idle.wait(OPEN_WAIT_SECONDS)
        return self.figures(tracked, monday, today)

    def figures(self, tracked: Sequence, monday: date, today: date, *, reverse: bool = False,
                stop: threading.Event | None = None) -> tuple[dict[int, int | None], int]:
        """Each of `tracked`'s 2GAD for the week of `monday` by repository id (None: no figure, e.g. not indexed
        yet), computing only what is not kept; and how many were computed. Looked up one repository at a time, so
        an open and the thread running side by side (from either end: `reverse`) share the work, not repeat it."""
        found: dict[int, int | None] = {}
        computed = 0
        for repo in (reversed(tracked) if reverse else tracked):
            if stop is not None and stop.is_set():
                break
            key = (repo.id, repo.generation, monday)
            with self._lock:
                weekly = self._kept.get(key)
            if weekly is None:
                weekly = self._compute(repo.name, key, today)
                computed += 1
                if weekly is not None:
                    with self._lock:
                        self._kept[key] = weekly
            found[repo.id] = weekly
        self._drop_older(tracked, monday)
        return found, computed

    def kept(self) -> dict[Key, int]:
        """A copy of what is kept: what the tests and benchmarks/bench_home.py look at."""
        with self._lock:
            return dict(self._kept)

    def _compute(self, name: str, key: Key, today: date) -> int | None:
        """A repository's 2GAD for the week of `key`, as `/gad NAME since:... until:...` tells it (None: none)."""
        monday = key[2]
        try:
            return self.engine.report(q.Query(repos=(name,), since=monday, until=monday + timedelta(days=6)),
                                      today).totals.two_gad
        except GadError:  # e.g. not indexed yet
            return None
        except Exception:  # one repository's damage must not cost the others theirs, in the thread or an open
            with self._lock:
                first = key not in self._failed
                self._failed.add(key)
            if first:
                log.warning("the Home tab shows no weekly figure of `%s`: computing it failed", name, exc_info=True)
            return None

    def _drop_older(self, tracked: Iterable, monday: date) -> None:
        """Drop what can never be asked again: other weeks, untracked repositories, generations older than the ones
        read in `tracked`. A newer generation stays: another reader may have read the index after a sync."""
        generation = {repo.id: repo.generation for repo in tracked}

        def current(key: Key) -> bool:
            repo_id, kept_generation, kept_monday = key
            return kept_monday == monday and repo_id in generation and kept_generation >= generation[repo_id]

        with self._lock:
            self._kept = {key: weekly for key, weekly in self._kept.items() if current(key)}
            self._failed = {key for key in self._failed if current(key)}

    # -- the thread of serve -----------------------------------------------------------------------
    def start(self) -> None:
        """Compute what is missing in a daemon thread, now and whenever woken (or REFRESH_SECONDS passed)."""
        self._thread = threading.Thread(target=self._run, name="home-weeks", daemon=True)
        self._thread.start()

    def wake(self, *_) -> None:
        """Something may have a new generation (a sync finished): compute its figure now, not at the next open."""
        self._wake.set()

    def stop(self) -> None:
        """Tell the thread to end and wait for it at most STOP_WAIT_SECONDS (it stops between two repositories)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_SECONDS)

    def warm(self) -> int:
        """Compute every tracked repository's figure of the last full week that is not kept; return how many."""
        today = self.today()
        self._idle.clear()
        try:
            # From the far end of the list: an open that stopped waiting computes from the near end, so the two meet
            # in the middle instead of computing the same repositories twice.
            _, computed = self.figures(self.engine.repos(), last_full_week(today), today, reverse=True,
                                       stop=self._stop)
        finally:
            self._idle.set()
        return computed

    def _run(self) -> None:
        first = True
        try:
            while not self._stop.is_set():
                self._wake.clear()
                started = time.monotonic()
                try:
                    computed = self.warm()
                except Exception:
                    if self._stop.is_set():  # the shutdown closed what it was reading: nothing to say
                        return
                    log.exception("computing the Home tab's weekly figures failed; the next open computes them")
                    computed = 0
                if computed and not self._stop.is_set():
                    (log.info if first else log.debug)(
                        "Home tab: weekly figures of %s computed in %.3f s, before anyone opened it",
                        plural(computed, "repository", "repositories"), time.monotonic() - started)
                first = False
                self._wake.wait(REFRESH_SECONDS)
        finally:
            self.engine.index.close()  # this thread's own connection
