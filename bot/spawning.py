"""gad-bot's child processes (fetches, index workers, report and sync workers): forked from a fork server.

    context = worker_context()            # multiprocessing's "forkserver" context, its preload set
    ...context.Process(...) or ProcessPoolExecutor(mp_context=context, ...)
    end_with(parent_pid)                  # first thing in a child: end when the process that asked ends

Why not `spawn`: a spawned child is a new interpreter that imports pygit2, numpy and the engine again, ~0.35-0.45 s
of CPU each (seconds on a loaded machine), paid by every report worker serve starts or restarts, every sync worker
and every index worker of each periodic sync. Why not `fork`: the serving process has threads, which fork must not
copy. The fork server is a clean interpreter started once per process (the first time one of these is needed),
single-threaded, with what the children need imported (`PRELOAD`); each child is a fork of it, ready in
milliseconds.

Two things differ from spawned children, and the code here is built for them:
- A child's parent is the fork server, not the process that asked for it, and the server lives as long as any of
  its children: PR_SET_PDEATHSIG cannot tell when the asker dies. `end_with` watches the asker itself (a pidfd).
- A child sees the environment the server was started with, not the asker's of the moment: everything a child
  needs (settings, tokens) is passed to it, never read from the environment afterwards.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import threading
import time

# What every gad-bot child needs, imported once in the fork server: no main module in any child (forkserved), the
# fetch (pygit2), the engine (numpy, SQLite), and the report and sync workers' loops (0.31 s of CPU in all). By
# name: this floor imports none of them. Neither Slack nor the CLI is here (tests/test_startup.py).
PRELOAD = ["bot.forkserved", "bot.store.mirrors.fetchchild", "bot.engine.engine", "bot.service.workers",
           "bot.service.syncs"]


def worker_context():
    """multiprocessing's fork server context, preloading `PRELOAD` when this process's fork server starts."""
    # numpy loads in the server: one OpenBLAS thread (bot/faces/cli.py says why), and a single-threaded server to
    # fork from, whatever imported this
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    _ask_the_server_this_was_forked_from()
    return context


def _ask_the_server_this_was_forked_from() -> None:
    """In a child of a fork server (a sync worker, whose fetches are children too): ask that same server for
    children, rather than start a second one in every such child (an interpreter with numpy and pygit2 loaded:
    ~0.4 s of CPU and tens of MB, once per sync worker of serve).

    The child holds what a client needs: the server's address and a share of its "alive" pipe (which keeps the
    server up while the child lives), both handed over by multiprocessing itself. Only its check that the server is
    running stands in the way: it asks whether the server is its own child, which it never is here, and would then
    start a new one. So that check is skipped in such a child. Should the server refuse the child (a Python whose
    fork server wants credentials the child does not hold), the child starts a server of its own after all."""
    from multiprocessing import forkserver, resource_tracker

    server = getattr(forkserver, "_forkserver", None)
    connect = getattr(forkserver, "connect_to_new_process", None)
    if server is None or connect is None or getattr(connect, "gad_bot", False):  # another shape, or done already
        return
    inherited = (getattr(server, "_forkserver_pid", 0) is None and getattr(server, "_forkserver_address", None)
                 and getattr(server, "_forkserver_alive_fd", None) is not None)
    if not inherited:  # this process started the server, or none runs yet: multiprocessing's own way
        return
    server.ensure_running = resource_tracker.ensure_running  # the server runs: only the tracker is checked
    falling_back = threading.Lock()

    def connect_to_the_inherited_server(fds):
        try:
            return connect(fds)
        except Exception:
            with falling_back:  # refused: this process starts its own server, as multiprocessing would have it
                if "ensure_running" in vars(server):
                    del server.ensure_running
                    server._forkserver_address = server._forkserver_alive_fd = None
            return connect(fds)

    connect_to_the_inherited_server.gad_bot = True
    forkserver.connect_to_new_process = connect_to_the_inherited_server


def start_server(*also: str) -> None:
    """Start this process's fork server now, without waiting for it: its imports (~0.3 s of CPU) then run beside
    the caller's own (serve's Slack and HTTP libraries) instead of before its first worker. `also`: modules to load
    in it besides PRELOAD (serve: scipy's graph code, which each report worker would import on its own)."""
    from multiprocessing import forkserver

    PRELOAD.extend(name for name in also if name not in PRELOAD)
    worker_context()
    forkserver.ensure_running()


def remove_server_files() -> None:
    """Remove this process's multiprocessing directory (the fork server's socket lives in it), as multiprocessing's
    exit handler would: a process that ends with os._exit (serve, so that no stray thread holds its exit) skips
    that handler, and left one /tmp/pymp-* directory behind at every stop. Its children and server are gone or
    going by then; a socket already listening does not need its file."""
    import shutil
    from multiprocessing import process

    where = process.current_process()._config.get("tempdir")
    if where:
        shutil.rmtree(where, ignore_errors=True)


def end_with(pid: int) -> None:
    """End this child (exit 4) the moment process `pid` ends, kill -9 included: a child of the fork server must
    not outlive the process that asked for it. A pidfd becomes readable when its process exits."""
    try:
        watched = os.pidfd_open(pid)
    except ProcessLookupError:  # it ended before this child started
        os._exit(4)
    except (AttributeError, OSError):  # no pidfd (Linux before 5.3): look once a second
        watched = None

    def watch() -> None:
        if watched is not None:
            select.select([watched], [], [])
        else:
            while _alive(pid):
                time.sleep(1.0)
        os._exit(4)

    threading.Thread(target=watch, name="end-with-asker", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's
        pass
    return True
