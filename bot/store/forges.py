"""An owner's repositories, as a forge's REST API lists them (GitHub, GitLab, Gitea/Forgejo).

    forge = Forges.from_settings(settings).owner_of("https://github.com/acme")  # OwnerRef or None
    listing = list_owner(owner, ForgeClient(token=..., guard=policy))           # Listing of ForgeRepo rows

Everything an API answer says is a stranger's word: every request is bounded (bytes per page,
pages, repositories, time, rate-limit waits), a `next` page must stay on the API's own origin,
and a clone URL is only kept when it is on the forge's own host (and, for an organization typed
in Slack, passes the same source policy as a typed URL). With a `guard` (a source policy) every
connection goes through `bot.store.egress.GuardProxy`, exactly as a guarded git fetch does, so a
redirect or a DNS answer that changes cannot lead a request inside the operator's network.

The HTTP client is the stdlib's `http.client`, not a client library: what the guard needs is that
every connection is a CONNECT through the loopback proxy (http.client's `set_tunnel`), with the
body read in bounded pieces and redirects re-checked by hand; a library would add five packages
and still need those three things done the same way.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import GadError, SourceError

__all__ = ["ForgeError", "Forge", "Forges", "OwnerRef", "ForgeRepo", "Listing", "ForgeClient", "list_owner",
           "KNOWN_FORGES", "KINDS", "is_gitlab_group"]

KINDS = ("github", "gitlab", "gitea")
KNOWN_FORGES: dict[str, tuple[str, str]] = {  # host -> (kind, API base URL)
    "github.com": ("github", "https://api.github.com"),
    "gitlab.com": ("gitlab", "https://gitlab.com/api/v4"),
    "codeberg.org": ("gitea", "https://codeberg.org/api/v1"),  # Forgejo
    "gitea.com": ("gitea", "https://gitea.com/api/v1"),
}
_DEFAULT_API_PATH = {"github": "/api/v3", "gitlab": "/api/v4", "gitea": "/api/v1"}

MAX_PAGE_BYTES = 8 * 1024 * 1024  # one page of 100 repositories is ~0.5 MB on GitHub
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_PAGES = 1000
PER_PAGE = 100
REQUEST_TIMEOUT = 30.0  # seconds one socket operation may wait
# A forge that sends one byte a second answers every socket read in time; these bound the whole.
REQUEST_DEADLINE = 120.0  # seconds one request may take, headers and body (8 MB at 70 KB/s)
# Seconds one listing may take, its requests and its rate-limit waits together: a wait counted apart (5 waits of up
# to 300 s per request, 1,000 pages) held a sync worker for days (issue 31).
LISTING_DEADLINE = 1800.0
MAX_REDIRECTS = 3
MAX_RATE_WAIT = 300.0  # seconds one rate-limit wait may take; longer ones are said, not waited
MAX_RATE_WAITS = 5  # rate-limit waits in one listing (all its pages together)

Progress = Callable[[str, int, int], None]


class ForgeError(GadError):
    """A listing that could not be made or was refused; str() is one sentence for the user."""


@dataclass(frozen=True)
class Forge:
    host: str  # lower-case host, with `:port` when not the scheme's default
    kind: str  # github, gitlab or gitea
    api_base: str  # e.g. https://api.github.com, https://git.corp.example/api/v4 (no trailing slash)
    scheme: str = "https"  # of the web and clone URLs

    @property
    def hostname(self) -> str:
        return urllib.parse.urlsplit(f"{self.scheme}://{self.host}").hostname or self.host


@dataclass(frozen=True)
class OwnerRef:
    """An organization, group (with its subgroups) or user on a forge, as typed in a URL."""

    forge: Forge
    owner: str  # as typed (case kept): `acme`, `group/subgroup`
    url: str  # normalised web URL of the owner

    @property
    def key(self) -> str:
        """What identifies the owner on its forge (forges compare owners without case)."""
        return self.owner.lower()


@dataclass(frozen=True)
class ForgeRepo:
    """One repository of an owner's listing."""

    forge_id: str  # the forge's own id: stays when the repository is renamed or transferred
    full_name: str  # owner/name (GitLab: group/subgroup/name)
    clone_url: str
    archived: bool
    fork: bool
    empty: bool
    private: bool


@dataclass(frozen=True)
class Listing:
    owner: OwnerRef
    repos: tuple[ForgeRepo, ...]
    refused: tuple[tuple[str, str], ...] = ()  # (full name, why its clone URL is not fetched)
    waited_seconds: float = 0.0  # rate limits waited out


@dataclass(frozen=True)
class Forges:
    """The forges gad-bot knows: the well-known hosts plus the operator's GAD_FORGES."""

    by_host: dict[str, Forge] = field(default_factory=dict)

    @classmethod
    def from_entries(cls, entries) -> "Forges":
        """From GAD_FORGES entries (host, kind, api_base or None), on top of the known hosts."""
        forges = {host: Forge(host, kind, api) for host, (kind, api) in KNOWN_FORGES.items()}
        for host, kind, api in entries:
            scheme = "https"
            if api:
                api_scheme = urllib.parse.urlsplit(api).scheme
                scheme = api_scheme if api_scheme in ("http", "https") else "https"
            forges[host] = Forge(host, kind, (api or f"{scheme}://{host}{_DEFAULT_API_PATH[kind]}").rstrip("/"),
                                 scheme)
        return cls(forges)

    @classmethod
    def from_settings(cls, settings) -> "Forges":
        return cls.from_entries(getattr(settings, "forges", ()))

    def forge_for(self, host: str) -> Forge | None:
        return self.by_host.get(host.lower())

    def owner_of(self, url: str) -> OwnerRef | None:
        """The owner a URL names (`https://github.com/acme`), or None when it names a repository or no forge.

        GitHub and Gitea owners are one path segment; a GitLab group may have subgroups, so a GitLab
        URL of several segments is an owner only when the API says it is a group (`is_group`).
        """
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("https", "http") or parts.query or parts.fragment or "@" in parts.netloc:
            return None
        host = parts.netloc.lower()
        forge = self.by_host.get(host)
        if forge is None or parts.scheme != forge.scheme:
            return None
        segments = [s for s in parts.path.split("/") if s]
        if not segments or any(s in (".", "..") or not _SEGMENT.fullmatch(s) for s in segments):
            return None
        if segments[-1].endswith(".git"):
            return None
        if forge.kind in ("github", "gitea") and len(segments) != 1:
            return None
        owner = "/".join(segments)
        return OwnerRef(forge, owner, f"{forge.scheme}://{forge.host}/{owner}")


_SEGMENT = re.compile(r"[A-Za-z0-9_.\-]{1,255}")


# -- HTTP ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Answer:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes


class ForgeClient:
    """GET requests to one forge's API: bounded, authenticated, and (with `guard`) through the egress proxy."""

    def __init__(self, *, token: str | None = None, guard=None, timeout: float = REQUEST_TIMEOUT,
                 max_page_bytes: int = MAX_PAGE_BYTES, max_total_bytes: int = MAX_TOTAL_BYTES,
                 max_rate_wait: float = MAX_RATE_WAIT, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, progress: Progress | None = None,
                 deadline: float | None = None, listing_deadline: float | None = None):
        self.token, self.guard, self.timeout = token, guard, timeout
        self.deadline = REQUEST_DEADLINE if deadline is None else deadline
        self.listing_deadline = LISTING_DEADLINE if listing_deadline is None else listing_deadline
        self.spent = 0.0  # seconds spent in requests so far (rate-limit waits are in `waited`)
        self.max_page_bytes, self.max_total_bytes = max_page_bytes, max_total_bytes
        self.max_rate_wait, self._sleep, self._clock = max_rate_wait, sleep, clock
        self.progress = progress
        self.read_bytes = 0
        self.waited = 0.0
        self.waits = 0  # rate-limit waits so far, every request's
        self.requests = 0

    @property
    def used(self) -> float:
        """Seconds of the listing's deadline used: its requests and its rate-limit waits."""
        return self.spent + self.waited

    def headers_for(self, kind: str) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "gad-bot"}
        if self.token:
            if kind == "gitlab":
                headers["PRIVATE-TOKEN"] = self.token
            elif kind == "gitea":
                headers["Authorization"] = f"token {self.token}"
            else:
                headers["Authorization"] = f"Bearer {self.token}"
        if kind == "github":
            headers["Accept"] = "application/vnd.github+json"
            headers["X-GitHub-Api-Version"] = "2022-11-28"
        return headers

    def get(self, url: str, kind: str) -> _Answer:
        """GET `url`, following redirects on the same origin and waiting out rate limits: at most MAX_RATE_WAITS in
        the client's life (one listing), each within the listing's deadline."""
        while True:
            answer = self._get_following(url, kind)
            delay = _rate_limit_delay(answer, self._clock())
            if delay is None:
                return answer
            self.waits += 1
            if delay > self.max_rate_wait or self.waits > MAX_RATE_WAITS or self.used + delay > self.listing_deadline:
                until = time.strftime("%H:%M UTC", time.gmtime(self._clock() + delay))
                raise ForgeError(f"The forge's API rate limit for this token is spent until about {until}; "
                                 "track the organization again then (or give gad-bot a token with a higher limit "
                                 "in GAD_HTTPS_TOKENS).")
            if self.progress is not None:
                self.progress("rate limit", int(delay), 0)
            self.waited += delay
            self._sleep(delay)

    def _get_following(self, url: str, kind: str) -> _Answer:
        origin = _origin(url)
        for _ in range(MAX_REDIRECTS + 1):
            answer = self._request(url, kind)
            if answer.status not in (301, 302, 303, 307, 308):
                return answer
            location = urllib.parse.urljoin(url, answer.headers.get("location", ""))
            if _origin(location) != origin:
                raise ForgeError(f"The forge's API sent gad-bot to another address ({_shown(location)}); gad-bot "
                                 "only follows redirects within the API's own host, so check the forge's API URL "
                                 "in GAD_FORGES.")
            url = location
        raise ForgeError("The forge's API redirected too many times; check the forge's API URL in GAD_FORGES.")

    def _request(self, url: str, kind: str) -> _Answer:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ForgeError(f"{_shown(url)} is not an http(s) address; check the forge's API URL in GAD_FORGES.")
        if self.guard is not None and parts.scheme != "https":
            raise ForgeError("Organizations typed in Slack are listed over https:// only; track this one from the "
                             "command line, or give the forge an https:// API URL in GAD_FORGES.")
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        left = self.listing_deadline - self.used
        if left <= 0:
            raise ForgeError(f"Listing took more than {self.listing_deadline / 60:.0f} minutes of the forge's answers "
                             "and rate-limit waits; gad-bot gave up and nothing was tracked; try again later.")
        self.requests += 1
        started = time.monotonic()
        with self._connection(parts) as (conn, refusals), _Deadline(conn, min(self.deadline, left)) as deadline:
            try:
                conn.request("GET", path, headers=self.headers_for(kind))
                response = conn.getresponse()
                body = self._read(response)
            except (OSError, http.client.HTTPException) as error:
                if deadline.expired:
                    raise deadline.error(parts.hostname) from None
                if refusals:  # the proxy's sentence says more than "Tunnel connection failed: 403"
                    raise ForgeError(f"Listing the organization was stopped: {refusals[0]}") from None
                raise ForgeError(f"Could not reach the forge's API at {parts.hostname} ({_reason(error)}); "
                                 "try again later.") from None
            finally:
                self.spent += time.monotonic() - started
            if deadline.expired:  # a body cut short by the deadline must not be read as the whole answer
                raise deadline.error(parts.hostname)
            headers = {k.lower(): v for k, v in response.getheaders()}
            return _Answer(response.status, headers, body)

    def _read(self, response: http.client.HTTPResponse) -> bytes:
        length = response.getheader("content-length")
        if length and length.isdigit() and int(length) > self.max_page_bytes:
            raise ForgeError(f"The forge's API answered with {int(length) / 1e6:.0f} MB for one page; gad-bot reads "
                             f"at most {self.max_page_bytes // 1_000_000} MB a page, so nothing was tracked.")
        chunks, size = [], 0
        while True:
            chunk = response.read(65536)
            if not chunk:
                break
            size += len(chunk)
            self.read_bytes += len(chunk)
            if size > self.max_page_bytes or self.read_bytes > self.max_total_bytes:
                raise ForgeError(f"The forge's API answered with more than {self.max_page_bytes // 1_000_000} MB "
                                 "for one page; gad-bot stopped reading, so nothing was tracked.")
            chunks.append(chunk)
        return b"".join(chunks)

    @contextmanager
    def _connection(self, parts) -> Iterator[tuple[http.client.HTTPConnection, list[str]]]:
        """A connection to the URL's host; with a guard, a tunnel through the egress proxy (and its refusals)."""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        context = ssl.create_default_context() if parts.scheme == "https" else None
        if self.guard is None:
            conn = (http.client.HTTPSConnection(parts.hostname, port, timeout=self.timeout, context=context)
                    if context else http.client.HTTPConnection(parts.hostname, port, timeout=self.timeout))
            try:
                yield conn, []
            finally:
                conn.close()
            return
        from .egress import ConnectRefused, GuardProxy
        from .sources import check_connect

        def check(host: str, port: int) -> list[str]:
            try:
                return check_connect(host, port, self.guard)
            except SourceError as refused:
                raise ConnectRefused(str(refused)) from None

        with GuardProxy(check, connect_timeout=min(self.timeout, 60)) as proxy:
            conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, timeout=self.timeout, context=context)
            conn.set_tunnel(parts.hostname, port, headers={"Proxy-Authorization": proxy.authorization})
            try:
                yield conn, proxy.refusals
            finally:
                conn.close()


class _Deadline:
    """Ends a request that is still going after `seconds`, however slowly its bytes keep coming: the
    connection's socket is shut down, so the read waiting on it returns at once."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float):
        self.conn, self.seconds, self.expired = conn, seconds, False
        self._timer = threading.Timer(max(seconds, 0.001), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        self.expired = True
        sock = self.conn.sock
        if sock is not None:
            try:  # the plain socket's shutdown, under any TLS layer: a TLS reader in another thread wakes too
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def error(self, host: str | None) -> ForgeError:
        return ForgeError(f"The forge's API at {host} took more than {self.seconds:.0f} seconds to answer one request; "
                          "gad-bot gave up, so nothing was tracked; try again later.")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or ""), parts.port


def _shown(url: str) -> str:
    from .sources import redact

    text = redact(url)
    return (text[:80] + "\u2026") if len(text) > 80 else text


def _reason(error: BaseException) -> str:
    if isinstance(error, socket.timeout):
        return "no answer in time"
    if isinstance(error, ssl.SSLError):
        return "its certificate could not be verified"
    return type(error).__name__ if not str(error) else str(error)[:120]


def _rate_limit_delay(answer: _Answer, now: float) -> float | None:
    """Seconds to wait before asking again when the answer is a rate limit (403/429), else None."""
    if answer.status not in (403, 429):
        return None
    headers = answer.headers
    retry = headers.get("retry-after", "").strip()
    if retry.isdigit():
        return float(min(int(retry), 10**6))
    if headers.get("x-ratelimit-remaining", "").strip() == "0" or answer.status == 429:
        for name in ("x-ratelimit-reset", "ratelimit-reset"):
            reset = headers.get(name, "").strip()
            if reset.isdigit():
                value = int(reset)
                # GitHub and GitLab send the epoch second of the reset; some proxies send seconds left
                return float(min(max(1, value - int(now)) if value > 10**9 else max(1, value), 10**6))
        return 60.0 if answer.status == 429 else None
    return None


# -- listing ------------------------------------------------------------------------------------------

def list_owner(owner: OwnerRef, client: ForgeClient, *, max_repos: int = 5000,
               policy_check: Callable[[str], str] | None = None) -> Listing:
    """Every repository of `owner`, parsed into ForgeRepo rows (ForgeError with one sentence otherwise).

    `policy_check` (a guarded listing: bot.store.sources.check_remote_source with the workspace's
    policy) is asked about every clone URL besides the same-host rule.
    """
    forge = owner.forge
    lister = {"github": _github_pages, "gitlab": _gitlab_pages, "gitea": _gitea_pages}[forge.kind]
    repos: list[ForgeRepo] = []
    refused: list[tuple[str, str]] = []
    seen: set[str] = set()
    for page in lister(owner, client):
        for item in page:
            repo = _parse_repo(forge.kind, item)
            if repo is None or repo.forge_id in seen:
                continue
            seen.add(repo.forge_id)
            why = _clone_url_refusal(repo.clone_url, forge, policy_check, owner)
            if why:
                refused.append((repo.full_name, why))
                continue
            repos.append(repo)
            if len(repos) > max_repos:
                raise ForgeError(f"{owner.owner} has more than {max_repos:,} repositories, more than gad-bot tracks "
                                 "for one organization; nothing was tracked (the operator can raise "
                                 "GAD_FORGE_MAX_REPOS).")
        if client.progress is not None:
            client.progress("listing", len(repos), 0)
    return Listing(owner, tuple(repos), tuple(refused), client.waited)


def _json_page(answer: _Answer, what: str) -> list:
    if answer.status != 200:
        raise _status_error(answer, what)
    try:
        data = json.loads(answer.body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: arrays nested thousands deep
        raise ForgeError(f"The forge's API did not answer the listing of {what} with JSON gad-bot can read; check the "
                         "forge's API URL in GAD_FORGES.") from None
    if not isinstance(data, list):
        raise ForgeError(f"The forge's API answered the listing of {what} with something other than a list of repositories; "
                         "check the forge's kind and API URL in GAD_FORGES.")
    return data


def _status_error(answer: _Answer, what: str) -> ForgeError:
    if answer.status in (401, 403):
        return ForgeError(f"The forge refused to list the repositories of {what} (HTTP {answer.status}); check the "
                          "host's token in GAD_HTTPS_TOKENS and that it may read them.")
    if answer.status == 404:
        return ForgeError(f"The forge knows no organization, group or user {what}; check the spelling of its URL.")
    return ForgeError(f"The forge's API answered HTTP {answer.status} when listing the repositories of {what}; "
                      "try again later.")


def _owner_pages(client: ForgeClient, kind: str, what: str, candidates: list[str],
                 next_page: Callable[[_Answer, str, int], str | None]) -> Iterator[list]:
    """The pages of a listing: the first candidate URL the forge knows (an organization's, then a user's), then
    each next page, on the same origin, up to MAX_PAGES."""
    for url in candidates:
        answer = client.get(url, kind)
        if answer.status != 404:
            break
    origin = _origin(url)
    asked = {url}
    for page in range(1, MAX_PAGES + 1):
        items = _json_page(answer, what)
        yield items
        following = next_page(answer, url, len(items))
        if following is None:
            return
        if _origin(following) != origin:
            raise ForgeError(f"The forge's API pointed the next page of the listing of {what} at another address; "
                             "nothing was tracked.")
        if following in asked:
            raise ForgeError(f"The forge's API pointed the next page of the listing of {what} back at a page it had "
                             "already sent; nothing was tracked.")
        asked.add(following)
        url = following
        answer = client.get(url, kind)
    raise ForgeError(f"Listing {what} went on for more than {MAX_PAGES:,} pages; nothing was tracked.")


_LINK_NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?', re.I)


def _link_next(answer: _Answer, url: str, count: int) -> str | None:
    match = _LINK_NEXT.search(answer.headers.get("link", ""))
    return urllib.parse.urljoin(url, match.group(1)) if match else None


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _github_pages(owner: OwnerRef, client: ForgeClient) -> Iterator[list]:
    base, name = owner.forge.api_base, _quote(owner.owner)
    return _owner_pages(client, "github", f"`{owner.owner}`",
                        [f"{base}/orgs/{name}/repos?type=all&per_page={PER_PAGE}",
                         f"{base}/users/{name}/repos?type=owner&per_page={PER_PAGE}"], _link_next)


def _gitlab_pages(owner: OwnerRef, client: ForgeClient) -> Iterator[list]:
    base, name = owner.forge.api_base, _quote(owner.owner)
    candidates = [f"{base}/groups/{name}/projects?include_subgroups=true&with_shared=false"
                  f"&per_page={PER_PAGE}&order_by=id&sort=asc"]
    if "/" not in owner.owner:  # a user's namespace
        candidates.append(f"{base}/users/{name}/projects?per_page={PER_PAGE}&order_by=id&sort=asc")

    def next_page(answer: _Answer, url: str, count: int) -> str | None:
        following = answer.headers.get("x-next-page", "").strip()
        if following.isdigit():
            return _with_page(url, int(following))
        return _link_next(answer, url, count)  # keyset pagination sends only Link

    return _owner_pages(client, "gitlab", f"`{owner.owner}`", candidates, next_page)


def is_gitlab_group(owner: OwnerRef, client: ForgeClient) -> bool:
    """Whether a GitLab path of several segments is a group (else it is a project: a repository to track)."""
    answer = client.get(f"{owner.forge.api_base}/groups/{_quote(owner.owner)}", "gitlab")
    if answer.status == 404:
        return False
    if answer.status != 200:
        raise _status_error(answer, f"`{owner.owner}`")
    return True


GITEA_LIMIT = 50  # Gitea's default MAX_RESPONSE_ITEMS; a forge may cap lower, so the end is an empty page


def _gitea_pages(owner: OwnerRef, client: ForgeClient) -> Iterator[list]:
    base, name = owner.forge.api_base, _quote(owner.owner)

    seen = [0]  # rows so far: a forge may send fewer than `limit` a page (its MAX_RESPONSE_ITEMS)

    def next_page(answer: _Answer, url: str, count: int) -> str | None:
        seen[0] += count
        total = answer.headers.get("x-total-count", "").strip()
        if count == 0 or (total.isdigit() and seen[0] >= int(total)):
            return None
        return _with_page(url, _page_of(url) + 1)

    return _owner_pages(client, "gitea", f"`{owner.owner}`",
                        [f"{base}/orgs/{name}/repos?page=1&limit={GITEA_LIMIT}",
                         f"{base}/users/{name}/repos?page=1&limit={GITEA_LIMIT}"], next_page)


def _page_of(url: str) -> int:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    value = query.get("page", ["1"])[0]
    return int(value) if value.isdigit() else 1


def _with_page(url: str, page: int) -> str:
    parts = urllib.parse.urlsplit(url)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "page"] + [("page", str(page))]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def _under_owner(path: str, owner: OwnerRef) -> bool:
    """Whether a clone URL's path names a repository under `owner` (`/acme/web.git`; a GitLab group's subgroups
    included): the owner's segments first (any case, as forges compare them), then at least one more, and no
    `.`/`..` segment or %-escape that a server would resolve elsewhere (`/acme/../victim/web.git`)."""
    segments = path.split("/")[1:] if path.startswith("/") else []
    mine = owner.key.split("/")
    if "%" in path or len(segments) <= len(mine) or any(s in ("", ".", "..") for s in segments):
        return False
    return [s.lower() for s in segments[:len(mine)]] == mine


def _text(value, limit: int = 1000) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


def _parse_repo(kind: str, item) -> ForgeRepo | None:
    """One listed repository as a typed row; None for an entry that is not one (it is left out)."""
    if not isinstance(item, dict):
        return None
    forge_id = item.get("id")
    if isinstance(forge_id, bool) or not isinstance(forge_id, (int, str)) or len(str(forge_id)) > 64:
        return None
    if kind == "gitlab":
        full_name = _text(item.get("path_with_namespace"))
        clone_url = _text(item.get("http_url_to_repo"), 2000)
        fork = isinstance(item.get("forked_from_project"), dict)
        empty = bool(item.get("empty_repo"))
        private = item.get("visibility") not in ("public", None)
    else:
        full_name = _text(item.get("full_name"))
        clone_url = _text(item.get("clone_url"), 2000)
        fork = bool(item.get("fork"))
        # GitHub has no `empty` field; an empty repository is the one of size 0 (KB of git data)
        empty = bool(item.get("empty")) if kind == "gitea" else item.get("size") == 0
        private = bool(item.get("private")) or (kind == "gitea" and bool(item.get("internal")))
    if full_name is None or clone_url is None:
        return None
    return ForgeRepo(str(forge_id), full_name, clone_url, bool(item.get("archived")), fork, empty, private)


def _clone_url_refusal(url: str, forge: Forge, policy_check: Callable[[str], str] | None,
                       owner: OwnerRef | None = None) -> str | None:
    """Why a listed clone URL will not be fetched, or None when it may be."""
    if any(c <= " " or c == "\x7f" for c in url):  # urlsplit drops a newline silently; git would not
        return "its clone URL has spaces or control characters in it"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != forge.scheme or parts.netloc.lower() != forge.host or parts.query or parts.fragment:
        return (f"its clone URL ({_shown(url)}) is not on {forge.host}; gad-bot only fetches an organization's "
                "repositories from the forge itself")
    if owner is not None and not _under_owner(parts.path, owner):
        return (f"its clone URL ({_shown(url)}) is not under {owner.owner}; gad-bot only fetches the organization's "
                "own repositories")
    if policy_check is not None:
        try:
            policy_check(url)
        except SourceError as refused:
            return str(refused)
    return None
