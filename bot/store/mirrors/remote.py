"""The remote side of a fetch: the operator's credentials (for the host a source names, and only that host), limits
on time and size, progress (libgit2's remote callbacks), and libgit2's network timeouts."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

import pygit2

from ...errors import MirrorError
from ..sources import redact

Progress = Callable[[str, int, int], None]  # (phase, done, total)
GiveUp = Callable[[str], NoReturn]  # ends the fetch's process with this sentence, never returning to libgit2


def untrusted_certificate(url: str, host: str) -> str:
    """The sentence for a TLS certificate libgit2 could not verify on a connection of a fetch of `url`."""
    return (f"Fetching from {redact(url)} failed: the TLS certificate of {host} could not be verified (signed by "
            "an authority gad-bot does not trust, expired, or made for another name); if the forge's certificate "
            "comes from its own authority, the operator points SSL_CERT_FILE, in gad-bot's environment, at a file "
            "holding that authority's certificate.")


class RemoteCallbacks(pygit2.RemoteCallbacks):
    """Credentials from the operator's settings, progress, and limits on time and size."""

    def __init__(self, url: str, https_tokens: dict[str, str], ssh_key: Path | None,
                 progress: Progress | None, deadline: float | None, max_bytes: int | None,
                 give_up: GiveUp | None = None):
        super().__init__()
        self._url, self._tokens, self._ssh_key = url, https_tokens, ssh_key
        self._progress, self._deadline, self._max_bytes = progress, deadline, max_bytes
        self._give_up = give_up
        self._tried_credentials = False

    def certificate_check(self, certificate, valid, host):
        if valid or origin_of(self._url)[0] == "ssh":  # libssh2's host keys are never "valid" here: its own check
            raise pygit2.Passthrough
        sentence = untrusted_certificate(self._url, host.decode("utf-8", "replace") if isinstance(host, bytes)
                                         else str(host))
        if self._give_up is not None:
            # Through a proxy tunnel (a guarded fetch), libgit2 1.9 answers a rejected certificate by closing
            # and freeing the tunnel's socket, then closing the TLS session on it: its close_notify is written
            # to the freed socket, a poll on fd -1 that never ends. So this connection is never handed back.
            self._give_up(sentence)
        raise MirrorError(sentence)

    def credentials(self, url, username_from_url, allowed_types):
        if self._tried_credentials:  # libgit2 asks again after a refusal; do not loop forever
            raise MirrorError("The remote refused the configured credentials; check GAD_HTTPS_TOKENS or GAD_SSH_KEY.")
        self._tried_credentials = True
        if origin_of(url) != origin_of(self._url):
            # a redirect led elsewhere: a host's token goes to the source that names that host,
            # never to a stranger's source that sends the fetch there (a confused deputy)
            raise MirrorError(f"{redact(self._url)} sent the fetch to another host that asks for credentials; "
                              "gad-bot gives a host's token only to sources that name that host: track that "
                              "host's URL instead.")
        host = (urlsplit(url).hostname or "").lower()
        if allowed_types & pygit2.enums.CredentialType.USERPASS_PLAINTEXT and host in self._tokens:
            return pygit2.UserPass("gad-bot", self._tokens[host])
        if allowed_types & pygit2.enums.CredentialType.SSH_KEY and self._ssh_key:
            return pygit2.Keypair(username_from_url or "git", str(self._ssh_key) + ".pub", str(self._ssh_key), "")
        raise MirrorError("The repository needs credentials; the operator can set GAD_HTTPS_TOKENS "
                          "(HTTPS) or GAD_SSH_KEY (ssh) for its host.")

    def transfer_progress(self, stats):
        # libgit2 calls this once per object; look at the clock and report only every 512 calls.
        self._calls = getattr(self, "_calls", 0) + 1
        if self._calls % 512 and stats.received_objects != stats.total_objects:
            return
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise MirrorError("The fetch took longer than GAD_FETCH_TIMEOUT_SECONDS allows; try again later "
                              "or raise the limit.")
        if self._max_bytes is not None and stats.received_bytes > self._max_bytes:
            raise MirrorError("The repository is larger than GAD_MAX_MIRROR_MB allows; the operator can raise the limit.")
        if self._progress:
            self._progress("fetch", stats.received_objects + stats.indexed_deltas,
                           stats.total_objects + stats.total_deltas)


def has_credentials(url: str, https_tokens: dict[str, str], ssh_key: Path | None) -> bool:
    """Whether fetches of `url` may carry the operator's credentials (a token for its host, the ssh key, or a
    password in the URL): what they bring may be private, so such a repository starts visible to admins only."""
    scheme, host, _ = origin_of(url)
    if scheme == "ssh":
        return ssh_key is not None
    if scheme in ("https", "http"):
        return host in https_tokens or bool(urlsplit(url).password or urlsplit(url).username)
    return False


def origin_of(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of a URL (the port spelled out), the unit credentials belong to."""
    scp = re.fullmatch(r"(?:[^@/]+@)?([^/:]+):(?!//).*", url)  # git@host:path, ssh's short form
    if scp and "://" not in url:
        return "ssh", scp.group(1).lower(), 22
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or {"https": 443, "http": 80, "ssh": 22}.get(scheme)


@dataclass
class FetchLimits:
    https_tokens: dict[str, str]
    ssh_key: Path | None = None
    timeout_seconds: int | None = None
    max_bytes: int | None = None


def set_network_timeouts(seconds: int) -> None:
    """Make a stalled server fail instead of hanging forever (process-wide libgit2 options)."""
    try:
        pygit2.option(pygit2.enums.Option.SET_SERVER_CONNECT_TIMEOUT, min(seconds, 60) * 1000)
        pygit2.option(pygit2.enums.Option.SET_SERVER_TIMEOUT, min(seconds, 300) * 1000)
    except (AttributeError, ValueError, pygit2.GitError):  # older libgit2: no such options
        pass
