"""One mirror's health and repair: a truncated loose object refused before libgit2 reads it, and the lock files a
killed fetch left removed."""

from __future__ import annotations

import zlib
from pathlib import Path

from ...errors import MirrorError


def clear_stale_locks(path: Path) -> list[Path]:
    """Delete lock files a killed fetch left in the mirror at `path`. Only call this while holding the repository's
    own lock (Tracking._repo_lock): then no gad-bot process can be writing this mirror."""
    removed = []
    for pattern in ("refs/**/*.lock", "packed-refs.lock", "HEAD.lock", "config.lock", "index.lock",
                    "objects/pack/*.lock"):
        for lock in path.glob(pattern):
            try:
                lock.unlink()
                removed.append(lock)
            except OSError:
                pass
    return removed


def check_loose_objects(path: Path, limit: int = 20_000) -> None:
    """Refuse a mirror with a truncated loose object: libgit2 1.9 loops forever inflating one.

    Mirrors keep almost everything in packs (libgit2 checks those itself); loose objects come
    from copying a local repository, so there are few. Beyond `limit` the check is skipped.
    """
    objects = path / "objects"
    loose = [p for p in objects.glob("[0-9a-f][0-9a-f]/*") if len(p.name) == 38]
    if len(loose) > limit:
        return
    for obj in loose:
        try:
            inflater = zlib.decompressobj()
            inflater.decompress(obj.read_bytes())
            complete = inflater.eof
        except (zlib.error, OSError):
            complete = False
        if not complete:
            raise MirrorError(f"The mirror is damaged: object {obj.parent.name}{obj.name} is truncated or "
                              "unreadable; re-clone it with `gad-bot sync --reclone NAME`.")
