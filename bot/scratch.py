"""Scratch directories in the data directory that a crash cannot leave behind for good.

Each scratch directory holds a lock on a file inside it for as long as it is in use. A `kill -9`
frees the lock with the process, so `sweep` (at `serve`'s start) can tell an orphan from a
directory another process is still using, and removes only orphans.

stdlib only.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "gad-scratch-"
LOCK_NAME = ".in-use"
# Directories without a lock (left by versions before these locks) count as orphans after this long.
UNLOCKED_GRACE_SECONDS = 3600


@contextmanager
def scratch_directory(parent: Path | None) -> Iterator[Path]:
    """A fresh private directory under `parent` (the system's temporary directory when None), removed on exit."""
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    lock = os.open(path / LOCK_NAME, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(lock)


def sweep(parent: Path) -> list[Path]:
    """Remove the scratch directories under `parent` that no live process holds; return them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except FileNotFoundError:
        return removed
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        if _orphaned(path, entry):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if removed:
        log.info("removed %d scratch directories left by an interrupted process", len(removed))
    return removed


def _orphaned(path: Path, entry: os.DirEntry) -> bool:
    try:
        lock = os.open(path / LOCK_NAME, os.O_WRONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        try:
            return time.time() - entry.stat(follow_symlinks=False).st_mtime > UNLOCKED_GRACE_SECONDS
        except OSError:
            return False
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(lock)
    return True
