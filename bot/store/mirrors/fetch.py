"""A fetch in this process: every ref with prune through libgit2, each connection of a Slack-typed source through
the egress proxy, the failure in one sentence, then HEAD on the remote's default branch. `fetchchild` runs it in a
child process; `Mirror.fetch` decides between that and a local copy."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pygit2
from pygit2.enums import FetchPrune

from ...errors import MirrorError, SourceError
from ..sources import SourcePolicy, redact
from .dirs import describe
from .failures import GONE_UPSTREAM, is_local_damage, says_no_such_repository
from .refs import guess_head
from .remote import FetchLimits, GiveUp, Progress, RemoteCallbacks

if TYPE_CHECKING:
    from ..egress import GuardProxy


def fetch_here(repo: pygit2.Repository, limits: FetchLimits, progress: Progress | None = None,
               guard: SourcePolicy | None = None, give_up: GiveUp | None = None) -> None:
    """The fetch itself, in this process (the child's half of `Mirror.fetch`).

    `give_up(sentence)` ends this process with that sentence (the fetch child's way to fail): a guarded fetch
    whose server's certificate is rejected calls it instead of handing the connection back to libgit2, which
    would hang closing the proxy's tunnel (`RemoteCallbacks.certificate_check`). An unguarded fetch needs none:
    without a proxy libgit2 closes a rejected connection cleanly, and the sentence is raised."""
    remote = repo.remotes["origin"]
    # libgit2's tag auto-following would never move an existing tag; the mirror refspec moves
    # every ref, tags included, so auto-following is switched off.
    config = repo.config
    if "remote.origin.tagopt" not in config or config["remote.origin.tagopt"] != "--no-tags":
        config["remote.origin.tagopt"] = "--no-tags"
        remote = repo.remotes["origin"]  # re-read with the new setting
    deadline = time.monotonic() + limits.timeout_seconds if limits.timeout_seconds else None

    def callbacks() -> RemoteCallbacks:  # one per connection: each may ask for credentials once
        return RemoteCallbacks(remote.url, limits.https_tokens, limits.ssh_key, progress, deadline, limits.max_bytes,
                               give_up if proxy is not None else None)

    with _guarded(remote.url, guard, limits) as proxy:
        via = proxy.url if proxy is not None else None
        try:
            remote.fetch(callbacks=callbacks(), prune=FetchPrune.PRUNE, proxy=via)
            heads = remote.list_heads(callbacks=callbacks(), proxy=via)
        except (MirrorError, pygit2.GitError, OSError, ValueError, KeyError) as error:
            if guard is not None and urlsplit(remote.url).scheme == "ssh":
                # one sentence whatever libssh2 met: its words would tell an open port from a
                # closed one, or an ssh server from another, to whoever typed the address
                raise MirrorError(f"Fetching from {redact(remote.url)} over ssh failed: the host could "
                                  "not be reached, or refused the connection or gad-bot's key (GAD_SSH_KEY); "
                                  "check the address, or ask the operator.") from None
            if isinstance(error, MirrorError):
                raise
            if proxy is not None and proxy.refusals:  # libgit2 itself only says "unexpected status code: 403"
                raise MirrorError(f"Fetching from {redact(remote.url)} was stopped where a redirect or a "
                                  f"DNS answer led it: {proxy.refusals[0]}") from None
            if is_local_damage(error):
                raise MirrorError(f"The mirror is damaged ({describe(error)}); re-clone it with "
                                  "`gad-bot sync --reclone NAME`.") from None
            if says_no_such_repository(error):
                raise MirrorError(f"Fetching from {redact(remote.url)} failed: {GONE_UPSTREAM} "
                                  f"({describe(error)}): it was deleted or moved, or gad-bot's credentials no "
                                  "longer read it; untrack it, or track its new URL.") from None
            raise MirrorError(f"Fetching from {redact(remote.url)} failed: {describe(error)}.") from None
    for head in heads:
        if head.name == "HEAD" and head.symref_target and head.symref_target in repo.references:
            if repo.references["HEAD"].target != head.symref_target:
                repo.set_head(head.symref_target)
            break
    else:
        guess_head(repo)


@contextmanager
def _guarded(url: str, guard: SourcePolicy | None, limits: FetchLimits) -> Iterator["GuardProxy | None"]:
    """The proxy every connection of a guarded https:// fetch goes through (None when unguarded).

    ssh:// has no redirects, and libssh2 takes no proxy: its host is checked here, once, before
    the fetch, but libssh2 resolves it again itself, so only hosts the operator named exactly in
    GAD_ALLOWED_HOSTS are fetched over ssh from Slack (see docs/operations.md).
    """
    if guard is None:
        yield None
        return
    from ..egress import ConnectRefused, GuardProxy
    from ..sources import check_connect

    parts = urlsplit(url)
    if parts.scheme not in ("https", "ssh") or not parts.hostname:
        raise MirrorError(f"{redact(url)} was typed in Slack, where only https:// (and ssh:// with GAD_SSH_KEY) "
                          "sources are allowed; track it again from the command line if it is meant to be fetched.")

    def check(host: str, port: int) -> list[str]:
        try:
            return check_connect(host, port, guard)
        except SourceError as refused:
            raise ConnectRefused(str(refused)) from None

    if parts.scheme == "ssh":
        from ..sources import check_ssh_host

        try:
            check_ssh_host(parts.hostname, parts.port or 22, guard)
        except SourceError as refused:
            raise MirrorError(f"Fetching from {redact(url)} was stopped: {refused}") from None
        yield None
        return
    connect_timeout = min(limits.timeout_seconds, 60) if limits.timeout_seconds else 60
    with GuardProxy(check, connect_timeout=connect_timeout) as proxy:
        yield proxy
