"""Reachability over a repository's commit graph, held as arrays: which commits a set of tips reaches.

scipy lives here. Every scope (all refs; branches and tags; the default branch), `branch:NAME` and
`range:A..B` is a set of commits reachable from some tips. The index keeps each commit's parents as
row numbers (CSR: `offsets`, `parents`), and a breadth-first search in compiled code answers a
million-commit graph in tens of milliseconds (a Python loop over the same graph takes about a second).
"""

from __future__ import annotations

import threading

import numpy as np


def warm_up() -> None:
    """Import scipy's graph code in the background (~0.15-0.2 s of imports).

    A first walk calls this when it starts: the walk waits on git most of the time, so the import costs
    nothing there, while at the walk's end, where reachability is needed, it would delay the moment
    plain reports answer. Python's import lock makes a later import wait for this one, never repeat it.
    """
    threading.Thread(target=_import_scipy, daemon=True, name="import-scipy").start()


def _import_scipy() -> None:
    try:
        import scipy.sparse.csgraph  # noqa: F401
    except ImportError:
        pass  # reported where reachability is needed, in the caller's thread


def reachable(offsets: np.ndarray, parents: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """A boolean per row: reachable from any of the `starts` rows (themselves included)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    rows = len(offsets) - 1
    mask = np.zeros(rows, bool)
    starts = np.unique(np.asarray(starts, np.int64))
    starts = starts[(starts >= 0) & (starts < rows)]
    if not len(starts):
        return mask
    # One search from a virtual root (row `rows`) whose children are the tips. The arrays are built in
    # the types csgraph works in (float64 weights, int32 indices), or it converts a copy on every call.
    indptr = np.empty(rows + 2, np.int32)
    indptr[:-1] = offsets
    indptr[-1] = offsets[-1] + len(starts)
    indices = np.concatenate([parents, starts]).astype(np.int32, copy=False)
    graph = csr_matrix((np.ones(len(indices)), indices, indptr), shape=(rows + 1, rows + 1), copy=False)
    order = breadth_first_order(graph, rows, directed=True, return_predecessors=False)
    mask[order[order < rows]] = True
    return mask


def _reachable_unless(offsets: np.ndarray, parents: np.ndarray, start: int, stop: np.ndarray) -> np.ndarray:
    """A boolean per row: reached from `start` by a search that does not go past rows in `stop` (those it
    meets are marked, their parents are not searched)."""
    counts = np.diff(offsets)
    kept = np.where(stop, 0, counts)
    cut_offsets = np.zeros(len(offsets), np.int64)
    np.cumsum(kept, out=cut_offsets[1:])
    cut_parents = parents[np.repeat(~stop, counts)]
    return reachable(cut_offsets, cut_parents, np.array([start], np.int64))


def consecutive_ranges(offsets: np.ndarray, parents: np.ndarray, tips: list[int]) -> list[np.ndarray]:
    """For tips t0, t1, ... (rows): the rows of git's `t0`, `t0..t1`, `t1..t2`, ... (reachable from each tip
    and not from the one before it), each as sorted row numbers.

    One full search per tip would cost the whole history each time. Everything a tip reaches is closed
    under parents, so a search from the next tip that stops where the previous tip's reach begins finds
    exactly the new rows, at the cost of those rows; when it meets the previous tip (the usual case: a
    release descends from the one before), the next tip's reach is the previous one plus the new rows,
    and only a tip that does not descend from its predecessor (a back-port) needs a full search.
    """
    out: list[np.ndarray] = []
    before: np.ndarray | None = None
    previous = -1
    for tip in tips:
        if before is None:
            reach = reachable(offsets, parents, np.array([tip], np.int64))
            new = reach
        else:
            met = _reachable_unless(offsets, parents, tip, before)
            new = met & ~before
            reach = before | new if met[previous] else reachable(offsets, parents, np.array([tip], np.int64))
        out.append(np.flatnonzero(new))
        before, previous = reach, tip
    return out
