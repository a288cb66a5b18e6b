"""A loopback forge: a GitHub-, GitLab- or Gitea-shaped listing API and git smart HTTP (`git http-backend`).

    with ForgeStub(tmp_path / "srv", "github") as forge:
        forge.add("acme/web", archived=True)          # the repository is served from srv/acme/web.git
        settings = {"GAD_FORGES": forge.forges_setting}
        engine.track_org(engine.org_owner(forge.owner_url("acme")))

The API answers as the public docs describe each forge:

- GitHub (REST, "List organization repositories" / "List repositories for a user"):
  `/api/v3/orgs/{org}/repos?per_page=` and `/users/{user}/repos`, 404 for an unknown org,
  pagination by `Link: <...>; rel="next"`; rows with id, full_name, clone_url, archived, fork,
  private, size.
- GitLab (REST v4, "List a group's projects"): `/api/v4/groups/{id}/projects?include_subgroups=true`
  with `{id}` the URL-encoded full path, `/api/v4/groups/{id}`, pagination by `X-Next-Page`
  (and `X-Page`, `X-Per-Page`, `X-Total`); rows with id, path_with_namespace, http_url_to_repo,
  archived, forked_from_project, visibility, empty_repo.
- Gitea/Forgejo (`/api/v1/orgs/{org}/repos?page=&limit=`), `X-Total-Count`; rows with id,
  full_name, clone_url, archived, fork, private, empty.

Private repositories are listed only to a request carrying `token` in the forge's own header, as its API
docs say (TOKEN_HEADERS): GitHub `Authorization: Bearer TOKEN` (or the older `token TOKEN`), GitLab
`PRIVATE-TOKEN: TOKEN` (or `Authorization: Bearer TOKEN`), Gitea/Forgejo `Authorization: token TOKEN`.
Credentials in any other form, or a token the forge does not know, are refused with 401, as the forges
refuse bad credentials (a client that sent GitLab's header to Gitea would otherwise pass here and fail
there). `answers` (a list of
(status, headers, body) tuples) replaces the next API answers (rate limits, hostile bodies; a body
that is not bytes but pieces of bytes is sent chunked, without Content-Length);
`requests` records (path, authorization headers) of every API request.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.faults import GitHttpServer
from tests.gitbuild import RepoBuilder

API_PREFIX = {"github": "/api/v3", "gitlab": "/api/v4", "gitea": "/api/v1"}
# (header, value before the token) each forge reads a token from: GitHub "Authenticating to the REST API",
# GitLab "REST API authentication" (personal access tokens), Gitea "API Usage: Authentication"
TOKEN_HEADERS = {"github": (("Authorization", "Bearer "), ("Authorization", "token ")),
                 "gitlab": (("PRIVATE-TOKEN", ""), ("Authorization", "Bearer ")),
                 "gitea": (("Authorization", "token "),)}
CREDENTIAL_HEADERS = ("Authorization", "PRIVATE-TOKEN")


@dataclass
class StubRepo:
    id: int
    full_name: str
    archived: bool = False
    fork: bool = False
    private: bool = False
    empty: bool = False


class ForgeStub(GitHttpServer):
    def __init__(self, base: Path, kind: str, *, token: str | None = None, max_per_page: int = 100, **server):
        """`server`: GitHttpServer's options (host, port, tls, hostname; mode and redirect_to for its git side)."""
        base.mkdir(parents=True, exist_ok=True)
        super().__init__(base, **server)
        self.kind = kind
        self.token = token
        self.max_per_page = max_per_page
        self.listed: list[StubRepo] = []
        self.answers: list[tuple[int, dict[str, str], bytes]] = []
        self.api_requests: list[tuple[str, str]] = []
        self._next_id = 1000

    # -- the test's side ---------------------------------------------------------------------
    @property
    def host(self) -> str:
        """host[:port] as GAD_FORGES names the forge: the port only when it is not the scheme's default."""
        return self.url("").split("://", 1)[1].rstrip("/")

    @property
    def forges_setting(self) -> str:
        return f"{self.host}={self.kind}:{self.scheme}://{self.host}{API_PREFIX[self.kind]}"

    def owner_url(self, owner: str) -> str:
        return self.url(owner)

    def clone_url(self, full_name: str) -> str:
        return self.url(f"{full_name}.git")

    def add(self, full_name: str, *, commits: list[tuple[str, str]] | None = None, **flags) -> StubRepo:
        """List a repository and serve it; `commits` as (author e-mail, YYYY-MM-DD) (default: two)."""
        self._next_id += 1
        repo = StubRepo(self._next_id, full_name, **flags)
        self.listed.append(repo)
        if not repo.empty:
            builder = RepoBuilder(self.base / f"{full_name}.git", bare=True)
            for email, day in commits or [("ann@acme.example", "2024-03-01"), ("bob@acme.example", "2024-03-02")]:
                builder.commit(name=email.split("@")[0].title(), email=email, date=day)
        return repo

    def rename(self, repo: StubRepo, new_full_name: str) -> None:
        """What a forge does on a rename or transfer: same id, new name, the repository moves."""
        (self.base / f"{new_full_name}.git").parent.mkdir(parents=True, exist_ok=True)
        (self.base / f"{repo.full_name}.git").rename(self.base / f"{new_full_name}.git")
        repo.full_name = new_full_name

    def delete(self, repo: StubRepo) -> None:
        self.listed.remove(repo)

    # -- the forge's side --------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(h.path)
        prefix = API_PREFIX[self.kind]
        if not parts.path.startswith(prefix + "/"):
            return super()._handle(h)
        auth = h.headers.get("Authorization", "") or h.headers.get("PRIVATE-TOKEN", "")
        self.api_requests.append((h.path, auth))
        if self.answers:
            status, headers, body = self.answers.pop(0)
            if not isinstance(body, bytes):  # pieces: sent chunked, with no Content-Length to go by
                return self._stream(h, status, body, headers)
            return self._reply(h, status, body, headers)
        query = dict(urllib.parse.parse_qsl(parts.query))
        path = parts.path[len(prefix):]
        authorized = self._authorized(h)
        if authorized is None:
            return self._json(h, 401, {"message": "Bad credentials" if self.kind == "github" else "401 Unauthorized"})
        segments = path.strip("/").split("/")
        if self.kind == "gitlab" and segments[0] == "groups" and len(segments) in (2, 3):
            group = urllib.parse.unquote(segments[1])
            members = [r for r in self.listed if r.full_name.startswith(group + "/")]
            if not members:
                return self._json(h, 404, {"message": "404 Group Not Found"})
            if len(segments) == 2:
                return self._json(h, 200, {"id": 7, "full_path": group})
            return self._page(h, parts, query, members, authorized)
        if len(segments) == 3 and segments[0] in ("orgs", "users") and segments[2] == "repos":
            members = [r for r in self.listed if r.full_name.split("/")[0] == segments[1]]
            if not members:
                return self._json(h, 404, {"message": "Not Found"})
            return self._page(h, parts, query, members, authorized)
        return self._json(h, 404, {"message": "Not Found"})

    def _authorized(self, h: BaseHTTPRequestHandler) -> bool | None:
        """True: this forge's token, in a header this forge reads; False: no credentials (anonymous); None: credentials
        in a form this forge does not read, or a token it does not know (401)."""
        sent = {name: h.headers.get(name) for name in CREDENTIAL_HEADERS if h.headers.get(name) is not None}
        if not sent:
            return False
        if len(sent) > 1 or self.token is None:
            return None
        ((name, value),) = sent.items()
        for header, scheme in TOKEN_HEADERS[self.kind]:
            if name == header and value.startswith(scheme) and value[len(scheme):] == self.token:
                return True
        return None

    def _page(self, h, parts, query: dict, members: list[StubRepo], authorized: bool) -> None:
        visible = [r for r in members if authorized or not r.private]
        size = min(int(query.get("per_page") or query.get("limit") or 30), self.max_per_page)
        page = int(query.get("page") or 1)
        rows = visible[(page - 1) * size: page * size]
        headers: dict[str, str] = {}
        more = page * size < len(visible)
        if self.kind == "github" and more:
            following = dict(query, page=str(page + 1))
            headers["Link"] = (f'<{self.url(parts.path[1:])}?{urllib.parse.urlencode(following)}>; rel="next", '
                               f'<{self.url(parts.path[1:])}?page=1>; rel="first"')
        elif self.kind == "gitlab":
            headers.update({"X-Page": str(page), "X-Per-Page": str(size), "X-Total": str(len(visible)),
                            "X-Next-Page": str(page + 1) if more else ""})
        elif self.kind == "gitea":
            headers["X-Total-Count"] = str(len(visible))
        return self._json(h, 200, [self._row(r) for r in rows], headers)

    def _row(self, repo: StubRepo) -> dict:
        url = self.clone_url(repo.full_name)
        if self.kind == "gitlab":
            return {"id": repo.id, "path_with_namespace": repo.full_name, "http_url_to_repo": url,
                    "archived": repo.archived, "visibility": "private" if repo.private else "public",
                    "empty_repo": repo.empty, **({"forked_from_project": {"id": 1}} if repo.fork else {})}
        row = {"id": repo.id, "full_name": repo.full_name, "clone_url": url, "archived": repo.archived,
               "fork": repo.fork, "private": repo.private}
        row.update({"empty": repo.empty} if self.kind == "gitea" else {"size": 0 if repo.empty else 120})
        return row

    @staticmethod
    def _stream(h, status: int, pieces, headers: dict[str, str]) -> None:
        h.send_response(status)
        for name, value in {**headers, "Transfer-Encoding": "chunked"}.items():
            h.send_header(name, value)
        h.end_headers()
        try:
            for piece in pieces:
                h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            h.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client stopped reading: what a bounded client does
            h.close_connection = True

    def _json(self, h, status: int, data, headers: dict[str, str] | None = None) -> None:
        self._reply(h, status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})})
