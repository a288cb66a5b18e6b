"""Local repositories as sources: the git directory a path names, and a fetch from one the way `git clone --mirror
--local` does it (hard links, not a new pack)."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pygit2

from ...errors import SourceError
from ..sources import redact
from .dirs import open_repository
from .refs import guess_head


def copy_whole(path: Path, target: Path) -> None:
    """Copy an object file so that `target` is whole or absent: a copy cut short (a full disk) leaves
    only its temporary file, which is removed; git would read a truncated object as a damaged mirror."""
    temporary = target.with_name(f"tmp_copy_{target.name}")
    try:
        shutil.copy2(path, temporary)
        os.chmod(temporary, 0o400)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_failure(error: OSError, mirror_path: Path, source: str) -> str:
    """One sentence naming the real cause of a failed write into a mirror."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"The disk holding {mirror_path.parent} is full: copying new objects from {redact(source)} stopped "
                "(the mirror is kept as it was). Free space there (`gad-bot doctor` shows how much is left); "
                "the next sync picks up where this one would have.")
    return (f"Writing new objects from {redact(source)} into {mirror_path} failed ({error.strerror}); the mirror is kept "
            "as it was. Check that the data directory is writable, then sync again.")


def copy_local(source: str, mirror: pygit2.Repository, mirror_path: Path) -> bool:
    """Fetch from a local repository the way `git clone --mirror --local` does: hard-link the object
    files the mirror lacks (copy across file systems), then make every ref match the source's,
    deleting those the source no longer has (prune). libgit2's local transport would instead build
    a new pack with a delta search: minutes for a million commits, seconds for a thousand.
    A source that borrows objects (`objects/info/alternates`, as `git clone --shared`/`--reference`
    and forge object pools make) lends them to the mirror too, through the same object directories
    made absolute, as `git clone --local` does. False when not a local path: the caller fetches."""
    if "://" in source or not Path(source).expanduser().exists():
        return False
    try:
        origin = pygit2.Repository(str(Path(source).expanduser()))
    except (pygit2.GitError, KeyError):
        return False
    objects = Path(origin.path) / "objects"
    if share_alternates(objects, mirror_path / "objects"):
        mirror = pygit2.Repository(str(mirror_path))  # libgit2 reads alternates when it opens the repository
    # Packs first (with their .idx after the .pack), then loose objects, so that no ref below can
    # name an object the mirror cannot read yet.
    candidates = sorted(objects.glob("pack/pack-*.pack")) + sorted(objects.glob("pack/pack-*.idx")) + \
        [p for p in objects.glob("[0-9a-f][0-9a-f]/*") if len(p.name) == 38]
    added: list[Path] = []
    try:
        for path in candidates:
            target = mirror_path / "objects" / path.relative_to(objects)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                os.link(path, target)  # the same file as the source's: its mode is the source's
            except OSError:
                copy_whole(path, target)
            added.append(target)
    except OSError as error:
        # A full disk (or any write error) midway: take back what this fetch added, so the mirror is
        # exactly as it was; the sync is recorded as failed, with back-off, in one sentence.
        for target in reversed(added):
            target.unlink(missing_ok=True)
        raise SourceError(write_failure(error, mirror_path, source)) from None
    wanted = {name for name in origin.references if name.startswith("refs/")}
    targets = {name: origin.references[name].target for name in wanted}  # a symbolic ref (str) stays symbolic
    if not any(n.startswith("refs/") for n in mirror.references):
        # A new mirror: every direct ref in one packed-refs file, as `git clone --local` does; one
        # loose file per ref (libgit2's way) cost 0.3 s for git.git's 4,000 refs.
        direct = sorted((n, t) for n, t in targets.items() if not isinstance(t, str))
        text = "# pack-refs with: sorted \n" + "".join(f"{t} {n}\n" for n, t in direct)
        with os.fdopen(os.open(mirror_path / "packed-refs", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(text)  # private whatever the umask, as every file of the mirror
        mirror = pygit2.Repository(str(mirror_path))
    for name, target in targets.items():
        if name not in mirror.references or mirror.references[name].target != target:
            mirror.references.create(name, target, force=True)
    for name in [n for n in mirror.references if n.startswith("refs/") and n not in wanted]:
        mirror.references.delete(name)
    head = origin.references.get("HEAD")
    if head is not None and isinstance(head.target, str) and head.target in mirror.references:
        if mirror.references["HEAD"].target != head.target:
            mirror.set_head(head.target)
    else:
        guess_head(open_repository(mirror_path))
    return True


def share_alternates(source_objects: Path, mirror_objects: Path) -> bool:
    """Point the mirror at the object directories the source borrows from; True when that changed."""
    listed = source_objects / "info" / "alternates"
    borrowed: list[str] = []
    if listed.exists():
        for line in listed.read_text(errors="replace").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                borrowed.append(str((source_objects / line).resolve()))  # relative lines are relative to objects/
    target = mirror_objects / "info" / "alternates"
    wanted = "".join(f"{b}\n" for b in borrowed)
    current = target.read_text(errors="replace") if target.exists() else ""
    if current == wanted:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    if wanted:
        target.write_text(wanted)
    else:
        target.unlink()
    return True



def open_local(path: str) -> Path:
    """The git directory of a local repository (bare or not), or SourceError.

    A path inside a work tree (`report .` from a subdirectory) gives the repository's own git directory,
    so that the same repository is known whichever of its directories is named."""
    where = Path(path[len("file://"):] if path.lower().startswith("file://") else path).expanduser()
    if not where.exists():
        raise SourceError(f"`{path}` does not exist; give the path of a repository or of a bare mirror.")
    discovered = pygit2.discover_repository(str(where.resolve()))
    if not discovered:
        raise SourceError(f"`{path}` is not a git repository; give the path of a repository or of a bare mirror.")
    return Path(discovered)
