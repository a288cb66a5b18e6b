"""A mirror's directory: the name a repository's mirror gets, opening one, and error words that never say where one is.

Every module that reads a repository through pygit2 opens it or words its errors through here, so libgit2's
process-wide settings below are made before the first repository is read.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pygit2

from ...errors import MirrorError

# libgit2 keeps up to 256 MiB of parsed objects by default; gad-bot reads few objects through it
# (refs, the mailmap, trees for vs:cocomo), so a small cache costs no speed and saves memory.
pygit2.settings.cache_max_size(64 * 1024 * 1024)


def mirror_dir_name(name: str) -> str:
    """A directory name for a repository name: readable, safe on every file system, and (128 bits of SHA-256 of the
    whole name) not one another name can be made to share. The readable part is cut at 60 characters and maps
    `/` and `_` alike, so the hash alone tells names apart: 32 bits of it were found colliding in seconds (issue
    31). MirrorStore._reserve (clones.py) still checks that the directory is free and named by no repository."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "repo"
    return f"{safe[:60]}-{hashlib.sha256(name.encode()).hexdigest()[:32]}.git"


# An absolute path up to and including a mirror's directory (or its staging one): libgit2 names
# files by absolute path, and the data directory is the server's business, not the reader's.
_MIRROR_PREFIX = re.compile(r"(?:/[^/\s'\"]+)*/(?:\.incoming-)?[^/\s'\"]+\.git(?:/|(?=['\"\s]|$))")


def describe(error: Exception) -> str:
    """libgit2's or the OS's words on one line, bounded, with the path of the mirror left out
    ('refs/heads/x' rather than '/srv/gad/mirrors/web-1a2b3c4d.git/refs/heads/x')."""
    text = str(error).strip().rstrip(".") or error.__class__.__name__
    return _MIRROR_PREFIX.sub(lambda m: "" if m.group().endswith("/") else "the mirror", text.splitlines()[0])[:300]


def open_repository(path: Path) -> pygit2.Repository:
    """The repository at `path`, or MirrorError saying how to re-clone it."""
    try:
        return pygit2.Repository(str(path))
    except (pygit2.GitError, KeyError) as error:
        raise MirrorError(f"The mirror at {path} cannot be opened ({describe(error)}); "
                          "re-clone it with `gad-bot sync --reclone NAME`.", operator_detail=True) from None
