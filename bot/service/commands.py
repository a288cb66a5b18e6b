"""The track and sync commands typed in Slack, as typed jobs the sync worker processes run.

`serve` checks the command (the source policy, which forge an URL names) in the thread that answers,
then hands one of these to `SyncQueue.run_command`; a worker runs it with its own Engine
(`run_command`), sending its progress back, and its result (or a `CommandFailed`) comes back whole:
the fetch and the first index never run in the serving process. Without workers (a Bolt app in a
test) the same `run_command` runs in place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TrackRepo:
    """`/gad track URL` of one repository (the URL already checked against the source policy)."""

    url: str
    name: str | None


@dataclass(frozen=True)
class TrackOrg:
    """`/gad track https://FORGE/ORG`."""

    owner: object  # bot.store.forges.OwnerRef
    forks: bool


@dataclass(frozen=True)
class IndexPaths:
    """The changed paths of a repository just tracked (after its first answer)."""

    name: str


@dataclass(frozen=True)
class SyncRepos:
    """`/gad sync [NAME ...]` (every repository when none)."""

    names: tuple[str, ...]


Command = TrackRepo | TrackOrg | IndexPaths | SyncRepos


@dataclass(frozen=True)
class CommandFailed:
    """A typed command's GadError, as the worker saw it (its message and whether it names the server's insides)."""

    message: str
    operator_detail: bool


def run_command(engine, command: Command, notify: Callable[[object], None]) -> object:
    """A command typed in Slack, with `engine` (in a sync worker; in-process when serve has no workers):
    its result; progress goes to `notify` as ("fetch"|"index"|..., done, total) tuples or OrgProgress."""
    def progress(phase: str, done: int, total: int) -> None:
        notify((phase, done, total))

    if isinstance(command, TrackRepo):
        return engine.track(command.url, command.name, progress=progress, paths=False, guarded=True)
    if isinstance(command, TrackOrg):
        return engine.track_org(command.owner, forks=command.forks, guarded=True, progress=notify)
    if isinstance(command, IndexPaths):
        return engine.index_paths(command.name, progress)
    if isinstance(command, SyncRepos):  # several: in the lanes of the periodic sync (bot/engine/lanes.py)
        if len(command.names) > 1:
            return engine.sync_many([engine.repo(name) for name in command.names])
        return engine.sync(command.names)
    raise TypeError(f"not a command: {command!r}")
