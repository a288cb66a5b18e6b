"""Errors gad-bot raises on purpose. Each message is one sentence a person can act on.

    GadError                 -- base; str(error) is safe to show to a user
    +-- QueryError           -- the typed command does not parse (bad token, bad date, ...)
    +-- UnknownRepoError     -- a repository or project name that is not tracked
    +-- SourceError          -- a source URL or path that may not or cannot be mirrored
    +-- MirrorError          -- git could not clone, fetch or read a mirror
    +-- ConfigError          -- a setting in the environment is missing or wrong
    +-- PermissionDeniedError-- the user may not run this command
    +-- DigestError          -- a digest could not be built or delivered

Anything else that escapes is a bug: faces log it with a reference id and tell the
user only that id.
"""

from __future__ import annotations

import difflib


class GadError(Exception):
    """Base class: the message is written for the person who typed the command."""


class QueryError(GadError):
    """The command text does not follow the grammar."""


class UnknownRepoError(GadError):
    """A name that is neither a tracked repository nor a project."""

    def __init__(self, name: str, known: list[str] | tuple[str, ...] = ()):
        self.name = name
        self.suggestions = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
        if self.suggestions:
            hint = "did you mean " + ", ".join(f"`{s}`" for s in self.suggestions) + "?"
        elif known:
            hint = "type `repos` to list the tracked ones."
        else:
            hint = "nothing is tracked yet; track one first with `track URL`."
        super().__init__(f"No repository or project named `{name}` is tracked; {hint}")


class SourceError(GadError):
    """A source that the policy refuses, or that is not a git repository."""


class MirrorError(GadError):
    """git failed to clone, fetch or read a mirror."""


class ConfigError(GadError):
    """A setting is missing or malformed."""


class PermissionDeniedError(GadError):
    """The user is not allowed to run this command."""


class DigestError(GadError):
    """A digest could not be built or delivered."""
