"""The `.mailmap`: the blob on a mirror's default branch, and `Mailmap`, which resolves identities as git does."""

from __future__ import annotations

import pygit2

from ...metric import ascii_lower
from .refs import head_ref


def mailmap_blob(repo: pygit2.Repository) -> tuple[str | None, bytes]:
    """The `.mailmap` on the default branch's tree: (blob id, contents), or (None, b'')."""
    head = head_ref(repo)
    if not head:
        return None, b""
    try:
        tree = repo.references[head].peel(pygit2.Commit).tree
        entry = tree[".mailmap"]
        blob = repo[entry.id]
    except (KeyError, pygit2.GitError, ValueError):
        return None, b""
    if not isinstance(blob, pygit2.Blob):
        return None, b""
    return str(blob.id), blob.data


class Mailmap:
    """A parsed .mailmap; `resolve(name, email)` gives the canonical (name, email).

    git matches mailmap names and e-mails case-insensitively (ASCII letters); libgit2 1.9 matches
    e-mails exactly, so `<new@x> <OLD@X>` would miss commits by old@x. Both sides are therefore
    ASCII-lower-cased before libgit2 sees them; what comes back is lower-case, which is all the
    metric uses (people are lower-cased e-mails, bots are matched case-insensitively).
    """

    def __init__(self, data: bytes):
        self._map = pygit2.Mailmap.from_buffer(data.lower()) if data else None  # bytes.lower(): ASCII only

    def resolve(self, name: str, email: str) -> tuple[str, str]:
        if self._map is None:
            return name, email
        try:
            return self._map.resolve(ascii_lower(name), ascii_lower(email))
        except (ValueError, pygit2.GitError):
            return name, email

