"""The sync queue's typed commands (bot/service/syncs.py): their progress reaches the listener only before the answer."""

from __future__ import annotations

import os
import threading

from bot.service import syncs
from bot.service.syncs import SyncDone, SyncJob, SyncQueue

# How long the listener, blocked inside a progress callback, waits to see the command answered under it. The
# queue under test never answers meanwhile, so a passing run costs this much; a queue that does answers within
# microseconds of starting to finish the job (the `finishing` event below), far inside it.
ANSWER_UNDER_PROGRESS_SECONDS = 1.0
STEP_SECONDS = 60  # a bound on each step that must happen (a spawned worker on a loaded machine)


def progress_then_wait(job: SyncJob) -> SyncDone:
    """A sync worker's command (the runner, pickled by name into the worker): one progress event, through the
    worker's own notifier, then return only once serve's listener is inside its callback (it writes to the FIFO
    named by the command), so the answer reaches serve while that callback still runs."""
    syncs._notifier(job.name)("halfway")
    with open(job.command, "rb") as fifo:  # blocks until the listener opens it to write
        fifo.read(1)
    return SyncDone(job, result="the answer")


class FinishObserved(SyncQueue):
    """A queue that says when a job's result has come back from the worker, before the queue acts on it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.finishing = threading.Event()

    def _finished(self, job, future, started):
        self.finishing.set()
        super()._finished(job, future, started)


def test_a_progress_callback_running_when_the_command_ends_finishes_before_the_answer(settings, tmp_path):
    """A progress update that lands after the answer would replace it in Slack: the queue lets a callback that is
    running when the worker's result arrives finish first, and only then resolves the command's future."""
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    order: list[str] = []
    listening = threading.Event()
    answered = threading.Event()
    queue = FinishObserved(settings, workers=1, runner=progress_then_wait)
    queue.start()

    def listener(event: object) -> None:
        listening.set()
        with open(fifo, "wb") as release:  # the worker may now return its result
            release.write(b"x")
        assert queue.finishing.wait(STEP_SECONDS), "the worker's result never came back"
        answered.wait(ANSWER_UNDER_PROGRESS_SECONDS)
        order.append(f"progress: {event}")

    try:
        future = queue.run_command(str(fifo), listener)
        future.add_done_callback(lambda f: (order.append(f"answer: {f.result().result}"), answered.set()))
        assert listening.wait(STEP_SECONDS), "the progress event never reached the listener"
        assert future.result(STEP_SECONDS).result == "the answer"
    finally:
        queue.shutdown()
    assert order == ["progress: halfway", "answer: the answer"]


def read_fifo(job: SyncJob) -> SyncDone:
    """A sync worker's job (pickled by name) that reads the FIFO its name gives until its writer closes it."""
    with open(job.name, "rb") as fifo:
        return SyncDone(job, result=fifo.read())


def test_a_job_stopped_by_shutdown_lets_the_pools_queues_go_without_a_garbage_collection(settings, tmp_path):
    """serve ends with os._exit, which no garbage collection precedes: a job that shutdown stops mid-way (serve's
    start-up sweep, at a SIGTERM) must leave nothing holding the pool's queues in a reference cycle, or their
    semaphores are reported leaked by the resource tracker. The job's error says shutdown stopped it."""
    import gc
    import time
    import weakref

    fifo = tmp_path / "held"
    os.mkfifo(fifo)
    done: list[SyncDone] = []
    queue = SyncQueue(settings, workers=1, runner=read_fifo, on_done=done.append)
    queue.start()
    gc.disable()
    writer = None
    try:
        queue.request_repo(str(fifo))
        deadline = time.monotonic() + STEP_SECONDS
        while writer is None:  # the worker is reading it once a non-blocking open to write succeeds
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                assert time.monotonic() < deadline, "the worker never opened the FIFO"
                time.sleep(0.02)
        executor = queue._executor
        pool_queues = [weakref.ref(executor._call_queue), weakref.ref(executor._result_queue)]
        del executor
        queue.shutdown()
        assert [ref() for ref in pool_queues] == [None, None], "the pool's queues outlive its shutdown until a gc"
    finally:
        gc.enable()
        if writer is not None:
            os.close(writer)
    assert [d.error for d in done] == ["stopped by serve's shutdown"]


def answer_at_once(job: SyncJob) -> SyncDone:
    """A sync worker's job (pickled by name) that is done at once."""
    return SyncDone(job, result="synced")


def test_a_sync_asked_before_serve_starts_its_pool_leaves_no_worker_behind(settings):
    """In Socket Mode serve connects before it starts its pools, so a `/gad sync` may come first and its job starts
    a pool of its own. start() must take that pool, not make a second one beside it: shutdown stops only the
    pool it holds, and the first one's workers would run on after serve (and its queues' semaphores leak)."""
    import time

    done: list[SyncDone] = []
    queue = SyncQueue(settings, workers=1, runner=answer_at_once, on_done=done.append)
    try:
        queue.request_repo("web")
        deadline = time.monotonic() + STEP_SECONDS
        while not done:
            assert time.monotonic() < deadline, "the sync asked before start never ran"
            time.sleep(0.02)
        first_workers = list(queue._executor._processes.values())
        queue.start()
    finally:
        queue.shutdown()
    assert [d.result for d in done] == ["synced"]
    assert first_workers and not any(worker.is_alive() for worker in first_workers)
