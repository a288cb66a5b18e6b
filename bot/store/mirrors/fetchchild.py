"""A network fetch in a child process: forked from a fork server with pygit2 loaded, killed at its deadline, never
outliving the process that asked for it; one after another for many mirrors (`fetch_many`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pygit2

from ...errors import MirrorError
from ...spawning import end_with, worker_context
from ..sources import SourcePolicy
from .dirs import describe, open_repository
from .fetch import fetch_here
from .remote import FetchLimits, Progress, set_network_timeouts


def _child_request(limits: FetchLimits, guard: SourcePolicy | None, **what) -> dict:
    return {**what, "https_tokens": limits.https_tokens,
            "ssh_key": str(limits.ssh_key) if limits.ssh_key else None,
            "timeout": limits.timeout_seconds, "max_bytes": limits.max_bytes,
            # the policy's lists; the child resolves names with the system resolver
            "guard": None if guard is None else {"allowed": list(guard.allowed_hosts),
                                                 "denied": list(guard.denied_hosts), "ssh": guard.allow_ssh}}


def fetch_many(paths: list[Path], limits: FetchLimits, guard: SourcePolicy | None,
               done: Callable[[int, str | None], None]) -> None:
    """Fetch each mirror of `paths` with prune, as `Mirror.fetch` does, one after the other (the caller holds each
    repository's lock, or owns the new mirror, until `done` says it is finished). `done(i, error or None)` is called
    as each finishes; each fetch is its own child with the whole GAD_FETCH_TIMEOUT_SECONDS."""
    for number, path in enumerate(paths):
        try:
            fetch_in_child(path, limits, None, guard)
        except MirrorError as error:
            done(number, str(error).splitlines()[0] if str(error) else "The fetch failed.")
        else:
            done(number, None)


# -- the fetch child -------------------------------------------------------------------------------
# A network fetch runs in a child process: killed at its deadline (a trickling server or a looping
# libgit2 cannot hold a sync, or the repository's lock, forever), its memory its own. Starting a new
# interpreter for it (Python + pygit2: ~0.4 s of CPU) cost more than fetching a small repository, so
# the children are forked by gad-bot's fork server (bot/spawning.py), a clean interpreter started once per
# process with this module (and pygit2) imported, before libgit2 has any thread or open repository:
# each fork starts ready to fetch. Secrets travel pickled through the server's pipes, never on a
# command line.


def fetch_in_child(path: Path, limits: FetchLimits, progress: Progress | None, guard: SourcePolicy | None) -> None:
    """Run fetch.fetch_here in a child process; kill it when the deadline passes."""
    context = worker_context()
    request = _child_request(limits, guard, path=str(path), asker=os.getpid())
    ours, theirs = context.Pipe(duplex=False)  # the child's words: progress, then done or its error
    child = context.Process(target=_child_main, args=(theirs, request), name="gad-bot fetch", daemon=False)
    child.start()
    theirs.close()
    deadline = time.monotonic() + limits.timeout_seconds if limits.timeout_seconds else None
    outcome: list[str] = []
    fetched = False  # the child says so: its exit code is no witness (below)
    try:
        while True:
            if not ours.poll(None if deadline is None else max(0.0, deadline - time.monotonic())):
                child.kill()
                raise MirrorError(f"The fetch timed out: it took longer than GAD_FETCH_TIMEOUT_SECONDS "
                                  f"({limits.timeout_seconds} s) allows; try again later or raise the limit.")
            try:
                kind, *rest = ours.recv()
            except (EOFError, OSError):  # the child ended (its end of the pipe closed)
                break
            if kind == "P" and progress:
                progress(*rest)
            elif kind == "E":
                outcome.append(rest[0])
            elif kind == "D":
                fetched = True
        child.join(timeout=None if deadline is None else max(1.0, deadline - time.monotonic()))
        if child.exitcode is None:  # the pipe closed but the child lingers: the deadline holds for it too
            child.kill()
            raise MirrorError(f"The fetch timed out: it took longer than GAD_FETCH_TIMEOUT_SECONDS "
                              f"({limits.timeout_seconds} s) allows; try again later or raise the limit.")
    finally:
        ours.close()
        child.join()
        exitcode = child.exitcode
        child.close()
    if outcome:
        raise MirrorError(outcome[-1])
    # Only the child's own "done" counts: multiprocessing reads a forkserver child's exit code from a socket, and
    # Process.start in another lane's thread may read it first (its _cleanup polls every child): this thread then
    # sees 255 for a fetch that succeeded (1 in 300 clones of bench_forge.py).
    if not fetched:
        raise MirrorError(f"The fetch stopped unexpectedly (exit {exitcode}).")


def _child_main(channel, request: dict) -> None:
    """A fetch child: fetch the mirror of `request`; progress and the error, if any, go to `channel`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # libgit2's or Python's words never reach serve's log (they may name a source's URL)
    os.close(devnull)
    end_with(request["asker"])  # kill -9 of the sync that asked ends this fetch too (it holds no lock then)
    limits = FetchLimits(request["https_tokens"], Path(request["ssh_key"]) if request["ssh_key"] else None,
                         request["timeout"], request["max_bytes"])
    if limits.timeout_seconds:
        set_network_timeouts(limits.timeout_seconds)

    def progress(phase: str, done: int, total: int) -> None:
        channel.send(("P", phase, done, total))

    def give_up(sentence: str) -> NoReturn:
        # libgit2 is in the middle of a call that it would never return from (fetch_here); nothing of this
        # process is worth ending cleanly (the repository's lock is the asker's, a half fetch is swept like a
        # killed one), so the error goes first and the process ends at once
        channel.send(("E", sentence))
        os._exit(1)

    guard = request.get("guard")
    policy = None if guard is None else SourcePolicy(tuple(guard["allowed"]), tuple(guard["denied"]), guard["ssh"])
    try:
        fetch_here(open_repository(Path(request["path"])), limits, progress, policy, give_up)
        channel.send(("D",))
    except MirrorError as error:
        channel.send(("E", str(error).splitlines()[0] if str(error) else "The fetch failed."))
    except (pygit2.GitError, OSError, ValueError) as error:
        channel.send(("E", f"The fetch failed: {describe(error)}."))
