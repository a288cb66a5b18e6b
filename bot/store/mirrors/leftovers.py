"""What interrupted work left under the mirrors, and the sweep that removes it: staging directories of clones,
temporary packs and lock files, `.keep` files of dead git processes, orphan mirrors; and the data directory's
`mirrors.lock`, which keeps a mirror on its way into the index from ever looking like an orphan."""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

# Temporary files and lock files older than this are what a killed clone or fetch left: one still running in
# another process (it may be the CLI's, beside serve's) writes them more recently than that.
LEFTOVER_SECONDS = 3600


@contextmanager
def creation_lock(locks: Path, how: int) -> Iterator[bool]:
    """The data directory's `mirrors.lock`: shared while a mirror is created (MirrorStore.creating), exclusive and
    without waiting for a sweep; yields whether it was taken."""
    locks.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(locks / "mirrors.lock", "a") as handle:
        try:
            fcntl.flock(handle, how)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def leftovers(root: Path, locks: Path, named: Callable[[], Iterable[Path] | None] | None = None) -> list[Path]:
    """What `sweep` would remove now."""
    with creation_lock(locks, fcntl.LOCK_EX | fcntl.LOCK_NB) as alone:
        return find_leftovers(root, named() if named is not None and alone else None, alone)


def find_leftovers(root: Path, named: Iterable[Path] | None, alone: bool,
                   older_than: float = LEFTOVER_SECONDS) -> list[Path]:
    """What interrupted work left under the mirrors at `root`: temporary packs and lock files older than
    `older_than` seconds (a fetch still running in some process writes them now), `.keep` files of git processes
    of this host that are gone, and, `alone` (no mirror is being created: see `MirrorStore.creating`), staging
    directories of clones and, given the mirror paths the index names, orphan mirrors. A staging directory's own
    time says nothing while its clone runs (its files are written below it) or waits its turn among an
    organization's clones."""
    if not root.is_dir():
        return []
    cutoff = time.time() - older_than
    found = [entry for entry in root.iterdir()
             if alone and entry.name.startswith(".incoming-") and _older(entry, cutoff)]
    # git's tmp_pack_, tmp_idx_, tmp_obj_...; libgit2's pack_git2_ and tmp_object_git2_; copy_whole's tmp_copy_
    # (localcopy.py)
    for pattern in ("*/objects/**/tmp_*", "*/objects/pack/pack_git2_*", "*/objects/pack/*.lock",
                    "*/refs/**/*.lock", "*/*.lock"):
        found += [path for path in root.glob(pattern) if path.is_file() and _older(path, cutoff)]
    found += [keep for keep in root.glob("*/objects/pack/pack-*.keep") if _dead_keep(keep)]
    if named is not None:
        known = {os.path.abspath(path) for path in named}
        found += [entry for entry in sorted(root.iterdir())
                  if not entry.name.startswith(".") and entry.is_dir() and not entry.is_symlink()
                  and os.path.abspath(entry) not in known]
    return found


def sweep(root: Path, locks: Path, named: Callable[[], Iterable[Path] | None] | None = None) -> list[Path]:
    """Remove the `leftovers`; orphan mirrors only given `named` (the mirror paths the index names, read once no
    mirror is being created; None when they cannot be known) and only when no track is creating one now (then
    they wait for the next sweep)."""
    with creation_lock(locks, fcntl.LOCK_EX | fcntl.LOCK_NB) as alone:
        found = find_leftovers(root, named() if named is not None and alone else None, alone)
        removed: list[Path] = []
        for path in found:
            try:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except FileNotFoundError:
                pass  # its own process finished with it meanwhile
            except OSError as error:
                log.warning("could not remove %s: %s", path, error.strerror)
                continue
            removed.append(path)
    if removed:
        log.info("removed %d leftover(s) under %s: %s", len(removed), root,
                 ", ".join(str(p.relative_to(root)) for p in removed[:10]))
    return removed


def _older(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime < cutoff
    except OSError:
        return False  # gone meanwhile


# What git writes into the .keep file of a pack it is receiving (`index-pack --keep`); removed once the refs are updated.
_KEEP_LINE = re.compile(rb"(?:fetch-pack|receive-pack|index-pack) (\d+) on (\S+)")


def _dead_keep(keep: Path) -> bool:
    """A .keep that git left while receiving a pack, naming a process of this host that no longer runs: the pack is
    whole, but kept packs are never repacked. A .keep an operator wrote (any other text) is theirs."""
    try:
        match = _KEEP_LINE.fullmatch(keep.read_bytes()[:200].strip())
    except OSError:
        return False
    if match is None or match.group(2).decode(errors="replace") != socket.gethostname():
        return False
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):
        return False
    return False
