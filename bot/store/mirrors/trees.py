"""A commit's tree: its id (the key of anything computed from files), and its files written out for a line counter
under names gad-bot makes."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pygit2

from ...confine import ExportLimitError, ExportLimits
from ...errors import MirrorError
from .dirs import describe


def tree_of(repo: pygit2.Repository, tip: bytes) -> str:
    """The id of the tree at a commit (the cache key for anything computed from files)."""
    return str(repo[pygit2.Oid(raw=tip)].peel(pygit2.Tree).id)


def export_files(repo: pygit2.Repository, tip: bytes, dest: Path, limits: ExportLimits, *,
                 paths: tuple[str, ...] = (), exclude_paths: tuple[str, ...] = ()) -> int:
    """Write the files of the commit's tree under `paths` (all when empty), less `exclude_paths`, into `dest`.

    Every file is written flat under a name gad-bot makes, its number and its extension
    (`17.c`), never under the name a stranger chose: names reach line counters whose helpers
    pass them through /bin/sh. A blob is written once per extension (both SLOCCount and cloc
    count identical files once), so a tree that repeats one blob costs one file. Symlinks,
    submodules and blobs over `limits.max_file_bytes` are skipped. Raises ExportLimitError when
    the files, bytes or time asked exceed `limits`, MirrorError when an object is missing.
    Returns the number of files written.
    """
    included = tuple(p.encode("utf-8", "surrogateescape") for p in paths)
    excluded = tuple(p.encode("utf-8", "surrogateescape") for p in exclude_paths)
    deadline = time.monotonic() + limits.seconds
    written_files = written_bytes = 0
    seen: set[tuple[bytes, bytes]] = set()
    try:
        root = repo[pygit2.Oid(raw=tip)].peel(pygit2.Tree)
        stack: list[tuple[pygit2.Tree, bytes]] = [(root, b"")]
        while stack:
            tree, prefix = stack.pop()
            if time.monotonic() > deadline:
                raise ExportLimitError("seconds", limits.seconds)
            for entry in tree:
                path = prefix + entry.raw_name
                if _under_any(path, excluded):
                    continue
                if entry.filemode == pygit2.enums.FileMode.TREE:
                    if not included or _under_any(path, included) or any(i.startswith(path + b"/") for i in included):
                        stack.append((repo[entry.id], path + b"/"))
                    continue
                if entry.filemode not in (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE):
                    continue
                if included and not _under_any(path, included):
                    continue
                extension = safe_extension(entry.raw_name)
                if (entry.id.raw, extension) in seen:
                    continue
                seen.add((entry.id.raw, extension))
                blob = repo[entry.id]
                if blob.size > limits.max_file_bytes:
                    continue
                if written_files + 1 > limits.max_files:
                    raise ExportLimitError("files", limits.max_files)
                if written_bytes + blob.size > limits.max_bytes:
                    raise ExportLimitError("bytes", limits.max_bytes)
                (dest / f"{written_files}{extension.decode('ascii')}").write_bytes(blob.data)
                written_files += 1
                written_bytes += blob.size
    except KeyError as error:  # libgit2 could not find an object the tree names
        raise MirrorError(f"The mirror lacks object {_missing_id(error)} of the tree it counts lines in; "
                          "re-clone it with `gad-bot sync --reclone NAME`.") from None
    except pygit2.GitError as error:
        raise MirrorError(f"The mirror could not read the tree it counts lines in ({describe(error)}); "
                          "re-clone it with `gad-bot sync --reclone NAME`.") from None
    return written_files


_SAFE_EXTENSION = re.compile(rb"\.[A-Za-z0-9_+]{1,15}")


def safe_extension(name: bytes) -> bytes:
    """The last extension of a file name when it is plain letters, digits, `_` or `+` (`.c`, `.C`, `.c++`), else b''."""
    dot = name.rfind(b".")
    if dot <= 0:  # no extension, or a dot file (`.bashrc` has none)
        return b""
    extension = name[dot:]
    return extension if _SAFE_EXTENSION.fullmatch(extension) else b""


def _under_any(path: bytes, prefixes: tuple[bytes, ...]) -> bool:
    return any(path == prefix or path.startswith(prefix + b"/") for prefix in prefixes)


def _missing_id(error: KeyError) -> str:
    found = re.search(r"[0-9a-f]{40,64}", str(error))
    return found.group(0)[:12] if found else "(unknown)"
