"""kill -9 of `gad-bot track`, `gad-bot sync` and `gad-bot serve` (during a sync), at seeded moments.

The CLI processes are killed with their process group (what a container stop or systemd's default
KillMode=control-group does), so a fetch child dies with them; `kill -9 PID` of the process
alone is test_kill9_sync_leaves_no_fetch_running.

Each trial waits for a phase (the clone's staging directory, the repository's row, the fetched
refs) and then a delay drawn from a seeded RNG, and kills the process with SIGKILL. Afterwards:
SQLite's integrity_check is ok, no half-written rows exist (tests.faults.index_problems), the
figures are either the previous state's or a clean index's, leftovers are swept, and the next
`gad-bot sync` (or `track`, when the kill came before the repository had a row) reaches exactly
the figures of a clean index of the same repository.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pygit2
import pytest

from tests.faults import Serve, figures, index_problems, kill9, leftovers, pending_paths, run_cli, start_cli

SEED = 20261203


def _row(data: Path, name: str) -> tuple[int, int] | None:
    """(generation, commits) of a repository, read the way any other reader would (WAL, no lock)."""
    path = data / "index.sqlite"
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT generation, commits FROM repos WHERE name = ?", (name,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def _staging(data: Path) -> bool:
    mirrors = data / "mirrors"
    return mirrors.exists() and any(p.name.startswith(".incoming-") for p in mirrors.iterdir())


def _mirror_tip(data: Path, ref: str = "refs/heads/main") -> str | None:
    mirrors = data / "mirrors"
    for path in mirrors.glob("*.git") if mirrors.exists() else ():
        try:
            return str(pygit2.Repository(str(path)).references[ref].target)
        except (KeyError, pygit2.GitError, ValueError):
            return None
    return None


def _wait(proc: subprocess.Popen, condition, timeout: float = 60.0) -> bool:
    """Poll `condition` until true (True) or the process ended first (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    raise TimeoutError("the phase never came")


def _figures_or_none(data: Path, name: str):
    from bot.errors import GadError

    try:
        return figures(data, name)
    except GadError:  # not tracked, or tracked but never indexed: nothing counts yet
        return None


def _sweep(data: Path, age_temp_files: bool) -> list[Path]:
    """What `gad-bot serve` does at start (MirrorStore.sweep); optionally after ageing temp files past its cutoff."""
    from bot.store.mirrors.clones import MirrorStore
    from bot.store.mirrors.remote import FetchLimits

    if age_temp_files:
        old = time.time() - 2 * 3600
        for path in leftovers(data):
            try:
                os.utime(path, (old, old))
            except FileNotFoundError:
                pass
    return MirrorStore(data / "mirrors", FetchLimits({})).sweep()


def test_kill9_track_at_seeded_moments(big, big_clean, daemon, tmp_path):
    rng = random.Random(SEED)
    data = tmp_path / "data"
    source = daemon.url("big.git")  # a real clone: git's upload-pack sends a pack, libgit2 indexes it
    # clone: the staging directory exists; index: the row exists (the commits' transaction runs);
    # paths: the commits are committed (generation 1) and the changed-paths batches run.
    # (On two cores: the clone takes ~0.4 s, the commits ~0.5 s, the changed paths ~0.9 s.)
    trials = [("clone", rng.uniform(0.0, 0.35)), ("index", rng.uniform(0.0, 0.45)), ("paths", rng.uniform(0.0, 0.8))]
    seen = []
    for phase, delay in trials:
        proc = start_cli("track", source, "--name", "big", data=data)
        started = time.monotonic()
        condition = {"clone": lambda: _staging(data), "index": lambda: _row(data, "big") is not None,
                     "paths": lambda: (_row(data, "big") or (0,))[0] > 0}[phase]
        reached = _wait(proc, condition)
        time.sleep(delay)
        alive = proc.poll() is None
        _, err = kill9(proc)
        killed_at = time.monotonic() - started
        row = _row(data, "big")
        state = ("finished first" if not alive else "staging" if _staging(data) and row is None
                 else "no row" if row is None else f"row, generation {row[0]}")
        seen.append((phase, round(delay, 2), round(killed_at, 2), reached, state))
        assert "Traceback" not in err

        # The index is whole, and what it says is either nothing yet or the clean figures.
        if (data / "index.sqlite").exists():
            assert index_problems(data) == []
        now = _figures_or_none(data, "big")
        assert now is None or now == big_clean, f"half-written figures after a kill at {phase}+{delay:.2f}s"

        # serve's start-up sweep leaves a fresh staging directory alone (a clone may be running in
        # another process) and removes it once it is older than the sweep's one-hour cutoff.
        had_staging = _staging(data)
        _sweep(data, age_temp_files=False)
        assert _staging(data) == had_staging
        swept = _sweep(data, age_temp_files=True)
        assert not _staging(data)
        assert had_staging == any(p.name.startswith(".incoming-") for p in swept)

        # The next command finishes the job: sync when the row exists, else track again.
        again = run_cli("sync", "big", data=data) if row is not None else \
            run_cli("track", source, "--name", "big", data=data)
        assert again.returncode == 0, (phase, state, again.stdout, again.stderr)
        assert index_problems(data) == []
        assert figures(data, "big") == big_clean
        assert pending_paths(data) == 0
        assert leftovers(data) == []
        shutil.rmtree(data)  # the next trial starts from nothing again
    print("\nkill -9 track:", seen)
    assert any(s[4] != "finished first" for s in seen), "no trial killed a running track"


def test_kill9_sync_at_seeded_moments(big, big_clean, sync_case):
    rng = random.Random(SEED + 1)
    new_tip = big.tips["refs/heads/main"]
    # fetch: a temporary pack is being written; index: the mirror has the new refs (the commits'
    # transaction runs); paths: the new generation is committed (changed-paths batches run).
    trials = [("fetch", rng.uniform(0.0, 0.15)), ("index", rng.uniform(0.0, 0.4)), ("paths", rng.uniform(0.0, 0.6))]
    seen = []
    for phase, delay in trials:
        data = sync_case.restore()
        before = _row(data, "big")
        proc = start_cli("sync", "big", data=data)
        started = time.monotonic()
        condition = {"fetch": lambda: bool(leftovers(data)) or _mirror_tip(data) == new_tip,
                     "index": lambda: _mirror_tip(data) == new_tip,
                     "paths": lambda: (_row(data, "big") or (0,))[0] > before[0]}[phase]
        reached = _wait(proc, condition)
        time.sleep(delay)
        alive = proc.poll() is None
        _, err = kill9(proc)
        killed_at = time.monotonic() - started
        row = _row(data, "big")
        fetched = _mirror_tip(data) == new_tip
        temp = [p.name for p in leftovers(data)]
        state = ("finished first" if not alive else "commits indexed" if row[0] > before[0]
                 else "fetched, not indexed" if fetched else "fetching")
        seen.append((phase, round(delay, 2), round(killed_at, 2), reached, state, len(temp)))
        assert "Traceback" not in err

        assert index_problems(data) == []
        now = figures(data, "big")
        assert now in (sync_case.old_figures, big_clean), f"half-written figures after a kill at {phase}+{delay:.2f}s"
        if row[0] == before[0]:
            assert now == sync_case.old_figures

        # A killed fetch's temporary pack is kept for an hour (a running fetch may own it), then swept.
        _sweep(data, age_temp_files=True)
        assert leftovers(data) == []

        again = run_cli("sync", "big", data=data)
        assert again.returncode == 0, (phase, state, again.stdout, again.stderr)
        assert index_problems(data) == []
        assert figures(data, "big") == big_clean
        assert pending_paths(data) == 0
    print("\nkill -9 sync:", seen)


def test_kill9_serve_during_a_sync_from_slack(big, big_clean, sync_case, tmp_path):
    """`/gad sync big` from an admin makes serve sync in its worker pool; serve is killed mid-way."""
    from tests.slackstub import SlackStub

    rng = random.Random(SEED + 2)
    data = sync_case.restore()
    before = _row(data, "big")
    new_tip = big.tips["refs/heads/main"]
    delay = rng.uniform(0.05, 0.6)
    with SlackStub() as stub:
        with Serve(data, stub, GAD_ADMINS="U123", logs=tmp_path / "serve1") as serve:
            status, _, ack = serve.post(stub.slash_fields("sync big", response_name="sync"))
            assert status == 200 and ack < 3
            deadline = time.monotonic() + 60
            while _mirror_tip(data) != new_tip and time.monotonic() < deadline:  # fetched: indexing now
                time.sleep(0.01)
            time.sleep(delay)
            serve.send(9)
            serve.proc.wait(timeout=10)
            assert "Traceback" not in serve.stderr
        row = _row(data, "big")
        assert index_problems(data) == []
        assert figures(data, "big") in (sync_case.old_figures, big_clean)
        state = "indexed" if row[0] > before[0] else "not indexed"

        # serve starts again after a kill -9 (sweeping what it can), answers, and stops cleanly.
        with Serve(data, stub, logs=tmp_path / "serve2") as serve:
            status, _, _ = serve.post(stub.slash_fields("big", response_name="after"))
            assert status == 200
            assert "2GAD" in str(stub.wait_for_response("after", timeout=15))
            assert serve.stop() == 0
    again = run_cli("sync", "big", data=data)
    assert again.returncode == 0, again.stderr
    assert index_problems(data) == []
    assert figures(data, "big") == big_clean
    assert pending_paths(data) == 0
    print(f"\nkill -9 serve {delay:.2f}s after `/gad sync`: {state}")


def test_stale_ref_lock_left_by_a_killed_fetch_is_cleared(small, tmp_path):
    """A kill -9 between libgit2's lock and rename leaves refs/heads/main.lock: the next sync must not trip on it."""
    from bot.config import Settings
    from bot.engine.engine import Engine

    data = tmp_path / "data"
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    engine.track(str(small.path), "small")
    lock = engine.repo("small").mirror_path / "refs" / "heads" / "main.lock"
    lock.write_text("")  # what a kill -9 between libgit2's lock and rename leaves
    old = time.time() - 2 * 3600
    os.utime(lock, (old, old))
    small.commit(email="late@example.com", date="2024-06-01")
    result = engine.sync(["small"])[0]
    engine.index.close()
    assert result.error is None, result.error


def _processes_with_data_dir(data: Path) -> list[tuple[int, str]]:
    """Live processes whose environment names this data directory (gad-bot and any child it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"GAD_DATA_DIR={data}".encode() in environ and state != "Z":
            found.append((int(entry.name), cmdline.strip()))
    return found


def test_kill9_sync_leaves_no_fetch_running(small, tmp_path):
    from tests.faults import GitHttpServer

    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv") as server:
        assert run_cli("track", server.url("small.git"), "--name", "small", data=data).returncode == 0
        server.mode = "stall"  # the fetch hangs: whatever runs it stays visible
        proc = start_cli("sync", "small", data=data, GAD_FETCH_TIMEOUT_SECONDS="60")
        deadline = time.monotonic() + 20
        while len(_processes_with_data_dir(data)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the sync process and its fetch
        kill9(proc, group=False)  # `kill -9 PID`: the process alone
        # A fetch child still starting (importing pygit2 under load) notices its parent is gone only
        # once it runs; an orphan would hang on the stalled server for the whole 60 s timeout.
        gone_by = time.monotonic() + 15
        while (left := _processes_with_data_dir(data)) and time.monotonic() < gone_by:
            time.sleep(0.1)
        for pid, _ in left:  # the test's own descendants: do not leave them behind
            os.kill(pid, 9)
    assert left == [], f"still running after kill -9 of `gad-bot sync`: {left}"
