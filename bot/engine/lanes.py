"""Syncing many repositories at once, as serve's periodic sync and the CLI's `sync` both do.

    results = sync_in_lanes(engine, repos)   # [SyncResult], one per repository, in the order given

Each lane (GAD_FORGE_FETCHES of them) fetches its share one repository after another, each fetch a child forked
from the fork server (bot/store/mirrors/fetchchild.py), holding that repository's lock file only while its fetch runs: the
open files stay bounded by the lanes, never by the number of repositories (issue 32: 8,000 lock files opened at
once ran out at systemd's 1,024). A fetch that brought nothing is recorded synced without indexing; what changed
is indexed in a pool of worker processes (one per CPU), never in the calling (serving) process.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from datetime import timedelta

from ..errors import GadError
from ..store.index import utcnow
from .tracking import SyncResult

log = logging.getLogger(__name__)

PROGRESS_SECONDS = 15.0  # how often a long sync says where it stands (the log; the CLI's lines off a terminal)

# (repositories finished, of how many, failed so far, seconds since the start)
LaneProgress = Callable[[int, int, int, float], None]


def sync_in_lanes(engine, repos: list, *, label: str = "repositories", rewrite: Callable[[str], str] | None = None,
                  progress: LaneProgress | None = None) -> list[SyncResult]:
    """Fetch (in lanes) and index (in worker processes) each of `repos` (RepoRows); one failure never stops the
    others. A repository another process is syncing right now is skipped (it is being synced). Repositories
    registered in place, or whose mirror is missing, are synced whole in the workers (no fetch, or a clone)."""
    index, now, started = engine.index, utcnow(), time.monotonic()
    said = [started]
    results: dict[int, SyncResult] = {}
    from ..store.sources import is_local_path

    # a network fetch in the lanes; a local source (copied, not fetched: Mirror.fetch), one registered in place or
    # one whose mirror is missing (cloned again) is synced whole in a worker, as `sync NAME` does
    lanes_fetch = [not r.in_place and r.mirror_path.exists() and not is_local_path(r.source) for r in repos]
    to_fetch = [r for r, fetch in zip(repos, lanes_fetch) if fetch]
    to_index: list[tuple[int, bool]] = [(r.id, True) for r, fetch in zip(repos, lanes_fetch) if not fetch]
    by_id = {r.id: r for r in repos}

    done = [0]  # repositories fetched (or failed, or skipped), then those indexed too

    def tell() -> None:
        done[0] += 1
        if time.monotonic() - said[0] < PROGRESS_SECONDS:
            return
        said[0] = time.monotonic()
        failed = sum(1 for r in list(results.values()) if r.error)
        log.info("syncing %s: %d of %d repositories fetched or indexed, %d failed, %.0f s", label,
                 min(done[0], len(repos)), len(repos), failed, said[0] - started)
        if progress is not None:
            progress(min(done[0], len(repos)), len(repos), failed, said[0] - started)

    fetched: list[int] = []
    if to_fetch:
        from ..store.mirrors.fetchchild import fetch_many
        from ..store.mirrors.mirror import Mirror

        def lane(share: list) -> None:
            for repo in share:
                handle = try_lock(engine.settings.data_dir, repo.id)
                if handle is None:  # another process syncs it right now
                    results[repo.id] = SyncResult(repo.name, 0, 0, repo.commits, unchanged=True)
                    continue
                outcome: list[str | None] = []
                try:
                    Mirror(repo.mirror_path).clear_stale_locks()  # what a killed fetch left: the lock is ours
                    fetch_many([repo.mirror_path], engine.store.limits, engine.policy if repo.guarded else None,
                               lambda _, error: outcome.append(error))
                except (GadError, OSError) as error:  # this mirror's own trouble: the lane goes on with the rest
                    outcome.append(str(error) or "The mirror could not be opened.")
                finally:
                    handle.close()  # unlocks: the index worker takes the lock again
                error = outcome[0] if outcome else "The fetch stopped unexpectedly."
                if error is None:
                    fetched.append(repo.id)
                else:
                    error = rewrite(error) if rewrite else error
                    delay = timedelta(minutes=min(engine.settings.sync_interval_minutes * 2 ** min(repo.failures + 1, 10),
                                                  24 * 60))
                    index.record_attempt(repo.id, error, now, now + delay)
                    results[repo.id] = SyncResult(repo.name, 0, 0, repo.commits, error=error)
                tell()

        lanes = max(1, min(engine.settings.forge_fetches, len(to_fetch)))
        with ThreadPoolExecutor(lanes, thread_name_prefix="sync-fetch") as pool:
            for future in [pool.submit(lane, to_fetch[number::lanes]) for number in range(lanes)]:
                future.result()  # a lane's own fault (not a fetch's: those are results) is not swallowed
        # A fetch that brought nothing leaves nothing to index: no worker processes to start (seconds each on a
        # loaded machine, most of a cycle in which nothing changed), no Engine to open for it.
        for repo_id in fetched:
            repo = index.repo_by_id(repo_id)
            try:
                if repo is not None and engine.indexer.is_current(repo, Mirror(repo.mirror_path)):
                    index.record_attempt(repo_id, None, now)  # synced, as sync_one would have said
                    results[repo_id] = SyncResult(repo.name, 0, 0, repo.commits, unchanged=True)
                    continue
            except GadError:  # a mirror that cannot be read: the index worker says so
                pass
            to_index.append((repo_id, False))
    done[0] = len(repos) - len(to_index)  # what is left is what the workers index
    with IndexPool(engine, index_workers(len(to_index))) as workers:
        for (repo_id, fetch), future in [(item, workers.submit(*item)) for item in to_index]:
            try:
                result = future.result()
            except Exception as error:  # a worker that died: the next sync goes on
                result = SyncResult(by_id[repo_id].name, 0, 0, by_id[repo_id].commits,
                                    error=f"indexing stopped ({type(error).__name__})")
            results[repo_id] = result
            tell()
    return [results[r.id] for r in repos if r.id in results]


def try_lock(data_dir, repo_id: int):
    """The repository's writer lock (the file Tracking._repo_lock takes, bot/engine/tracking.py), if no one holds it; else None."""
    import fcntl

    lock_dir = data_dir / "locks"
    lock_dir.mkdir(exist_ok=True, mode=0o700)
    handle = open(lock_dir / f"{repo_id}.lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def index_workers(count: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, count))


class IndexPool:
    """Indexing in worker processes (one per CPU), never in the caller: a serving process stays responsive."""

    def __init__(self, engine, workers: int):
        self.engine, self.workers = engine, workers
        self._executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> "IndexPool":
        return self

    def start(self) -> None:
        """Start every worker now (its Engine opened, and the fork server started if it was not), while the
        listing's first clones run, rather than when the first clone is done."""
        if multiprocessing.current_process().daemon:
            return
        executor = self._pool()
        for _ in range(self.workers):
            executor.submit(_warm)

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            from ..spawning import worker_context

            context = worker_context()  # forked from gad-bot's fork server, the engine loaded: ready at once
            self._executor = ProcessPoolExecutor(max_workers=self.workers, mp_context=context,
                                                 initializer=_init_index_worker,
                                                 initargs=(type(self.engine), self.engine.settings, os.getpid()))
        return self._executor

    def submit(self, repo_id: int, fetch: bool = False) -> Future:
        """Index (fetch=True: sync whole, fetch included) one repository; the future's value is its SyncResult."""
        if multiprocessing.current_process().daemon:  # a daemonic worker may not have children: index here
            future: Future = Future()
            future.set_result(_sync(self.engine, repo_id, fetch))
            return future
        return self._pool().submit(_index_in_worker, repo_id, fetch)

    def __exit__(self, *exc) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)


_worker_engine = None


def _init_index_worker(engine_class, settings, asker: int) -> None:
    """End with the process that asked (kill -9 included), and open the Engine once."""
    global _worker_engine
    import signal

    from ..spawning import end_with

    end_with(asker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_engine = engine_class(settings)


def _warm() -> None:
    """A no-op job: it makes the pool start a worker (see IndexPool.start)."""


def _sync(engine, repo_id: int, fetch: bool) -> SyncResult:
    repo = engine.index.repo_by_id(repo_id)
    if repo is None:
        return SyncResult(f"#{repo_id}", 0, 0, 0, error="the repository was untracked while it was being indexed")
    return engine.sync_one(repo, fetch=fetch)


def _index_in_worker(repo_id: int, fetch: bool = False) -> SyncResult:
    return _sync(_worker_engine, repo_id, fetch)
