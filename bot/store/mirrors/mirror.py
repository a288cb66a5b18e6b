"""`Mirror`: one repository on disk, read through pygit2. A facade: each method hands its call to the module whose
job it is (refs, commits, trees, mailmap, health, fetch); `fetch` chooses between a local copy and a fetch child."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from ...confine import ExportLimits
from ...errors import MirrorError
from ..sources import SourcePolicy
from . import commits, health, refs, trees
from . import fetch as fetching
from .dirs import open_repository
from .fetchchild import fetch_in_child
from .localcopy import copy_local
from .mailmap import mailmap_blob
from .remote import FetchLimits, Progress


class Mirror:
    """One repository on disk, read through pygit2."""

    def __init__(self, path: Path):
        self.path = path
        self.repo: pygit2.Repository = open_repository(path)

    # -- network -------------------------------------------------------------
    def set_origin(self, url: str) -> None:
        """Fetch from `url` from now on (a repository renamed or transferred on its forge)."""
        self.repo.remotes.set_url("origin", url)

    def fetch(self, limits: FetchLimits, progress: Progress | None = None, guard: SourcePolicy | None = None) -> None:
        """Fetch every ref with prune, then point HEAD at the remote's default branch.

        A network fetch runs in a child process that is killed at GAD_FETCH_TIMEOUT_SECONDS: a
        server that trickles its answer, or a libgit2 that loops, cannot hold a sync (and the
        repository's lock) forever. What a killed fetch leaves (temporary packs, ref locks) is
        swept under the repository's lock before the next one. With `guard` (sources typed in
        Slack), every connection the fetch makes is checked against that policy (`fetch._guarded`).
        """
        self.check_loose_objects()
        try:
            remote = self.repo.remotes["origin"]
        except (KeyError, ValueError):
            raise MirrorError("This mirror has no `origin` remote; re-clone it with `gad-bot sync --reclone NAME`.") from None
        if guard is None and copy_local(remote.url, self.repo, self.path):
            return
        fetch_in_child(self.path, limits, progress, guard)

    def fetch_here(self, limits: FetchLimits, progress: Progress | None = None, guard: SourcePolicy | None = None) -> None:
        """The fetch itself, in this process (the child's half of `fetch`)."""
        fetching.fetch_here(self.repo, limits, progress, guard)

    def clear_stale_locks(self) -> list[Path]:
        """Delete lock files a killed fetch left. Only call this while holding the repository's own
        lock (Tracking._repo_lock): then no gad-bot process can be writing this mirror."""
        return health.clear_stale_locks(self.path)

    def check_loose_objects(self, limit: int = 20_000) -> None:
        """Refuse a mirror with a truncated loose object (health.check_loose_objects)."""
        health.check_loose_objects(self.path, limit)

    # -- refs ----------------------------------------------------------------
    def head_ref(self) -> str | None:
        """The default branch's full ref name, if HEAD points at an existing branch."""
        return refs.head_ref(self.repo)

    def ref_tips(self) -> dict[str, bytes]:
        """Every ref under refs/ peeled to the commit it names (refs.ref_tips)."""
        return refs.ref_tips(self.repo)

    def branch_tip(self, branch: str) -> bytes | None:
        """The commit a branch (short or full name, or HEAD) points at, or None."""
        return refs.branch_tip(self.repo, branch)

    def branches(self) -> list[str]:
        return refs.branches(self.repo)

    # -- history -------------------------------------------------------------
    def estimate_commits(self, samples: int = 4000) -> int | None:
        """About how many commits the mirror holds, for progress only (None when unknown)."""
        return commits.estimate_commits(self.path, samples)

    def commits_not_in(self, tips: list[bytes], indexed: Callable[[bytes], bool]) -> list[bytes]:
        """The commits `tips` reach without passing through an `indexed` one, tips first (raw ids)."""
        return commits.commits_not_in(self.repo, tips, indexed)

    def has_commit(self, oid: bytes) -> bool:
        return commits.has_commit(self.repo, oid)

    # -- trees ---------------------------------------------------------------
    def tree_of(self, tip: bytes) -> str:
        """The id of the tree at a commit (the cache key for anything computed from files)."""
        return trees.tree_of(self.repo, tip)

    def export_files(self, tip: bytes, dest: Path, limits: ExportLimits, *, paths: tuple[str, ...] = (),
                     exclude_paths: tuple[str, ...] = ()) -> int:
        """Write the files of the commit's tree into `dest` under names gad-bot makes (trees.export_files)."""
        return trees.export_files(self.repo, tip, dest, limits, paths=paths, exclude_paths=exclude_paths)

    # -- identity ------------------------------------------------------------
    def mailmap_blob(self) -> tuple[str | None, bytes]:
        """The `.mailmap` on the default branch's tree: (blob id, contents), or (None, b'')."""
        return mailmap_blob(self.repo)
