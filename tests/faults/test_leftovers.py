"""Orphan mirrors and leftover temporary files (issue 21, part 3).

An orphan mirror is a directory under `mirrors/` that no repository row names: a kill -9 between the
clone and the insert, or an untrack interrupted after the row went. Killed fetches leave temporary
packs, lock files and `.keep` files of processes that are gone (kept packs are never repacked).
`gad-bot doctor` reports them with the command that cleans; `doctor --fix`, serve's sync workers right
after its start (serve answers meanwhile) and the periodic sync remove them; a mirror that a running track
is creating is never one of them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.faces.doctor import NEEDED_SCOPES
from bot.store.index import Index
from tests.faults import GitDaemon, Serve, run_cli, track_here
from tests.gitbuild import RepoBuilder, git_env
from tests.slackstub import SlackStub

HOUR_AND_A_HALF_AGO = time.time() - 5400


def aged(path: Path) -> Path:
    os.utime(path, (HOUR_AND_A_HALF_AGO, HOUR_AND_A_HALF_AGO))
    return path


def dead_pid() -> int:
    """A process id of this host that has just ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture
def served(tmp_path):
    """Two repositories tracked over git:// into `data`: (data, daemon, upstream of web)."""
    web = RepoBuilder(tmp_path / "srv" / "web.git", bare=True)
    web.commit(email="ann@example.com", date="2024-01-02")
    web.commit(email="bob@example.com", date="2024-01-03")
    api = RepoBuilder(tmp_path / "srv" / "api.git", bare=True)
    api.commit(email="cat@example.com", date="2024-01-04")
    data = tmp_path / "data"
    with GitDaemon(tmp_path / "srv") as daemon:
        for name in ("web", "api"):
            track_here(daemon.url(f"{name}.git"), name, data)
        yield data, daemon


def mirror_of(data: Path, name: str) -> Path:
    return Index(data / "index.sqlite").repo(name).mirror_path


def test_doctor_reports_leftovers_and_fix_removes_exactly_them(served, tmp_path):
    data, daemon = served
    web, api = mirror_of(data, "web"), mirror_of(data, "api")
    # an interrupted untrack: the row went, the mirror stayed
    Index(data / "index.sqlite").remove_repo(Index(data / "index.sqlite").repo("api").id)
    # a kill -9 between clone and insert: a whole mirror no row names
    stray = subprocess.run(["git", "clone", "--mirror", "-q", daemon.url("web.git"), str(data / "mirrors" / "stray.git")],
                           env=git_env(), capture_output=True)
    assert stray.returncode == 0, stray.stderr
    pack_dir = web / "objects" / "pack"
    (pack,) = pack_dir.glob("pack-*.pack")
    old_temp = pack_dir / "tmp_pack_a1b2c3"  # a fetch killed long ago
    old_temp.write_bytes(b"PACK half")
    aged(old_temp)
    fresh_temp = pack_dir / "tmp_pack_d4e5f6"  # a fetch running now in another process
    fresh_temp.write_bytes(b"PACK running")
    dead_keep = pack.with_suffix(".keep")
    dead_keep.write_text(f"fetch-pack {dead_pid()} on {socket.gethostname()}\n")
    own_keep = web / "objects" / "pack" / "pack-0000000000000000000000000000000000000000.keep"
    own_keep.write_text("kept by the operator\n")
    live_keep = web / "objects" / "pack" / "pack-1111111111111111111111111111111111111111.keep"
    live_keep.write_text(f"fetch-pack {os.getpid()} on {socket.gethostname()}\n")
    ref_lock = web / "refs" / "heads" / "main.lock"
    ref_lock.parent.mkdir(parents=True, exist_ok=True)
    ref_lock.write_text("0" * 40 + "\n")
    aged(ref_lock)
    head_lock = web / "HEAD.lock"  # a fetch updating HEAD right now
    head_lock.write_text("ref: refs/heads/main\n")

    with SlackStub(scopes=list(NEEDED_SCOPES)) as stub:
        env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": "x" * 32}
        checked = run_cli("doctor", data=data, **env)
        lines = [ln for ln in checked.stdout.splitlines() if " leftover(s) " in ln]
        assert len(lines) == 1, checked.stdout
        (line,) = lines
        assert line.startswith(f"[warn] 5 leftover(s) under {data / 'mirrors'} that nothing uses (")
        assert "-- `gad-bot doctor --fix` removes them" in line
        for name in (api.name, "stray.git", "tmp_pack_a1b2c3", dead_keep.name, "main.lock"):
            assert name in line, name
        assert checked.returncode == 0, checked.stdout  # disk taken, nothing broken: cron is not woken for it

        fixed = run_cli("doctor", "--fix", data=data, **env)
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        removed = fixed.stdout.split("\n")[1:6]
        assert fixed.stdout.startswith(f"removed 5 leftover(s) under {data / 'mirrors'}\n")
        assert sorted(r.strip() for r in removed) == sorted(
            str(p.relative_to(data / "mirrors")) for p in (api, data / "mirrors" / "stray.git", old_temp, dead_keep,
                                                         ref_lock))
        assert "[ok  ] no orphan mirror or leftover temporary file under the mirrors" in fixed.stdout

    assert not api.exists() and not (data / "mirrors" / "stray.git").exists()
    assert not old_temp.exists() and not dead_keep.exists() and not ref_lock.exists()
    for kept in (fresh_temp, own_keep, live_keep, head_lock, pack):
        assert kept.exists(), kept
    head_lock.unlink()
    fsck = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=web, env=git_env(), capture_output=True)
    assert fsck.returncode == 0, fsck.stderr
    report = json.loads(run_cli("report", "web", "--json", data=data).stdout)
    assert report["commits"] == 2 and report["active_days"] == 2, report  # ann and bob, a day each


def test_a_mirror_a_running_track_is_creating_is_never_swept(served, tmp_path, monkeypatch):
    """The race: a track has renamed its clone into place and not yet inserted the row, and a sweep
    runs (doctor --fix, serve's periodic sync). The sweep leaves it; once the row is in, it is not an orphan."""
    data, daemon = served
    RepoBuilder(tmp_path / "srv" / "docs.git", bare=True).commit(email="dan@example.com", date="2024-01-05")
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    created, go_on = threading.Event(), threading.Event()
    add_repo = engine.index.add_repo

    def add_repo_slowly(name, source, path, *args, **kwargs):
        created.set()  # the clone is renamed into place, the row is not written yet
        assert go_on.wait(60)
        return add_repo(name, source, path, *args, **kwargs)

    monkeypatch.setattr(engine.index, "add_repo", add_repo_slowly)
    outcome: list = []
    track = threading.Thread(target=lambda: outcome.append(engine.track(daemon.url("docs.git"), "docs")))
    track.start()
    try:
        assert created.wait(60)
        (new,) = [p for p in (data / "mirrors").iterdir() if p.name.startswith("docs")]
        # another process's sweep, as `gad-bot doctor --fix` while the track runs
        sweeper = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
        assert sweeper.mirror_leftovers() == [] and sweeper.sweep_mirrors() == []
        assert new.is_dir()
        stray = data / "mirrors" / "stray.git"
        stray.mkdir()
        assert sweeper.sweep_mirrors() == []  # an orphan waits for the next sweep while a track runs
    finally:
        go_on.set()
        track.join(120)
    assert outcome and outcome[0].error is None
    assert sweeper.sweep_mirrors() == [stray]  # alone now: the true orphan goes, the new mirror stays
    assert mirror_of(data, "docs") == new and new.is_dir()
    report = json.loads(run_cli("report", "docs", "--json", data=data).stdout)
    assert report["commits"] == 1 and report["active_days"] == 1, report


STEP_SECONDS = 60  # a bound on each step that must happen: serve's workers start on a loaded machine


def wait_until(condition, what: str) -> None:
    """Poll `condition` (the filesystem, a log) for at most STEP_SECONDS; fail naming `what` did not happen."""
    deadline = time.monotonic() + STEP_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {STEP_SECONDS} s"
        time.sleep(0.05)


def release_fifo(fifo: Path, text: str) -> None:
    """Write `text` into `fifo` once its reader has opened it (at most STEP_SECONDS from now)."""
    deadline = time.monotonic() + STEP_SECONDS
    while True:
        try:
            end = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:  # ENXIO: nobody reads it yet
            assert time.monotonic() < deadline, f"nothing opened {fifo} to read it within {STEP_SECONDS} s"
            time.sleep(0.05)
    try:
        os.write(end, text.encode())
    finally:
        os.close(end)


def readyz(serve: Serve) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(serve.url + "/readyz", timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_serve_answers_while_its_workers_sweep_right_after_start(served, tmp_path):
    """serve's start no longer waits for the sweep (it lists every mirror's objects: 1.5 s for 200 mirrors): a sync
    worker sweeps once serve has started. The sweep is held here by a `.keep` that is a FIFO nobody writes yet (the
    sweep reads every `.keep`): serve answers a report and /readyz meanwhile, with every leftover still there; once
    the `.keep` reads as one a dead fetch left, the orphan mirror, the old temporary pack and the `.keep` go, and
    doctor finds nothing left. A serve that swept before answering never got ready."""
    data, _ = served
    web, api = mirror_of(data, "web"), mirror_of(data, "api")
    Index(data / "index.sqlite").remove_repo(Index(data / "index.sqlite").repo("api").id)  # an interrupted untrack
    old_temp = web / "objects" / "pack" / "tmp_pack_a1b2c3"
    old_temp.write_bytes(b"PACK half")
    aged(old_temp)
    held_keep = web / "objects" / "pack" / "pack-2222222222222222222222222222222222222222.keep"
    os.mkfifo(held_keep)
    with SlackStub(scopes=list(NEEDED_SCOPES)) as stub:
        with Serve(data, stub, logs=tmp_path / "serve") as serve:  # ready: /healthz answers
            status, _, took = serve.post(stub.slash_fields("web since:2024-01", response_name="web"))
            assert status == 200 and took < 3, (status, took)
            answer = json.dumps(stub.wait_for_response("web", timeout=30))
            assert "2GAD 4 person-days" in answer, answer  # ann and bob, a day each: 2 person-days, 2GAD twice that
            wait_until(lambda: readyz(serve) == 200, "/readyz answered 200 while the sweep was held")
            assert api.is_dir() and old_temp.exists() and held_keep.exists()  # nothing swept yet

            release_fifo(held_keep, f"fetch-pack {dead_pid()} on {socket.gethostname()}\n")
            wait_until(lambda: not api.exists() and not old_temp.exists() and not held_keep.exists(),
                       "the orphan mirror, the old temporary pack and the dead fetch's .keep were swept")
            assert web.is_dir()
            env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url,
                   "SLACK_SIGNING_SECRET": "x" * 32}
            checked = run_cli("doctor", data=data, **env)
            assert "[ok  ] no orphan mirror or leftover temporary file under the mirrors" in checked.stdout, \
                checked.stdout
            assert serve.stop() == 0
        assert "Traceback" not in serve.stderr, serve.stderr


def test_serves_start_sweep_leaves_a_mirror_a_running_track_is_creating(served, tmp_path):
    """A track in another process has renamed its clone into place and not yet written its row when serve starts:
    serve's first sweep (in a sync worker, right after start) removes an old temporary pack and leaves that mirror,
    and the orphan a kill left beside it waits for a sweep that runs alone."""
    data, _ = served
    web = mirror_of(data, "web")
    old_temp = web / "objects" / "pack" / "tmp_pack_a1b2c3"
    old_temp.write_bytes(b"PACK half")
    aged(old_temp)
    tracking = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    with tracking.store.creating():  # the track, between its clone's rename and its row
        new = data / "mirrors" / "docs-1a2b3c4d.git"
        (new / "objects" / "pack").mkdir(parents=True)
        stray = data / "mirrors" / "stray.git"
        stray.mkdir()
        with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "serve") as serve:
            wait_until(lambda: "removed 1 leftover(s) under" in serve.stderr, "serve's workers logged their sweep")
            assert not old_temp.exists()
            assert new.is_dir() and stray.is_dir()
            assert serve.stop() == 0
        assert "Traceback" not in serve.stderr, serve.stderr


def hold_fifo(fifo: Path) -> int:
    """Open `fifo` to write once its reader has begun opening it (at most STEP_SECONDS from now), and write nothing:
    the reader is then in its read, which waits until the returned end is closed."""
    deadline = time.monotonic() + STEP_SECONDS
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody reads it yet
            assert time.monotonic() < deadline, f"nothing opened {fifo} to read it within {STEP_SECONDS} s"
            time.sleep(0.02)


def test_sigterm_while_serves_start_up_sweep_runs_exits_cleanly_and_the_next_start_sweeps(served, tmp_path):
    """A SIGTERM while serve's first sweep is still running in a sync worker (held reading a `.keep` that is a FIFO
    whose writer writes nothing): serve stops that worker and exits 0 with no traceback and no "leaked semaphore"
    line (the sync pool's queues let go before serve's os._exit), saying the sweep was stopped; the leftovers stay
    for the next start, whose sweep removes them."""
    import signal

    data, _ = served
    web = mirror_of(data, "web")
    old_temp = web / "objects" / "pack" / "tmp_pack_a1b2c3"
    old_temp.write_bytes(b"PACK half")
    aged(old_temp)
    held_keep = web / "objects" / "pack" / "pack-3333333333333333333333333333333333333333.keep"
    os.mkfifo(held_keep)
    with SlackStub() as stub:
        with Serve(data, stub, logs=tmp_path / "first") as serve:
            writer = hold_fifo(held_keep)  # the sweep is now reading it, in a sync worker
            try:
                serve.proc.send_signal(signal.SIGTERM)
                code = serve.proc.wait(timeout=STEP_SECONDS)
            finally:
                os.close(writer)
            assert serve.stop() == code == 0, serve.stderr
        assert "gad-bot stopped" in serve.stderr, serve.stderr
        assert "Traceback" not in serve.stderr and "leaked semaphore" not in serve.stderr, serve.stderr
        assert "sweep of the mirrors' leftovers was stopped by serve's shutdown" in serve.stderr, serve.stderr
        assert old_temp.exists()  # stopped before it removed anything

        held_keep.unlink()
        with Serve(data, stub, logs=tmp_path / "second") as serve:
            wait_until(lambda: not old_temp.exists(), "the next start swept the old temporary pack")
            assert serve.stop() == 0
        assert "Traceback" not in serve.stderr and "leaked semaphore" not in serve.stderr, serve.stderr


def test_the_periodic_sync_sweeps_orphans_in_a_serve_that_runs_for_months(served):
    from bot.digests.schedule import DigestScheduler

    data, _ = served
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    api = mirror_of(data, "api")
    engine.index.remove_repo(engine.repo("api").id)  # an untrack killed after its row went
    scheduler = DigestScheduler(engine.settings, engine, lambda: None, syncer=lambda names: len(names))
    scheduler.sync_all()
    assert not api.exists() and mirror_of(data, "web").is_dir()


def test_serve_has_a_sync_worker_sweep_not_its_own_threads(served, monkeypatch):
    """In serve the periodic sync hands the sweep to its sync queue: a worker process lists the mirrors
    (1.5 s for 200 mirrors with loose objects, benchmarks/bench_sweep.py), not a thread beside the acks."""
    from bot.digests.schedule import DigestScheduler
    from bot.service.syncs import SyncQueue

    data, _ = served
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    api = mirror_of(data, "api")
    engine.index.remove_repo(engine.repo("api").id)

    def not_here():
        raise AssertionError("swept in serve's own process")

    monkeypatch.setattr(engine, "sweep_mirrors", not_here)
    done = []
    queue = SyncQueue(engine.settings, workers=1, on_done=done.append)
    queue.start()
    try:
        scheduler = DigestScheduler(engine.settings, engine, lambda: None, syncer=queue.sync_due,
                                    sweeper=queue.sweep_due)
        scheduler.sync_all()
        deadline = time.monotonic() + 120
        while not any(d.job.kind == "sweep" for d in done) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        queue.shutdown()
    (swept,) = [d for d in done if d.job.kind == "sweep"]
    assert swept.error is None and swept.result == 1
    assert not api.exists() and mirror_of(data, "web").is_dir()


def test_a_damaged_index_makes_no_mirror_an_orphan(served, monkeypatch):
    """When the index cannot be read, the sweep (serve's start among others) removes temporary files only: every
    mirror would look like an orphan otherwise, and serve must still start to say the index is damaged."""
    import sqlite3

    data, _ = served
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    web = mirror_of(data, "web")
    stale = web / "objects" / "pack" / "tmp_pack_old"
    stale.write_bytes(b"PACK")
    aged(stale)

    def damaged():
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(engine.index, "repos", damaged)
    assert engine.mirror_leftovers() == [stale]
    assert engine.sweep_mirrors() == [stale]
    assert web.is_dir() and mirror_of(data, "api").is_dir()


def test_a_clone_in_progress_keeps_its_staging_directory_however_old(served):
    """A staging directory's own time says nothing while its clone runs (git writes below it) or waits its turn among
    an organization's clones: while any mirror is being created, no `.incoming-*` is a leftover, however old; once
    nothing is being created, an old one is (a kill -9 left it)."""
    data, _ = served
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    staging = data / "mirrors" / ".incoming-big-1a2b3c4d.git"
    (staging / "objects" / "pack").mkdir(parents=True)
    aged(staging)
    sweeper = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))  # another process: doctor --fix
    with engine.store.creating():  # a track or an organization's clones, in progress
        assert sweeper.mirror_leftovers() == [] and sweeper.sweep_mirrors() == []
        assert staging.is_dir()
    assert sweeper.sweep_mirrors() == [staging] and not staging.exists()
