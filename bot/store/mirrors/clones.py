"""`MirrorStore`: the directory of bare mirrors. A new mirror is cloned into a staging directory of its own and
renamed onto a directory claimed for it by mkdir (never one that exists, nor one the index names); a mirror the
index still names is never removed. The sweep of what interrupted work left is leftovers.py's."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2

from ...errors import MirrorError
from ..sources import SourcePolicy, redact
from .dirs import describe, mirror_dir_name
from .fetchchild import fetch_many
from .leftovers import creation_lock
from .leftovers import leftovers as leftovers_now
from .leftovers import sweep as sweep_leftovers
from .localcopy import copy_local
from .mirror import Mirror
from .remote import FetchLimits, Progress

log = logging.getLogger(__name__)

MIRROR_REFSPEC = "+refs/*:refs/*"


class MirrorStore:
    """The directory of bare mirrors."""

    def __init__(self, root: Path, limits: FetchLimits, locks: Path | None = None,
                 named: Callable[[], Iterable[Path] | None] | None = None):
        self.root = root
        self.locks = locks or root.parent / "locks"  # the data directory's, beside each repository's own lock
        self.limits = limits  # the fetch child applies them (set_network_timeouts, its deadline)
        # the mirror paths the index names (None: it cannot be read): a directory one of them names is never
        # given to another repository, nor removed for one (see _reserve and remove)
        self.named = named

    def _named_count(self, path: Path) -> int | None:
        """How many repositories the index says have their mirror at `path` (None: the index cannot say)."""
        if self.named is None:
            return 0
        paths = self.named()
        if paths is None:
            return None
        mine = os.path.abspath(path)
        return sum(1 for named in paths if os.path.abspath(named) == mine)

    def _reserve(self, name: str) -> Path:
        """A new, empty directory for `name`'s mirror, made here: mirror_dir_name(name) when it is free, else the same
        with -2, -3, ... A directory that exists (another repository's mirror, or leftovers) is never taken nor
        removed, and neither is a path the index names for a repository whose directory went missing. mkdir is
        the claim: two clones of one name at once get one directory each."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        named = self.named() if self.named is not None else ()
        taken = {os.path.abspath(path) for path in named or ()}
        first = mirror_dir_name(name)
        for number in range(1, 1000):
            final = self.root / (first if number == 1 else f"{first[:-len('.git')]}-{number}.git")
            if os.path.abspath(final) in taken:
                continue
            try:
                final.mkdir(mode=0o700)
            except FileExistsError:
                continue
            return final
        raise MirrorError(f"No free directory for the mirror of `{name}` under {self.root}; run `gad-bot doctor`.",
                          operator_detail=True)

    def _staging_for(self, final: Path) -> Path:
        """A staging directory of its own for a clone into `final` (never another clone's: each is made here)."""
        import tempfile

        return Path(tempfile.mkdtemp(prefix=".incoming-", suffix=f"-{final.name}", dir=self.root))

    @staticmethod
    def _unreserve(final: Path) -> None:
        """Give back a reserved directory a clone did not fill (rmdir: only ever an empty one)."""
        try:
            final.rmdir()
        except OSError:
            pass

    def create(self, source: str, name: str, progress: Progress | None = None, *, replace: Path | None = None,
               guard: SourcePolicy | None = None) -> Path:
        """Clone a bare mirror of every ref of `source`; on any failure nothing is left behind.

        With `replace`, the fresh clone goes to a new directory and the (damaged) old one is removed
        once the clone is complete. A new path matters: libgit2 caches pack files by path. With
        `guard`, every connection is checked against that policy (see `Mirror.fetch`).
        """
        final = self._reserve(f"{name}@{time.time_ns()}" if replace else name)
        staging = None
        try:
            staging = self._staging_for(final)
            repo = staged_mirror(source, staging)
            if guard is not None or not copy_local(source, repo, staging):
                Mirror(staging).fetch(self.limits, progress, guard)
            staging.rename(final)  # onto the empty directory reserved for it: rename(2) replaces an empty one
            if replace is not None and (self._named_count(replace) or 0) <= 1:  # its own; never one another names
                self._remove_tree(replace)
        except MirrorError:
            self._drop(staging, final)
            raise
        except (pygit2.GitError, OSError, ValueError) as error:
            self._drop(staging, final)
            raise MirrorError(f"Cloning {redact(source)} failed: {describe(error)}.") from None
        return final

    def _drop(self, staging: Path | None, final: Path) -> None:
        """What a failed clone made: its own staging directory, and the reserved directory while still empty."""
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        self._unreserve(final)

    def create_many(self, items: list[tuple[str, str]], done: Callable[[int, Path | None, str | None], None], *,
                    guard: SourcePolicy | None = None) -> None:
        """Clone a bare mirror of each (network source, name), as `create` does, one after another;
        `done(i, path, None)` or `done(i, None, error)` as each finishes (nothing is left of a failed one)."""
        staged: list[tuple[int, Path, Path]] = []
        for number, (source, name) in enumerate(items):
            final = staging = None
            try:
                final = self._reserve(name)
                staging = self._staging_for(final)
                staged_mirror(source, staging)
                staged.append((number, staging, final))
            except (pygit2.GitError, OSError, ValueError, MirrorError) as error:
                if final is not None:
                    self._drop(staging, final)
                done(number, None, str(error) if isinstance(error, MirrorError)
                     else f"Cloning {redact(source)} failed: {describe(error)}.")

        def fetched(i: int, error: str | None) -> None:
            number, staging, final = staged[i]
            if error is None:
                try:
                    staging.rename(final)
                except OSError as failure:
                    error = f"Cloning {redact(items[number][0])} failed: {describe(failure)}."
            if error is not None:
                self._drop(staging, final)
            done(number, None if error else final, error)

        if staged:
            fetch_many([staging for _, staging, _ in staged], self.limits, guard, fetched)

    @contextmanager
    def creating(self) -> Iterator[None]:
        """Held (shared) from the clone of a new mirror until the index names it: track, reclone, an organization's
        clones. `sweep` takes it exclusively before it calls anything an orphan, so a mirror on its way into the
        index is never one (a kill -9 in between leaves a true orphan, swept later)."""
        with creation_lock(self.locks, fcntl.LOCK_SH):
            yield

    def leftovers(self, named: Callable[[], Iterable[Path] | None] | None = None) -> list[Path]:
        """What `sweep` would remove now."""
        return leftovers_now(self.root, self.locks, named)

    def sweep(self, named: Callable[[], Iterable[Path] | None] | None = None) -> list[Path]:
        """Remove the leftovers (see leftovers.sweep); orphan mirrors only given `named`, the mirror paths the index
        names, and only while no mirror is being created."""
        return sweep_leftovers(self.root, self.locks, named)

    def remove(self, path: Path) -> None:
        """Remove a mirror no repository names any more (untracked, or a track that failed). One the index still
        names for a repository is kept, whoever asks (and so is every one while the index cannot be read): the
        sweep removes it once it is an orphan."""
        count = self._named_count(path)
        if count is None or count > 0:
            log.warning("kept the mirror %s: %s", path.name, "the index cannot be read" if count is None
                        else "another repository's mirror is there")
            return
        self._remove_tree(path)

    def _remove_tree(self, path: Path) -> None:
        if path.resolve().is_relative_to(self.root.resolve()) and path.exists():
            shutil.rmtree(path)


def staged_mirror(source: str, staging: Path) -> pygit2.Repository:
    """A new, empty bare mirror of `source` at `staging` (every ref, no tag auto-following), for the service user only."""
    repo = pygit2.init_repository(str(staging), bare=True)
    repo.remotes.create("origin", source, MIRROR_REFSPEC)
    repo.config["remote.origin.mirror"] = True
    repo.config["remote.origin.tagopt"] = "--no-tags"
    make_private(staging)  # libgit2 used the umask; the config holds the source URL
    return repo


def make_private(root: Path) -> None:
    """Directories 0700, files 0600 under `root` (a new mirror: nothing in it is shared yet)."""
    os.chmod(root, 0o700)
    for where, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(where, name), 0o700)
        for name in files:
            os.chmod(os.path.join(where, name), 0o600)
