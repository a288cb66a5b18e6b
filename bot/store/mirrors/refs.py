"""A mirror's refs: HEAD (the default branch), every ref peeled to the commit it names, branches."""

from __future__ import annotations

import pygit2

from ...errors import MirrorError
from .dirs import describe

DEFAULT_SCOPE_PREFIXES = ("refs/heads/", "refs/tags/")


def head_ref(repo: pygit2.Repository) -> str | None:
    """The default branch's full ref name, if HEAD points at an existing branch."""
    try:
        head = repo.references["HEAD"]
    except KeyError:
        return None
    target = head.target
    if isinstance(target, str):
        return target if target in repo.references else None
    return None  # detached HEAD: no default branch


def guess_head(repo: pygit2.Repository) -> None:
    """Without an advertised HEAD, keep HEAD on an existing branch (main, then master, then any)."""
    current = head_ref(repo)
    if current:
        return
    branches = sorted(r for r in repo.references if r.startswith("refs/heads/"))
    for candidate in ("refs/heads/main", "refs/heads/master", *branches):
        if candidate in repo.references:
            repo.set_head(candidate)
            return


def ref_tips(repo: pygit2.Repository) -> dict[str, bytes]:
    """Every ref under refs/ peeled to the commit it names.

    Refs that lead to a tree or a blob are skipped, as `git log --all` skips them (git.git's
    `junio-gpg-pub` tag names a blob, the kernel's `v2.6.11-tree` a tree); a tag of a tag is
    followed to the end. A ref naming an object that cannot be read means a damaged mirror,
    never "this ref is gone": treating it as gone would silently drop history from every figure.
    """
    tips: dict[str, bytes] = {}
    for name in repo.references:
        if not name.startswith("refs/"):
            continue
        try:
            target = repo.references[name].resolve().target
        except (KeyError, pygit2.GitError):
            continue  # a dangling symbolic ref names nothing
        commit = peel_to_commit(repo, name, target)
        if commit is not None:
            tips[name] = commit
    head = head_ref(repo)
    if head and head in tips:
        tips["HEAD"] = tips[head]
    return tips


def peel_to_commit(repo: pygit2.Repository, name: str, target: pygit2.Oid) -> bytes | None:
    """The commit a ref's object leads to through any number of tags; None for a tree or blob."""
    seen = 0
    while True:
        try:
            obj = repo[target]
        except (KeyError, pygit2.GitError, ValueError) as error:
            raise MirrorError(f"The mirror is damaged: {name} points at an object it cannot read "
                              f"({describe(error)}); re-clone it with `gad-bot sync --reclone NAME`.") from None
        if isinstance(obj, pygit2.Commit):
            return obj.id.raw
        if not isinstance(obj, pygit2.Tag):
            return None  # a tree or a blob: no history behind it
        seen += 1
        if seen > 64:  # a cycle of tags cannot be written, but a damaged object store can fake one
            raise MirrorError(f"The mirror is damaged: {name} is a chain of more than 64 tags; re-clone it "
                              "with `gad-bot sync --reclone NAME`.")
        target = obj.target


def branch_tip(repo: pygit2.Repository, branch: str) -> bytes | None:
    """The commit a branch (short or full name, or HEAD) points at, or None."""
    tips = ref_tips(repo)
    for candidate in (branch, f"refs/heads/{branch}", f"refs/remotes/origin/{branch}", f"refs/tags/{branch}"):
        if candidate in tips:
            return tips[candidate]
    return None


def branches(repo: pygit2.Repository) -> list[str]:
    return sorted(r.removeprefix("refs/heads/") for r in repo.references if r.startswith("refs/heads/"))
