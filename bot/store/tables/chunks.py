"""A repository's history as stored: `commit_chunks` (append-only chunks of arrays), `walks` (an unfinished walk's
frontier) and `derived` (what the end of a walk derives: scope bits, parents as rows, sort orders)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .base import IndexFile, _iso, parse_time, utcnow


CHUNK_COLUMNS = ("oids", "author_ids", "days", "parent_counts", "parent_oids", "path_offsets", "path_ids",
                 "coauthor_rows", "coauthor_ids")
DERIVED_COLUMNS = ("bits", "parent_rows", "key_order", "report_order")


@dataclass(frozen=True)
class ChunkRow:
    """One stored chunk of commits (arrays as bytes: bot/store/store.py gives them their numpy types)."""

    seq: int
    rows: int
    oids: bytes | None = None  # rows x 20 raw ids
    author_ids: bytes | None = None  # int32, ids in `authors`
    days: bytes | None = None  # int32 epoch days, BAD_DAY for impossible dates
    parent_counts: bytes | None = None  # uint8
    parent_oids: bytes | None = None  # sum(parent_counts) x 20
    path_offsets: bytes | None = None  # int32, rows + 1; None until the chunk's paths are indexed
    path_ids: bytes | None = None  # int32 ids in `paths`
    coauthor_rows: bytes | None = None  # int32 rows (ascending) naming a co-author, once per co-author
    coauthor_ids: bytes | None = None  # int32 ids in `authors`, one per entry of coauthor_rows


@dataclass(frozen=True)
class DerivedRow:
    """What the end of a walk derived from a repository's first `chunks` chunks (`rows` commits)."""

    generation: int
    chunks: int
    rows: int
    bits: bytes | None = None  # uint8 scope bits per row; 0: no longer reachable
    parent_rows: bytes | None = None  # int32 parents as rows, in row order (CSR with the parent counts)
    key_order: bytes | None = None  # int32 rows sorted by commit key
    report_order: bytes | None = None  # int32 rows sorted by (mailmapped person, day)


@dataclass(frozen=True)
class WalkState:
    """An unfinished walk: the commits still to visit (hex), the tips whose history is already indexed."""

    pending: list[str]
    exclude: list[str]
    estimate: int | None
    started_at: datetime | None


class Chunks(IndexFile):
    # -- commit chunks -------------------------------------------------------
    def chunk_count(self, repo_id: int) -> int:
        return self.conn.execute("SELECT count(*) FROM commit_chunks WHERE repo_id = ?", (repo_id,)).fetchone()[0]

    def append_chunk(self, repo_id: int, chunk: ChunkRow) -> None:
        """Add a chunk after the repository's last one (caller holds the transaction)."""
        self.conn.execute(
            "INSERT INTO commit_chunks (repo_id, seq, rows, oids, author_ids, days, parent_counts, parent_oids, "
            "path_offsets, path_ids, coauthor_rows, coauthor_ids) VALUES (?, (SELECT coalesce(max(seq), -1) + 1 "
            "FROM commit_chunks WHERE repo_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (repo_id, repo_id, chunk.rows, chunk.oids, chunk.author_ids, chunk.days, chunk.parent_counts,
             chunk.parent_oids, chunk.path_offsets, chunk.path_ids, chunk.coauthor_rows, chunk.coauthor_ids))

    def replace_chunks(self, repo_id: int, chunks: Iterable[ChunkRow]) -> None:
        """Rewrite a repository's chunks (compaction; caller holds the transaction)."""
        self.conn.execute("DELETE FROM commit_chunks WHERE repo_id = ?", (repo_id,))
        for chunk in chunks:
            self.append_chunk(repo_id, chunk)

    def chunks(self, repo_id: int, *, first: int = 0, limit: int | None = None,
               columns: tuple[str, ...] = CHUNK_COLUMNS) -> list[ChunkRow]:
        """The repository's chunks in order, from the `first`-th, at most `limit` of them, with only `columns`."""
        wanted = [c for c in CHUNK_COLUMNS if c in columns]
        selected = ", ".join(["seq", "rows", *wanted])
        rows = self.conn.execute(f"SELECT {selected} FROM commit_chunks WHERE repo_id = ? ORDER BY seq "
                               f"LIMIT ? OFFSET ?", (repo_id, -1 if limit is None else limit, first)).fetchall()
        return [ChunkRow(seq=r[0], rows=r[1], **dict(zip(wanted, r[2:]))) for r in rows]

    def chunk(self, repo_id: int, seq: int, columns: tuple[str, ...] = CHUNK_COLUMNS) -> ChunkRow:
        wanted = [c for c in CHUNK_COLUMNS if c in columns]
        row = self.conn.execute(f"SELECT seq, rows{''.join(', ' + c for c in wanted)} FROM commit_chunks "
                              "WHERE repo_id = ? AND seq = ?", (repo_id, seq)).fetchone()
        return ChunkRow(seq=row[0], rows=row[1], **dict(zip(wanted, row[2:])))

    def chunks_lacking_paths(self, repo_id: int) -> list[tuple[int, int]]:
        """(seq, rows) of the chunks whose changed paths are not indexed yet."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT seq, rows FROM commit_chunks WHERE repo_id = ? AND path_offsets IS NULL ORDER BY seq", (repo_id,))]

    def chunk_path_state(self, repo_id: int, chunks: int) -> tuple[int, int]:
        """(commits whose paths are indexed, commits) over the repository's first `chunks` chunks."""
        row = self.conn.execute(
            "SELECT coalesce(sum(CASE WHEN path_offsets IS NULL THEN 0 ELSE rows END), 0), coalesce(sum(rows), 0) "
            "FROM (SELECT rows, path_offsets FROM commit_chunks WHERE repo_id = ? ORDER BY seq LIMIT ?)",
            (repo_id, chunks)).fetchone()
        return int(row[0]), int(row[1])

    def store_chunk_paths(self, repo_id: int, seq: int, offsets: bytes, path_ids: bytes) -> None:
        self.conn.execute("UPDATE commit_chunks SET path_offsets = ?, path_ids = ? WHERE repo_id = ? AND seq = ?",
                        (offsets, path_ids, repo_id, seq))

    def chunks_lacking_coauthors(self, repo_id: int, *, paths_done: bool = False) -> list[int]:
        """Seqs of the chunks whose co-author trailers are not read yet (paths_done: only those whose changed
        paths are, which the paths phase will not read again)."""
        also = " AND path_offsets IS NOT NULL" if paths_done else ""
        return [r[0] for r in self.conn.execute(
            f"SELECT seq FROM commit_chunks WHERE repo_id = ? AND coauthor_rows IS NULL{also} ORDER BY seq", (repo_id,))]

    def store_chunk_coauthors(self, repo_id: int, seq: int, rows: bytes, author_ids: bytes) -> None:
        self.conn.execute("UPDATE commit_chunks SET coauthor_rows = ?, coauthor_ids = ? WHERE repo_id = ? AND seq = ?",
                          (rows, author_ids, repo_id, seq))

    # -- walks ---------------------------------------------------------------
    def walk(self, repo_id: int) -> WalkState | None:
        row = self.conn.execute("SELECT pending, exclude, estimate, started_at FROM walks WHERE repo_id = ?",
                              (repo_id,)).fetchone()
        if row is None:
            return None
        return WalkState(pending=[h for h in row[0].split() if h], exclude=[h for h in row[1].split() if h],
                         estimate=row[2], started_at=parse_time(row[3]))

    def save_walk(self, repo_id: int, pending: Iterable[str], exclude: Iterable[str], estimate: int | None) -> None:
        self.conn.execute("INSERT INTO walks VALUES (?, ?, ?, ?, ?) ON CONFLICT(repo_id) DO UPDATE SET "
                        "pending = excluded.pending, exclude = excluded.exclude, estimate = excluded.estimate",
                        (repo_id, "\n".join(pending), "\n".join(exclude), estimate, _iso(utcnow())))

    def end_walk(self, repo_id: int) -> None:
        self.conn.execute("DELETE FROM walks WHERE repo_id = ?", (repo_id,))

    # -- derived arrays --------------------------------------------------------
    def set_derived_generation(self, repo_id: int, generation: int) -> None:
        """The derived arrays stand as they are for a new generation (only what readers load beside them changed)."""
        self.conn.execute("UPDATE derived SET generation = ? WHERE repo_id = ?", (generation, repo_id))

    def store_derived(self, repo_id: int, derived: DerivedRow) -> None:
        self.conn.execute(
            "INSERT INTO derived VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(repo_id) DO UPDATE SET "
            "generation = excluded.generation, chunks = excluded.chunks, rows = excluded.rows, bits = excluded.bits, "
            "parent_rows = excluded.parent_rows, key_order = excluded.key_order, report_order = excluded.report_order",
            (repo_id, derived.generation, derived.chunks, derived.rows, derived.bits, derived.parent_rows,
             derived.key_order, derived.report_order))

    def derived(self, repo_id: int, columns: tuple[str, ...] = DERIVED_COLUMNS) -> DerivedRow | None:
        wanted = [c for c in DERIVED_COLUMNS if c in columns]
        row = self.conn.execute(f"SELECT generation, chunks, rows{''.join(', ' + c for c in wanted)} FROM derived "
                              "WHERE repo_id = ?", (repo_id,)).fetchone()
        if row is None:
            return None
        return DerivedRow(generation=row[0], chunks=row[1], rows=row[2], **dict(zip(wanted, row[3:])))
