"""What a fault of the data directory looks like from the inside, and the one sentence each gets.

Two faults reach every floor through the same few exceptions, and each face must tell them apart from
a bug: a **full disk** (`OSError` ENOSPC or EDQUOT from a file write, `sqlite3.OperationalError`
"database or disk is full", SQLITE_FULL) and a **damaged index** (`sqlite3.DatabaseError` "database
disk image is malformed" or "file is not a database": SQLITE_CORRUPT, SQLITE_NOTADB).

    if is_disk_full(error): raise DiskFullError.at(settings.data_dir) from None
    free_bytes(settings.data_dir)       # what the service user may still write there (statvfs f_bavail)

stdlib only: used by the store (the replay guards' fallback), the faces and serve's health alike.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from .errors import GadError

# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xff, Python 3.11+)
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 11, 13, 26

# Below this much free space the data disk counts as full: /readyz says so and writes are refused
# with a sentence before they fail half-way (SQLite needs room for its WAL and a checkpoint; a
# fetch for its pack). A disk with more room but still failing with ENOSPC is caught by the errors.
FULL_BELOW_BYTES = 16 * 1024 * 1024


def _code(error: BaseException) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` (or what caused it) is the disk or the user's quota running out."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(error, sqlite3.Error) and (_code(error) == SQLITE_FULL or "database or disk is full" in str(error)):
            return True
        error = error.__cause__ or error.__context__
    return False


def is_damaged_index(error: BaseException) -> bool:
    """Whether `error` says the SQLite file itself is damaged (not locked, not full, not missing)."""
    while error is not None:
        if isinstance(error, sqlite3.DatabaseError) and (
                _code(error) in (SQLITE_CORRUPT, SQLITE_NOTADB)
                or any(words in str(error) for words in ("malformed", "file is not a database"))):
            return True
        error = error.__cause__ or error.__context__
    return False


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged process may still write on `path`'s file system (None: cannot tell)."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def disk_full(path: Path) -> bool:
    free = free_bytes(path)
    return free is not None and free < FULL_BELOW_BYTES


class DiskFullError(GadError):
    """The data directory's disk is full: what would write is refused; reading still answers."""

    @classmethod
    def at(cls, data_dir: Path | None = None) -> "DiskFullError":
        # No path in the sentence: members read it too, and where the data lives is the operator's business.
        return cls("gad-bot's data disk is full, so nothing can be changed or recorded right now (reports still "
                   "answer); ask again once the operator has freed space (`gad-bot doctor` says where).")


class IndexDamagedError(GadError):
    """The index file is damaged: nothing reads it reliably until it is restored."""

    @classmethod
    def sentence(cls) -> "IndexDamagedError":
        return cls("gad-bot's index is damaged, so this cannot be answered; the operator has been told "
                   "(`gad-bot doctor`, then `gad-bot restore` from the latest backup).")
