"""The sync queue's typed commands (bot/service/syncs.py): their progress reaches the listener only before the answer."""

from __future__ import annotations

import json
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

    def _finished(self, *args):
        self.finishing.set()
        super()._finished(*args)


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
        executor = queue._slots[0]
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
        first_workers = list(queue._slots[0]._processes.values())
        queue.start()
    finally:
        queue.shutdown()
    assert [d.result for d in done] == ["synced"]
    assert first_workers and not any(worker.is_alive() for worker in first_workers)


def stuck_or_held(job: SyncJob) -> SyncDone:
    """A sync worker's job (pickled by name): `job.name` is a directory; it says it began (a file there), then
    "stuck" runs for ever and "held" waits for the test's word (a FIFO there)."""
    import pathlib
    import time as clock

    where = pathlib.Path(job.name)
    if where.name.startswith("warm"):  # a worker's first job: it is up (spawned, its Engine open)
        return SyncDone(job)
    (where / "began").touch()
    if where.name == "stuck":
        clock.sleep(3600)
    with open(where / "fifo", "rb") as fifo:
        return SyncDone(job, result=fifo.read())


def test_a_job_past_its_time_is_stopped_alone_and_its_worker_started_again(tmp_path):
    """Issue 31: nothing bounded a sync worker's job (a listing waiting out rate limits held one for days). Past
    GAD_SYNC_TIMEOUT_SECONDS the job's worker is killed and started again, the job says why in one sentence, and
    a job running beside it in the other worker goes on to its own answer (each worker is a pool of its own:
    killing a process of a shared pool fails every job in it)."""
    import time

    from bot.config import Settings

    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    stuck, held = tmp_path / "stuck", tmp_path / "held"
    for where in (stuck, held):
        where.mkdir()
        os.mkfifo(where / "fifo")
    done: list[SyncDone] = []
    queue = SyncQueue(settings, workers=2, runner=stuck_or_held, on_done=done.append)
    queue.start()

    def until(what, seconds: float = STEP_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while not what():
            assert time.monotonic() < deadline, "it never happened"
            time.sleep(0.02)

    try:
        # both workers up first: a job's time runs from its submission, a worker still starting included (seconds
        # on a loaded machine, nothing beside a bound of hours, all of this test's 3 s)
        queue.request_repo(str(tmp_path / "warm-1"))
        queue.request_repo(str(tmp_path / "warm-2"))
        until(lambda: len(done) == 2)
        assert [d.error for d in done] == [None, None]
        done.clear()
        # the bound of GAD_SYNC_TIMEOUT_SECONDS=3 from here on (warming under the default: a worker starting on a
        # loaded machine took longer than 3 s, and a job's time runs from its submission)
        queue.timeout = 3.0
        began = time.monotonic()
        queue.request_repo(str(stuck))
        until(lambda: (stuck / "began").exists())
        # the held job starts well inside the stuck one's time, so it is running when the stuck one is stopped
        until(lambda: time.monotonic() - began > 1.5)
        queue.request_repo(str(held))
        until(lambda: (held / "began").exists())
        until(lambda: any(d.job.name == str(stuck) for d in done), seconds=30)
        (stopped,) = [d for d in done if d.job.name == str(stuck)]
        assert 3 <= time.monotonic() - began < 30
        assert stopped.error == (f"The sync of {stuck} ran for more than 3 s (GAD_SYNC_TIMEOUT_SECONDS), so gad-bot "
                                 "stopped it to keep its sync workers free; what was finished is kept, and the next "
                                 "sync goes on from there.")
        with open(held / "fifo", "wb") as fifo:  # the job beside it was not touched: it answers
            fifo.write(b"still here")
        until(lambda: any(d.job.name == str(held) for d in done))
        assert [d.result for d in done if d.job.name == str(held)] == [b"still here"]
        (held / "began").unlink()
        queue.request_repo(str(held))  # the stopped worker's slot takes jobs again
        until(lambda: (held / "began").exists())
        with open(held / "fifo", "wb") as fifo:
            fifo.write(b"again")
        until(lambda: len(done) == 3)
        assert done[-1].result == b"again" and done[-1].error is None
    finally:
        queue.shutdown()


def test_a_sync_typed_in_slack_past_its_time_is_stopped_and_the_person_told(tmp_path):
    """The real path: an admin's `/gad sync web` through `serve`, whose git server reads the fetch and never
    answers (its fetch may take GAD_FETCH_TIMEOUT_SECONDS, 600 s here); at GAD_SYNC_TIMEOUT_SECONDS (3 s) the sync
    worker is stopped, the person reads why in one sentence at the response_url, and the next `/gad sync web`
    (the server answering again) syncs the new commit: its active days from git."""
    import signal
    import time

    from tests.faults import GitHttpServer, Serve, figures, track_here
    from tests.gitbuild import RepoBuilder, oracle_gad
    from tests.slackstub import SlackStub

    upstream = RepoBuilder(tmp_path / "srv" / "web.git", bare=True)
    upstream.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv") as git, SlackStub() as stub:
        track_here(git.url("web.git"), "web", data)
        upstream.commit(name="Bob", email="bob@example.com", date="2024-01-03")
        git.mode = "stall"
        with Serve(data, stub, logs=tmp_path / "logs", GAD_ADMINS="U123", GAD_SYNC_TIMEOUT_SECONDS="3",
                   GAD_FETCH_TIMEOUT_SECONDS="600") as serve:
            started = time.monotonic()
            status, _, _ = serve.post(stub.slash_fields("sync web", response_name="stalled"))
            assert status == 200
            deadline = time.monotonic() + 60
            while not any("ran for more than" in json.dumps(r) for r in stub.responses("stalled")):
                assert time.monotonic() < deadline, stub.responses("stalled")
                time.sleep(0.1)
            took = time.monotonic() - started
            last = stub.responses("stalled")[-1]
            assert last["text"] == ("This command ran for more than 3 s (GAD_SYNC_TIMEOUT_SECONDS), so gad-bot stopped "
                                    "it to keep its sync workers free; what was finished is kept, and the next sync "
                                    "goes on from there.")
            assert 3 <= took < 30
            git.mode = "ok"
            status, _, _ = serve.post(stub.slash_fields("sync web", response_name="again"))
            deadline = time.monotonic() + 60
            while figures(data, "web", ("since:2000-01",))["since:2000-01"][0] != oracle_gad(upstream.path):
                assert time.monotonic() < deadline, (stub.responses("again"), serve.stderr[-3000:])
                time.sleep(0.2)
            assert oracle_gad(upstream.path) == 2  # ann's day and bob's
            assert serve.stop(signal.SIGTERM) == 0
        assert "Traceback" not in serve.stderr
        assert "ran past 3 s (GAD_SYNC_TIMEOUT_SECONDS); stopping its worker" in serve.stderr
