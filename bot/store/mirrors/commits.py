"""The commits of a mirror as libgit2 reads them: about how many (for progress), which the index lacks, is one there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from ...errors import MirrorError
from .dirs import describe


def estimate_commits(path: Path, samples: int = 4000) -> int | None:
    """About how many commits the mirror holds, for progress only (None when unknown).

    Counting exactly is a walk as long as the index's own; instead the type byte of a few
    thousand packed objects, sampled through the pack index, gives the share of commits
    (within a few per cent), times the number of packed objects. Deltified objects count as
    non-commits: git does not deltify commits.
    """
    import mmap
    import random
    import struct

    total = 0.0
    rng = random.Random(0)
    for idx_path in (path / "objects" / "pack").glob("pack-*.idx"):
        pack_path = idx_path.with_suffix(".pack")
        try:
            with open(idx_path, "rb") as idx_file, open(pack_path, "rb") as pack_file:
                idx = mmap.mmap(idx_file.fileno(), 0, access=mmap.ACCESS_READ)
                if idx[:8] != b"\xfftOc\x00\x00\x00\x02":
                    continue  # a version 1 index: rare and old; leave the estimate to the others
                count = struct.unpack(">I", idx[8 + 255 * 4:8 + 256 * 4])[0]
                if not count:
                    continue
                offsets_at = 8 + 256 * 4 + count * 24
                large_at = offsets_at + count * 4
                picks = [rng.randrange(count) for _ in range(min(samples, count))]
                commits = 0
                for pick in picks:
                    offset = struct.unpack(">I", idx[offsets_at + 4 * pick:offsets_at + 4 * pick + 4])[0]
                    if offset & 0x80000000:
                        position = large_at + 8 * (offset & 0x7FFFFFFF)
                        offset = struct.unpack(">Q", idx[position:position + 8])[0]
                    pack_file.seek(offset)
                    kind = (pack_file.read(1) or b"\x00")[0] >> 4 & 7
                    commits += kind == 1
                total += count * commits / len(picks)
        except (OSError, ValueError, struct.error):
            continue
    loose = sum(1 for p in (path / "objects").glob("[0-9a-f][0-9a-f]/*") if len(p.name) == 38)
    estimate = int(total) + loose // 3  # loose objects: a commit with its tree and a blob or so
    return estimate or None


def commits_not_in(repo: pygit2.Repository, tips: list[bytes], indexed: Callable[[bytes], bool]) -> list[bytes]:
    """The commits `tips` reach without passing through an `indexed` one, tips first (raw ids).

    An incremental walk as `git log NEW --not OLD` pays for git's painting of OLD down to the
    oldest new commit's base: a pull request opened on a three-year-old commit, hidden behind
    570 tags, cost 6.8 s for 4 commits on the 1M history. Stopping at commits the index already
    holds reads only the new commits (their parents' ids, through libgit2), whatever their age.
    """
    found: list[bytes] = []
    seen: set[bytes] = set()
    stack = [t for t in dict.fromkeys(tips) if not indexed(t)]
    seen.update(stack)
    try:
        while stack:
            oid = stack.pop()
            found.append(oid)
            for parent in repo[pygit2.Oid(raw=oid)].parent_ids:
                raw = parent.raw
                if raw not in seen and not indexed(raw):
                    seen.add(raw)
                    stack.append(raw)
    except (KeyError, pygit2.GitError, ValueError) as error:
        raise MirrorError(f"The mirror is damaged ({describe(error)}); re-clone it with "
                          "`gad-bot sync --reclone NAME`.") from None
    return found


def has_commit(repo: pygit2.Repository, oid: bytes) -> bool:
    try:
        return isinstance(repo.get(pygit2.Oid(raw=oid)), pygit2.Commit)
    except (ValueError, pygit2.GitError):
        return False
