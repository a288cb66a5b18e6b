"""Readers and writers together: reports in a loop, in threads, while another process writes the index."""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import date


from tests.faults import figures, index_problems, run_cli, start_cli, track_here

HOLD = 6.0
QUERIES = (["big"], ["big", "by:person"], ["big", "refs:all", "by:month"], ["big", "branch:HEAD", "since:2018-06"])


def test_reports_in_threads_never_fail_while_a_sync_process_writes(big, big_clean, sync_case):
    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.engine.query import parse_query

    data = sync_case.restore()
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))  # one engine, shared, as serve does
    old, new = sync_case.old_figures["(default)"][:3], big_clean["(default)"][:3]
    errors: list[BaseException] = []
    seen: list[tuple[int, int, int]] = []
    count = [0]
    stop = threading.Event()

    def reader(n: int) -> None:
        i = n
        while not stop.is_set():
            query = parse_query(QUERIES[i % len(QUERIES)], date(2026, 12, 3))
            i += 1
            try:
                report = engine.report(query, date(2026, 12, 3))
            except BaseException as error:  # noqa: BLE001 - anything at all is a failure here
                errors.append(error)
                return
            count[0] += 1
            time.sleep(0.002)  # leave the sync process a core (CI has two)
            if len(query.repos) == 1 and query.by is None and query.scope.kind == "default" and query.since is None:
                seen.append((report.totals.person_days, report.totals.developers, report.totals.commits))

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    try:
        sync = start_cli("sync", "big", data=data)
        out, err = sync.communicate(timeout=120)
        time.sleep(0.2)  # a few more reports after the new generation
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        engine.index.close()
    assert sync.returncode == 0, out + err
    assert errors == [], f"{len(errors)} reader errors, first: {errors[0]!r}"
    assert count[0] > 20
    assert set(seen) <= {old, new}, "a reader saw a half-written index"
    assert new in seen
    assert index_problems(data) == []
    assert figures(data, "big") == big_clean
    print(f"\nreaders: {count[0]} reports in 3 threads during the sync; totals seen: {sorted(set(seen))}")


def test_a_new_reader_process_is_not_held_up_by_a_long_write_transaction(small, tmp_path):
    """`gad-bot repos` / `report` only read, yet they must not wait for (or fail on) a sync's transaction.

    A long sync transaction (the first index of a big repository lasts minutes) is stood in for by a
    write transaction this test holds open for up to HOLD seconds.
    """
    data = tmp_path / "data"
    track_here(str(small.path), "small", data)
    writer = sqlite3.connect(data / "index.sqlite", isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE repos SET failures = failures")
    done = threading.Lock()

    def commit() -> None:
        if done.acquire(blocking=False):
            writer.execute("COMMIT")

    release = threading.Timer(HOLD, commit)  # a reader that waits for the writer comes back after HOLD
    release.start()
    took = {}
    try:
        for args in (("repos", "--json"), ("report", "small", "--json")):
            started = time.monotonic()
            result = run_cli(*args, data=data)
            took[args[0]] = time.monotonic() - started
            assert result.returncode == 0, result.stderr
    finally:
        release.cancel()
        release.join()
        commit()
        writer.close()
    print(f"\nduring a {HOLD:.0f} s write transaction: `gad-bot repos` answered after {took['repos']:.1f}s, "
          f"`gad-bot report` after {took['report']:.1f}s")
    assert sum(took.values()) < HOLD - 1, f"readers waited for a writer's transaction: {took}"
