"""The `paths` table: every changed path seen, once, with an id (for `path:`)."""

from __future__ import annotations

from collections.abc import Iterable

from .base import IndexFile


class Paths(IndexFile):
    # -- paths ---------------------------------------------------------------
    def path_ids(self, paths: Iterable[str], cache: dict[str, int]) -> None:
        """Make sure every path has an id in `cache`, adding new paths (caller holds the transaction)."""
        missing = [p for p in dict.fromkeys(paths) if p not in cache]
        if not missing:
            return
        self.conn.executemany("INSERT OR IGNORE INTO paths (path) VALUES (?)", ((p,) for p in missing))
        for start in range(0, len(missing), 500):
            part = missing[start:start + 500]
            marks = ",".join("?" * len(part))
            cache.update({p: i for i, p in self.conn.execute(f"SELECT id, path FROM paths WHERE path IN ({marks})", part)})

    def all_path_ids(self) -> dict[str, int]:
        return {p: i for i, p in self.conn.execute("SELECT id, path FROM paths")}

    def max_path_id(self) -> int:
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM paths").fetchone()[0]

    def path_ids_under(self, prefixes: tuple[str, ...]) -> list[int]:
        """Ids of the paths equal to a prefix or inside it as a directory (`a/b` matches `a/b` and `a/b/...`)."""
        found: list[int] = []
        for prefix in prefixes:
            # range scans on the unique index: '0' sorts right after '/'
            found += [r[0] for r in self.conn.execute(
                "SELECT id FROM paths WHERE path = ? OR (path >= ? AND path < ?)", (prefix, prefix + "/", prefix + "0"))]
        return found
