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

Messages speak the face they are shown in: `command("repos")` is "`/gad repos`" in Slack and
"`gad-bot repos`" in a terminal (the CLI sets the face for its commands; Slack is the default).
`nearest(word, options)` is the one "did you mean" rule (case-insensitive, difflib).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Which face a message is for: "slack" or "terminal". A context variable, so a CLI command and
# Slack requests served by threads of the same process (tests) never see each other's setting.
_FACE: ContextVar[str] = ContextVar("gad_face", default="slack")

# Commands the CLI has under the same name; the others exist only in Slack.
_CLI_COMMANDS = {"help", "repos", "track", "untrack", "sync", "report"}
_SLACK_ONLY = {"subscribe", "unsubscribe", "subscriptions", "digest", "project", "projects"}


@contextmanager
def face(name: str) -> Iterator[None]:
    """Word messages for `name` ("slack" or "terminal") inside the block."""
    token = _FACE.set(name)
    try:
        yield
    finally:
        _FACE.reset(token)


def set_face(name: str) -> None:
    """Word messages for `name` from now on, in this context (the CLI's whole run)."""
    _FACE.set(name)


def current_face() -> str:
    return _FACE.get()


def command(text: str) -> str:
    """A command to type, as code, in the current face: `/gad repos` or `gad-bot repos`."""
    if _FACE.get() != "terminal":
        return f"`/gad {text}`"
    head = text.split(" ", 1)[0]
    if head in _SLACK_ONLY:
        return f"`/gad {text}` in Slack"
    if head == "help":
        return "`gad-bot help`"
    if head in _CLI_COMMANDS:
        return f"`gad-bot {text}`"
    return f"`gad-bot report {text}`"


def nearest(word: str, options: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The options closest to `word`, ignoring case (a repository `c` is the nearest to `C`)."""
    by_folded: dict[str, str] = {}
    for option in options:
        by_folded.setdefault(option.casefold(), option)
    folded = word.casefold()
    if folded in by_folded:
        return [by_folded[folded]]
    return [by_folded[m] for m in difflib.get_close_matches(folded, list(by_folded), n=n, cutoff=cutoff)]


def literal(value: str) -> str:
    """A name someone else wrote (typed, or a ref in a repository) as a code span in a message, so no
    mrkdwn formatting (`*_~`) applies to it: a backtick in it (refs may hold one) would end the span
    early, so it becomes U+02CB, which looks alike and cannot."""
    return "`" + value.replace("`", "\u02cb") + "`"


def did_you_mean(options: list[str], fmt: str = "`{}`") -> str:
    """'did you mean `a`?' or 'did you mean `a`, `b` or `c`?' ('' for none)."""
    if not options:
        return ""
    shown = [fmt.format(o) for o in options]
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"did you mean {listed}?"


class GadError(Exception):
    """Base class: the message is written for the person who typed the command.

    `operator_detail`: the message names the server's insides (a path on it, the operator's files
    and their lines), which are the operator's business: a member is shown `for_member`'s sentence
    and a reference id instead, and the detail is logged under that id; admins see the message.
    """

    operator_detail: bool = False

    def __init__(self, *args, operator_detail: bool | None = None):
        super().__init__(*args)
        if operator_detail is not None:
            self.operator_detail = operator_detail


class QueryError(GadError):
    """The command text does not follow the grammar."""


class UnknownRepoError(GadError):
    """A name that is neither a tracked repository nor a project."""

    def __init__(self, name: str, known: list[str] | tuple[str, ...] = (), *, command_word: str | None = None):
        self.name = name
        self.known = tuple(known)
        self.suggestions = nearest(name, known, cutoff=0.5)
        self.command_word = command_word
        if command_word:
            # the first word of `/gad subscibe web`: a mistyped command, not a repository
            also = f" (or the repository {did_you_mean(self.suggestions)[len('did you mean '):-1]})" \
                if self.suggestions else ""
            super().__init__(f"`{name}` is not a tracked repository or project; did you mean the command "
                             f"{command(command_word)}{also}?")
            return
        if self.suggestions:
            hint = did_you_mean(self.suggestions)
        elif known:
            hint = f"{command('repos')} lists the tracked ones."
        else:
            hint = f"nothing is tracked yet; track one first with {command('track URL')}."
        super().__init__(f"No repository or project named `{name}` is tracked; {hint}")


class SourceError(GadError):
    """A source that the policy refuses, or that is not a git repository."""


class MirrorError(GadError):
    """git failed to clone, fetch or read a mirror."""


class ConfigError(GadError):
    """A setting is missing or malformed."""

    operator_detail = True  # it names the operator's settings and files


MEMBER_SENTENCE = ("Something on the gad-bot server needs the operator's attention before this can be answered; "
                   "tell an admin the reference below.")


def for_member(error: GadError) -> tuple[str, str | None]:
    """What someone who is not an admin is shown for `error`: its message, or (when it carries
    operator detail) one sentence and a reference id, the detail logged under that id."""
    if not error.operator_detail:
        return str(error), None
    import logging
    import uuid

    reference = uuid.uuid4().hex[:8]
    logging.getLogger(__name__).warning("%s (reference %s)", error, reference, extra={"reference": reference})
    return MEMBER_SENTENCE, reference


class PermissionDeniedError(GadError):
    """The user is not allowed to run this command."""


class DigestError(GadError):
    """A digest could not be built or delivered."""
