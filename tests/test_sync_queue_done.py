"""A sync job that is over before the queue has added its completion callback must not stop the queue.

`SyncQueue._submit` runs under the queue's lock; `Future.add_done_callback` calls the callback at once, in the
calling thread, when the future is done already, and the callback takes the same lock: a job that finished
between `submit` and `add_done_callback` (a quick one, the sweep of no leftovers, on a loaded machine: starting the
job's time-bound thread lets the worker run) left serve's sync queue locked for good. No sync ran again, and every
webhook's request waited on the lock. Found by test_webhooks' push test under serve on one CPU: serve's periodic
sync never got past handing over the sweep.

Made certain here: the pool's `submit` returns only once its job is done.
"""

from __future__ import annotations

import threading
import time

from bot.config import Settings
from bot.service import syncs
from bot.service.syncs import SyncDone, SyncQueue


def done_at_once(job):
    """A sync runner (module level: pickled by name into the worker)."""
    return SyncDone(job)


def test_a_job_done_before_its_callback_is_added_does_not_stop_the_queue(tmp_path, monkeypatch):
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})
    finished: list[str] = []
    queue = SyncQueue(settings, workers=1, runner=done_at_once, on_done=lambda done: finished.append(done.job.name))
    submit = syncs.ProcessPoolExecutor.submit

    def submit_and_wait(executor, fn, *args, **kwargs):
        future = submit(executor, fn, *args, **kwargs)
        future.exception(timeout=60)  # the job is over before the queue adds its callback
        return future

    monkeypatch.setattr(syncs.ProcessPoolExecutor, "submit", submit_and_wait)
    queue.start()
    try:
        asking = threading.Thread(target=lambda: [queue.request_repo(name, delay=0) for name in ("web", "api")],
                                  daemon=True)
        asking.start()
        asking.join(60)
        assert not asking.is_alive(), "the sync queue stopped: its lock is held for good"
        deadline = time.monotonic() + 60
        while len(finished) < 2:
            assert time.monotonic() < deadline, finished
            time.sleep(0.02)
        assert finished == ["web", "api"] and queue.pending() == 0
    finally:
        if not asking.is_alive():
            queue.shutdown()
