"""A job for bench_processes.py's "a worker's first fetch": in a worker forked from the fork server, one fetch of a
mirror in a fetch child, as a sync worker of serve does. Its own module: the worker unpickles the job by name."""

from __future__ import annotations

from pathlib import Path


def fetch_once(mirror: str) -> None:
    from bot.store.mirrors.fetchchild import fetch_in_child
    from bot.store.mirrors.remote import FetchLimits

    fetch_in_child(Path(mirror), FetchLimits({}, timeout_seconds=60), None, None)
