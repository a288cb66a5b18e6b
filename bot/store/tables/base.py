"""The index file itself: one connection per thread, transactions, read snapshots, the `meta` table, times.

Every table family of bot/store/tables/ is a mixin over `IndexFile`; bot/store/index.py joins them into `Index`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds") if moment else None


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _create_private(path: Path) -> None:
    """Create the database file readable by the service user only (before SQLite creates it 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def _use_wal(conn: sqlite3.Connection, patience: float = 30.0) -> None:
    """Switch the file to WAL (it stays so). On a new file, several processes opening it at once (serve's workers
    at start) race for the switch, and SQLite answers the losers "database is locked" at once, without waiting
    on busy_timeout: they try again until the winner is done."""
    deadline = time.monotonic() + patience
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class IndexFile:
    """One connection per thread to the index file; writers take one transaction per repository update."""

    def __init__(self, path: Path, *, data_dir: Path | None = None):
        self.path = path
        # What mirror paths are relative to: the directory the index file lies in (Settings.index_path),
        # unless told otherwise (a restore migrates the incoming copy before it is renamed into place).
        self.data_dir = data_dir or path.parent
        _create_private(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        # When a set, the ids of the commits whose membership rows an update touched (so the
        # column cache can be patched rather than rebuilt); None: not tracked.
        self.touched: set[int] | None = None

    # -- connections ---------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection; every query of this module goes through it."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA busy_timeout = 30000")  # readers and writers wait rather than fail
            _use_wal(conn)  # readers never block on a sync's transaction
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at checkpoints, never corrupt
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA cache_size = -65536")  # 64 MiB
            self._local.conn = conn
        return conn

    @property
    def db(self) -> "sqlite_utils.Database":
        """The same connection as a sqlite-utils Database, for the writers that use its helpers.

        Imported on first use: sqlite-utils (and click, dateutil, pluggy behind it) cost 70-170 ms of
        start-up that `gad-bot report`, which only reads, does not need (measured with -X importtime).
        """
        db = getattr(self._local, "db", None)
        if db is None:
            import sqlite_utils

            db = sqlite_utils.Database(self.conn)
            self._local.db = db
        return db

    def execute(self, sql: str, params: Iterable = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, tuple(params))

    def rows(self, sql: str, params: Iterable = ()) -> list[dict]:
        cursor = self.conn.execute(sql, tuple(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            self._local.db = None

    @contextmanager
    def transaction(self) -> Iterator["sqlite_utils.Database"]:
        """BEGIN IMMEDIATE ... COMMIT; anything raised rolls the whole update back."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one committed state (WAL: a read transaction), unless already in a transaction."""
        conn = self.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))
