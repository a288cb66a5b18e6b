"""Forge webhooks: `POST /hooks/github`, `/hooks/gitlab`, `/hooks/gitea` schedule a sync of exactly the
repository that changed, so a push is in reports within seconds instead of at the next periodic sync.

Each forge host has its own secret (GAD_WEBHOOK_SECRETS, `HOST=SECRET`). A request passes the gate
in this order, and is answered by the first step it fails, with one log line and nothing of its body:

1. size: no Content-Length, or more than MAX_BODY_BYTES -> 411/413, before a byte is read;
2. signature, in constant time, against each configured host's secret -> 401 when none matches.
   GitHub signs the body (X-Hub-Signature-256: `sha256=` + hex HMAC-SHA256), Gitea and Forgejo send
   the same HMAC as bare hex (X-Gitea-Signature, X-Forgejo-Signature; newer ones X-Hub-Signature-256
   too), GitLab sends the secret itself (X-Gitlab-Token). The host whose secret matched is the only
   host the request may speak for: a repository of another host in its body -> 403;
3. delivery id (X-GitHub-Delivery, X-Gitlab-Event-UUID, X-Gitea-Delivery) missing -> 400; seen
   before (kept in the index, RETAIN_DELIVERIES) -> 409. The forges' signatures cover no time, so
   the id is what makes a captured delivery worthless;
4. the body as the forge documents it, boiled down to a `HookEvent` -> 400 when it is not that;
5. a request that asks for nothing (a ping, an event that is not a push or a repository's, a repository
   gad-bot does not track) is answered here and keeps nothing: no delivery id, no digest. Replaying it
   does nothing, so there is nothing to refuse, and keeping its id would let one captured body, replayed
   under fresh ids, grow the index a row a request (issue 31: a ping, +376 KB for 1,000 replays, kept 30
   days). Only when the host was last heard from is kept, one row per host of GAD_WEBHOOK_SECRETS
   (`last_heard`, for doctor), written at most once a minute;
6. the same body, from the same host, accepted within REPEATED_BODY_SECONDS under another delivery id
   (its SHA-256 kept in the index) -> 200 "duplicate", nothing done: the id is the sender's to choose, so
   a captured body replayed under a fresh one would otherwise sync again. Its id is not kept (replays under
   fresh ids would grow the index a row a request). For a tracked repository a body is a duplicate of the
   one accepted last only: GitLab's push body holds no time, so a push that moves a branch back where an
   earlier push had moved it (A->B, B->A, A->B) repeats that body; it syncs, and keeps no delivery id either.

Then: a push (or branch/tag created or deleted, or a repository event) for a tracked repository
schedules a sync of it (`SyncQueue.request_repo`: at once, and a burst of pushes during it is one more sync); a
repository of an organization gad-bot tracks but not the repository itself (created, renamed,
transferred, or a first push in a GitLab group) schedules a sync of the organization, which tracks
the new one. Anything else is answered 202 and ignored. Accepted requests answer 202 at once: the
sync runs in the sync worker processes (bot/service/syncs.py), never in the thread that answers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

from ..config import Settings
from ..faults import is_disk_full

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # waitress's cap too; a push event is tens of KB (20 commits at most in it)
RETAIN_DELIVERIES = timedelta(days=30)  # the forges offer redelivery of the last few days' deliveries
# A push's body names its commits (before, after), so the same bytes again within the hour are that push again,
# whatever the delivery id says: a replay, or the forge resending it. After that, a sync costs no more than the
# periodic one's.
REPEATED_BODY_SECONDS = 3600
MATCH_CACHE_SECONDS = 5.0  # how long the table of tracked repositories' URLs is reused between requests
FORGES = ("github", "gitlab", "gitea")
HEARD_KEY = "webhook_heard:"  # meta: + a host of GAD_WEBHOOK_SECRETS -> when it was last heard from (ISO 8601, UTC)
HEARD_EVERY = timedelta(minutes=1)

_DELIVERY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_SCP = re.compile(r"(?:[^@/:]+@)?([A-Za-z0-9.-]+):(?!//)(.+)")


@dataclass(frozen=True)
class HookEvent:
    """What a verified webhook says, whatever forge sent it."""

    forge: str  # github | gitlab | gitea
    kind: str  # "push" (refs changed), "repository" (created, renamed, deleted...), "ping", "other"
    action: str  # the forge's own word for a repository event ("created", "project_create", ...), else ""
    delivery: str
    host: str  # lower-case host name of the repository (no port): the key of GAD_WEBHOOK_SECRETS
    owner: str  # the organization, group (with its subgroups) or user the repository belongs to
    urls: tuple[str, ...]  # the repository's URLs as the forge names them (clone, web, ssh, old names)
    site: str = ""  # host[:port] of its web URLs, as GAD_FORGES names a forge (the port only when not the default)


@dataclass(frozen=True)
class HookAnswer:
    status: int
    text: str


def repo_key(url: str) -> tuple[str, str] | None:
    """(host, path) naming a repository on a forge, the same for its https, ssh, scp-like and web URLs."""
    if not isinstance(url, str) or not url or len(url) > 2048:
        return None
    if "://" in url:
        parts = urlsplit(url)
        host, path = (parts.hostname or "").lower(), parts.path
    else:
        scp = _SCP.fullmatch(url)
        if scp is None:
            return None
        host, path = scp.group(1).lower(), scp.group(2)
    path = path.strip("/").lower()
    if path.endswith(".git"):
        path = path[:-4]
    return (host, path) if host and path else None


# ----------------------------------------------------------------------------- the body, per forge

def _get(mapping, *keys) -> str:
    """A string field deep in a JSON object ("" when absent or not a string: the body is a stranger's)."""
    value = mapping
    for key in keys:
        if not isinstance(value, dict):
            return ""
        value = value.get(key)
    return value if isinstance(value, str) and len(value) <= 2048 else ""


def site_of(url: str) -> str:
    """`host[:port]` of an http(s) URL, lower-case, the port only when it is not the scheme's default ("" otherwise)."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or len(url) > 2048:
        return ""
    parts = urlsplit(url)
    try:
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:  # a port that is not a number
        return ""
    if not host:
        return ""
    return host if port is None or port == {"http": 80, "https": 443}[parts.scheme] else f"{host}:{port}"


def _host_of(urls: tuple[str, ...]) -> str:
    for url in urls:
        key = repo_key(url)
        if key:
            return key[0]
    return ""


def _event(forge: str, kind: str, action: str, delivery: str, owner: str, urls: list[str], host: str = "") -> HookEvent:
    kept = tuple(u for u in urls if u)
    host = host or _host_of(kept)
    # the site (which organization may be synced) comes from a URL on the host the signature is checked
    # against, never from another URL of the body: `clone_url` on one host and `html_url` on another
    # would let one host's secret speak for the other's organizations
    site = next((site_of(u) for u in kept if site_of(u) and (repo_key(u) or ("",))[0] == host), "")
    return HookEvent(forge, kind, action, delivery, host, owner.lower(), kept, site)


def _github_like(forge: str, event: str, payload: dict, delivery: str) -> HookEvent:
    """GitHub's payloads, and Gitea's/Forgejo's (which follow them): `repository` with its URLs."""
    repository = payload.get("repository")
    urls = [_get(repository, k) for k in ("clone_url", "html_url", "ssh_url", "git_url")]
    full_name = _get(repository, "full_name")
    owner = (_get(payload, "organization", "login") or _get(payload, "organization", "username")
             or _get(repository, "owner", "login") or _get(repository, "owner", "username")
             or full_name.rpartition("/")[0])
    action = _get(payload, "action")
    if event == "repository":
        old = _get(payload, "changes", "repository", "name", "from")  # GitHub's rename: the old name too
        if old and full_name and "/" in full_name:
            base = _get(repository, "html_url")
            if base:
                urls.append(base.rsplit("/", 1)[0] + "/" + old)
        return _event(forge, "repository", action, delivery, owner, urls)
    if event in ("push", "create", "delete"):  # create/delete: a branch or tag appeared or went
        return _event(forge, "push", "", delivery, owner, urls)
    if event == "ping":
        return _event(forge, "ping", "", delivery, owner, urls)
    return _event(forge, "other", event[:40], delivery, owner, urls)


def _gitlab(event: str, payload: dict, delivery: str, instance: str) -> HookEvent:
    """GitLab's Push Hook / Tag Push Hook (project hooks and group hooks) and System Hook project events."""
    project = payload.get("project")
    urls = [_get(project, k) for k in ("git_http_url", "git_ssh_url", "web_url")]
    urls += [_get(payload, "repository", k) for k in ("git_http_url", "git_ssh_url", "homepage")]
    path = _get(project, "path_with_namespace") or _get(payload, "path_with_namespace")
    owner = _get(project, "namespace") if "/" not in path else path.rpartition("/")[0]
    instance_host = (urlsplit(instance).hostname or "").lower() if instance else ""
    name = _get(payload, "object_kind") or _get(payload, "event_name")
    if name in ("push", "tag_push", "repository_update"):
        return _event("gitlab", "push", "", delivery, owner, urls, host=_host_of(tuple(u for u in urls if u)))
    if name.startswith("project_"):  # system hooks: project_create, project_rename, project_transfer, ...
        if instance and path:
            urls.append(instance.rstrip("/") + "/" + path)
        old = _get(payload, "old_path_with_namespace")
        if instance and old:
            urls.append(instance.rstrip("/") + "/" + old)
        return _event("gitlab", "repository", name, delivery, owner, urls, host=instance_host)
    return _event("gitlab", "other", name[:40] or event[:40], delivery, owner, urls)


def parse_event(forge: str, headers: Mapping[str, str], body: bytes) -> HookEvent | None:
    """The event a verified body describes, or None when the body is not the JSON object the forge sends."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    if not isinstance(payload, dict):
        return None
    if forge == "github":
        return _github_like("github", headers.get("x-github-event", ""), payload, headers.get("x-github-delivery", ""))
    if forge == "gitea":
        event = headers.get("x-gitea-event") or headers.get("x-forgejo-event") or headers.get("x-gogs-event", "")
        delivery = headers.get("x-gitea-delivery") or headers.get("x-forgejo-delivery", "")
        return _github_like("gitea", event, payload, delivery)
    return _gitlab(headers.get("x-gitlab-event", ""), payload, headers.get("x-gitlab-event-uuid", ""),
                   headers.get("x-gitlab-instance", ""))


def delivery_of(forge: str, headers: Mapping[str, str]) -> str:
    names = {"github": ("x-github-delivery",), "gitlab": ("x-gitlab-event-uuid",),
             "gitea": ("x-gitea-delivery", "x-forgejo-delivery")}[forge]
    for name in names:
        if headers.get(name):
            return headers[name]
    return ""


# ----------------------------------------------------------------------------- the signature

def _hmac_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signed_hosts(forge: str, headers: Mapping[str, str], body: bytes, secrets: Mapping[str, str]) -> list[str]:
    """The hosts whose secret this request carries (normally one; none: forged). Constant time per secret."""
    if forge == "gitlab":
        token = headers.get("x-gitlab-token", "")
        if not token:
            return []
        return [host for host, secret in secrets.items() if hmac.compare_digest(token.encode(), secret.encode())]
    if forge == "github":
        offered = [headers.get("x-hub-signature-256", "")]
    else:
        offered = [headers.get("x-forgejo-signature", ""), headers.get("x-gitea-signature", ""),
                   headers.get("x-hub-signature-256", "")]
    digests = []
    for value in offered:
        if value.startswith("sha256="):
            value = value[len("sha256="):]
        if _HEX64.fullmatch(value):
            digests.append(value.lower())
    if not digests:
        return []
    hosts = []
    for host, secret in secrets.items():
        expected = _hmac_hex(secret, body)
        if any(hmac.compare_digest(expected, digest) for digest in digests):
            hosts.append(host)
    return hosts


# ----------------------------------------------------------------------------- the face

class RepoMatcher:
    """Which tracked repository (or tracked organization) a webhook's URLs name."""

    def __init__(self, engine, clock: Callable[[], float] = time.monotonic):
        self.engine = engine
        self._clock = clock
        self._lock = threading.Lock()
        self._table: dict[tuple[str, str], str] = {}
        self._built = float("-inf")

    def _keys(self) -> dict[tuple[str, str], str]:
        with self._lock:
            if self._clock() - self._built > MATCH_CACHE_SECONDS:
                table = {}
                for repo in self.engine.repos():
                    key = repo_key(repo.source)
                    if key:
                        table[key] = repo.name
                self._table, self._built = table, self._clock()
            return self._table

    def forget(self) -> None:
        with self._lock:
            self._built = float("-inf")

    def repo(self, event: HookEvent) -> str | None:
        table = self._keys()
        for url in event.urls:
            key = repo_key(url)
            if key and key[0] == event.host and key in table:
                return table[key]
        return None

    def organization(self, event: HookEvent) -> str | None:
        """The tracked organization the event's repository belongs to: its owner, or a group above it
        (a GitLab group tracked whole includes its subgroups)."""
        if not event.owner or not event.site:
            return None
        parts = event.owner.split("/")
        for depth in range(len(parts), 0, -1):
            org = self.engine.org_of(event.site, "/".join(parts[:depth]))
            if org is not None:
                return org
        return None


class WebhookFace:
    """Checks, records and acts on one webhook request (the WSGI side is `wsgi_hooks`)."""

    def __init__(self, settings: Settings, engine, queue, clock: Callable[[], datetime] | None = None):
        self.secrets = dict(settings.webhook_secrets)
        self.engine = engine
        self.queue = queue  # bot.service.syncs.SyncQueue (or anything with request_repo/request_org)
        self.matcher = RepoMatcher(engine)
        self._now = clock or (lambda: datetime.now(timezone.utc))

    def check_length(self, content_length: str | None) -> HookAnswer | None:
        if content_length is None or not content_length.isdigit():
            return HookAnswer(411, "no Content-Length")
        if int(content_length) > MAX_BODY_BYTES:
            return HookAnswer(413, f"body larger than {MAX_BODY_BYTES} bytes")
        return None

    def handle(self, forge: str, headers: Mapping[str, str], body: bytes) -> HookAnswer:
        """The answer to a request whose body was read (`headers` keys lower-case). Logs one line."""
        from .. import metrics

        answer, event, outcome = self._handle(forge, headers, body)
        metrics.WEBHOOK_DELIVERIES.labels(forge=forge, status=str(answer.status)).inc()
        if answer.status in (401, 403):
            log.warning("refused a webhook to /hooks/%s: %s (%s)", forge, answer.status, answer.text)
        elif answer.status >= 400:
            log.info("refused a webhook to /hooks/%s: %s (%s)", forge, answer.status, answer.text)
        else:
            log.info("webhook %s %s from %s (delivery %s): %s", forge, event.kind, event.host, event.delivery, outcome)
        return answer

    def _handle(self, forge: str, headers: Mapping[str, str], body: bytes):
        hosts = signed_hosts(forge, headers, body, self.secrets)
        if not hosts:
            what = "token" if forge == "gitlab" else "signature"
            return HookAnswer(401, f"{what} does not match any secret in GAD_WEBHOOK_SECRETS"), None, ""
        delivery = delivery_of(forge, headers)
        if not _DELIVERY.fullmatch(delivery):
            return HookAnswer(400, "no delivery id header"), None, ""
        event = parse_event(forge, headers, body)
        if event is None:
            return HookAnswer(400, "body is not a JSON object: set the webhook's content type to application/json"), None, ""
        if event.kind != "ping" and event.host not in hosts:
            return HookAnswer(403, "the repository is on another host than the secret is for"), None, ""
        now = self._now()
        replayed = HookAnswer(409, "delivery already received (a replay)"), None, ""
        if self.engine.index.delivery_seen(delivery, now - RETAIN_DELIVERIES):
            return replayed
        heard = hosts[0] if event.kind == "ping" else event.host
        acting = event.kind in ("push", "repository")
        name = self.matcher.repo(event) if acting else None
        org = self.matcher.organization(event) if acting and name is None else None
        if name is None and org is None:  # nothing to do: nothing kept but when the host was heard from (step 5)
            self._heard(heard, now)
            if event.kind == "ping":
                return HookAnswer(200, "pong"), event, "ping answered"
            if not acting:
                return HookAnswer(202, "ignored: not a push or repository event"), event, "not a push; ignored"
            return HookAnswer(202, "ignored: not a tracked repository"), event, "not a tracked repository; ignored"
        taken = self.engine.index.record_webhook_body(
            event.host, hashlib.sha256(body).hexdigest(), now, timedelta(seconds=REPEATED_BODY_SECONDS),
            repository=name or "")
        if not taken:
            # its id is not kept: replayed under fresh ids, a body would otherwise add a row a request for 30 days
            return (HookAnswer(200, "duplicate: the same body was accepted within the hour"), event,
                    "duplicate of a body accepted within the hour under another delivery id; ignored")
        # nor is the id of a body seen within the hour and taken again (another body for its repository came
        # between): two captured bodies posted in turn would grow the index as well
        if taken == "new" and not self.engine.index.record_delivery(delivery, heard, now, RETAIN_DELIVERIES):
            return replayed  # the same id in another request at the same moment
        if name is not None:
            self.queue.request_repo(name)
            return HookAnswer(202, "sync scheduled"), event, f"sync of {name} scheduled"
        self.queue.request_org(org)
        self.matcher.forget()  # the organization's sync may track a new repository
        return HookAnswer(202, "organization sync scheduled"), event, f"sync of organization {org} scheduled"

    def _heard(self, host: str, now: datetime) -> None:
        """Note that `host` (a key of GAD_WEBHOOK_SECRETS: its secret signed the request) was heard from: one meta
        row per host, rewritten at most once a minute (a replayed ping is no reason to write the index each time)."""
        index = self.engine.index
        last = index.get_meta(HEARD_KEY + host)
        try:
            if last and now - datetime.fromisoformat(last) < HEARD_EVERY:
                return
        except ValueError:  # not a time: written anew
            pass
        index.set_meta(HEARD_KEY + host, now.astimezone(timezone.utc).isoformat(timespec="seconds"))


def last_heard(index, hosts) -> dict[str, datetime]:
    """When each of `hosts` was last heard from: the later of its last delivery id kept (a push, a repository
    event) and its last request that asked for nothing (a ping, an ignored event), for `doctor`."""
    last = index.last_deliveries()
    for host in hosts:
        value = index.get_meta(HEARD_KEY + host)
        try:
            heard = datetime.fromisoformat(value) if value else None
        except ValueError:
            heard = None
        if heard is not None and (host not in last or heard > last[host]):
            last[host] = heard
    return last


_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 409: "Conflict", 411: "Length Required", 413: "Content Too Large",
            500: "Internal Server Error", 503: "Service Unavailable"}


def _plain(start_response, status: int, text: str) -> list[bytes]:
    body = (text + "\n").encode()
    start_response(f"{status} {_REASONS[status]}", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def wsgi_hooks(face: WebhookFace):
    """The WSGI application of /hooks/<forge> (and /healthz, for a webhook-only port)."""

    def application(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/healthz":
            return _plain(start_response, 200, "ok")
        forge = path[len("/hooks/"):] if path.startswith("/hooks/") else ""
        if forge not in FORGES:
            return _plain(start_response, 404, "not found")
        if environ.get("REQUEST_METHOD") != "POST":
            return _plain(start_response, 405, "POST only")
        refused = face.check_length(environ.get("CONTENT_LENGTH"))
        if refused is not None:
            log.info("refused a webhook to /hooks/%s: %s (%s)", forge, refused.status, refused.text)
            return _plain(start_response, refused.status, refused.text)
        length = int(environ["CONTENT_LENGTH"])
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items()
                   if key.startswith("HTTP_")}
        try:
            answer = face.handle(forge, headers, body)
        except Exception as error:
            if is_disk_full(error):  # nothing was recorded or accepted: the forge may deliver it again later
                log.warning("refused a webhook to /hooks/%s: 503 (the data disk is full)", forge)
                return _plain(start_response, 503, "gad-bot's data disk is full; deliver this again later")
            log.exception("handling a webhook to /hooks/%s failed", forge)  # the forge retries a 500
            return _plain(start_response, 500, "could not handle the webhook")
        return _plain(start_response, answer.status, answer.text)

    return application
