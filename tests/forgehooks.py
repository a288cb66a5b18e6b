"""Webhook deliveries as GitHub, GitLab and Gitea send them: headers, bodies, signatures.

Shapes follow each forge's own documentation (the fields gad-bot reads and the ones around them):
- GitHub: "Webhook events and payloads" (push, repository) and "Validating webhook deliveries":
  X-GitHub-Event, X-GitHub-Delivery (a GUID), X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256 of
  the body under the secret; User-Agent GitHub-Hookshot/...
- GitLab: "Webhook events" (Push Hook: object_kind push, project {git_http_url, git_ssh_url, web_url,
  path_with_namespace, namespace}, repository {...}) and "Webhooks": X-Gitlab-Event, X-Gitlab-Token
  (the secret token itself), X-Gitlab-Event-UUID, X-Gitlab-Instance, X-Gitlab-Webhook-UUID.
- Gitea: "Webhooks": X-Gitea-Event, X-Gitea-Delivery, X-Gitea-Signature (bare hex HMAC-SHA256; also
  X-Hub-Signature-256 with "sha256=" in Gitea 1.19+), and the X-GitHub-*/X-Gogs-* copies.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class ForgeRepo:
    """A repository as a forge at `base` (http://host:port) names it."""

    base: str
    path: str  # owner/name, or group/subgroup/name on GitLab

    @property
    def owner(self) -> str:
        return self.path.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]

    @property
    def clone_url(self) -> str:
        return f"{self.base}/{self.path}.git"

    @property
    def web_url(self) -> str:
        return f"{self.base}/{self.path}"

    @property
    def ssh_url(self) -> str:
        host = self.base.split("://", 1)[1].split(":")[0]
        return f"git@{host}:{self.path}.git"


def _commit(after: str, who: str, url: str) -> dict:
    return {"id": after, "message": "a change\n", "timestamp": "2026-12-01T12:00:00+00:00", "url": url,
            "author": {"name": who.title(), "email": f"{who}@example.com", "username": who},
            "committer": {"name": who.title(), "email": f"{who}@example.com", "username": who},
            "added": [], "removed": [], "modified": ["file.txt"]}


def github_push(repo: ForgeRepo, before: str, after: str, who: str = "cy") -> dict:
    return {"ref": "refs/heads/main", "before": before, "after": after, "created": False, "deleted": False,
            "forced": False, "base_ref": None, "compare": f"{repo.web_url}/compare/{before[:12]}...{after[:12]}",
            "commits": [_commit(after, who, f"{repo.web_url}/commit/{after}")],
            "head_commit": _commit(after, who, f"{repo.web_url}/commit/{after}"),
            "repository": {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": repo.name,
                           "full_name": repo.path, "private": False,
                           "owner": {"login": repo.owner, "id": 1, "type": "Organization"},
                           "html_url": repo.web_url, "description": "SECRET-DESCRIPTION-IN-BODY",
                           "fork": False, "url": f"{repo.base}/api/v3/repos/{repo.path}",
                           "git_url": f"git://{repo.base.split('://', 1)[1]}/{repo.path}.git",
                           "ssh_url": repo.ssh_url, "clone_url": repo.clone_url, "default_branch": "main",
                           "master_branch": "main", "organization": repo.owner},
            "pusher": {"name": who, "email": f"{who}@example.com"},
            "organization": {"login": repo.owner, "id": 1},
            "sender": {"login": who, "id": 2, "type": "User"}}


def github_repository(repo: ForgeRepo, action: str = "created") -> dict:
    body = github_push(repo, "0" * 40, "0" * 40)
    return {"action": action, "repository": body["repository"], "organization": body["organization"],
            "sender": body["sender"]}


def gitlab_push(repo: ForgeRepo, before: str, after: str, who: str = "cy") -> dict:
    return {"object_kind": "push", "event_name": "push", "before": before, "after": after, "ref": "refs/heads/main",
            "ref_protected": True, "checkout_sha": after, "user_id": 4, "user_name": who.title(),
            "user_username": who, "user_email": "", "project_id": 15,
            "project": {"id": 15, "name": repo.name, "description": "SECRET-DESCRIPTION-IN-BODY",
                        "web_url": repo.web_url, "git_ssh_url": repo.ssh_url, "git_http_url": repo.clone_url,
                        "namespace": repo.owner.rpartition("/")[2], "visibility_level": 0,
                        "path_with_namespace": repo.path, "default_branch": "main",
                        "homepage": repo.web_url, "url": repo.ssh_url, "ssh_url": repo.ssh_url,
                        "http_url": repo.clone_url},
            "commits": [_commit(after, who, f"{repo.web_url}/-/commit/{after}")], "total_commits_count": 1,
            "repository": {"name": repo.name, "url": repo.ssh_url, "description": "",
                           "homepage": repo.web_url, "git_http_url": repo.clone_url,
                           "git_ssh_url": repo.ssh_url, "visibility_level": 0}}


def gitea_push(repo: ForgeRepo, before: str, after: str, who: str = "cy") -> dict:
    owner = {"id": 1, "login": repo.owner, "full_name": "", "email": "", "username": repo.owner}
    return {"ref": "refs/heads/main", "before": before, "after": after,
            "compare_url": f"{repo.web_url}/compare/{before}...{after}",
            "commits": [_commit(after, who, f"{repo.web_url}/commit/{after}")], "total_commits": 1,
            "head_commit": _commit(after, who, f"{repo.web_url}/commit/{after}"),
            "repository": {"id": 140, "owner": owner, "name": repo.name, "full_name": repo.path,
                           "description": "SECRET-DESCRIPTION-IN-BODY", "private": False, "fork": False,
                           "html_url": repo.web_url, "ssh_url": repo.ssh_url, "clone_url": repo.clone_url,
                           "default_branch": "main"},
            "pusher": {"id": 2, "login": who, "username": who},
            "sender": {"id": 2, "login": who, "username": who}}


def gitea_repository(repo: ForgeRepo, action: str = "created") -> dict:
    """Gitea's (and Forgejo's) `repository` event: action created or deleted, the repository, its organization."""
    body = gitea_push(repo, "0" * 40, "0" * 40)
    organization = {"id": 7, "login": repo.owner, "username": repo.owner, "full_name": "", "email": ""}
    return {"action": action, "repository": body["repository"], "organization": organization,
            "sender": body["sender"]}


def gitlab_project_create(repo: ForgeRepo) -> dict:
    """A GitLab system hook's `project_create` (X-Gitlab-Event: System Hook): paths, no URLs."""
    return {"created_at": "2026-12-01T12:00:00Z", "updated_at": "2026-12-01T12:00:00Z",
            "event_name": "project_create", "name": repo.name, "owner_email": "", "owner_name": "Root",
            "owners": [{"name": "Root", "email": ""}], "path": repo.name, "path_with_namespace": repo.path,
            "project_id": 74, "project_namespace_id": 9, "project_visibility": "private"}


def github_ref(repo: ForgeRepo, ref: str, ref_type: str, created: bool, sha: str = "") -> dict:
    """GitHub's `create` or `delete` event (a branch or tag created or deleted: "Webhook events and payloads");
    Gitea and Forgejo send the same shape under the same event names, `create` with the commit's `sha` too."""
    body = github_push(repo, "0" * 40, "0" * 40)
    payload = {"ref": ref, "ref_type": ref_type, "pusher_type": "user", "repository": body["repository"],
               "organization": body["organization"], "sender": body["sender"]}
    if created:
        payload.update(master_branch="main", description=None, **({"sha": sha} if sha else {}))
    return payload


def gitea_ref(repo: ForgeRepo, ref: str, ref_type: str, created: bool, sha: str = "") -> dict:
    body = gitea_push(repo, "0" * 40, "0" * 40)
    payload = {"ref": ref, "ref_type": ref_type, "repository": body["repository"], "sender": body["sender"]}
    payload.update({"sha": sha} if created else {"pusher_type": "user"})
    return payload


def gitlab_tag_push(repo: ForgeRepo, tag: str, before: str | None, after: str | None) -> dict:
    """GitLab's Tag Push Hook ("Webhook events": object_kind tag_push): a tag created (`before` all zeros, `after`
    its commit) or deleted (`after` all zeros, no checkout_sha)."""
    body = gitlab_push(repo, before or "0" * 40, after or "0" * 40)
    body.update(object_kind="tag_push", event_name="tag_push", ref=f"refs/tags/{tag}", checkout_sha=after,
                commits=[], total_commits_count=0)
    return body


# a repository created in an organization: (payload builder, the event header's value)
CREATED = {"github": (lambda repo: github_repository(repo, "created"), "repository"),
           "gitlab": (gitlab_project_create, "System Hook"),
           "gitea": (lambda repo: gitea_repository(repo, "created"), "repository")}

PUSH = {"github": github_push, "gitlab": gitlab_push, "gitea": gitea_push}


def delivery(forge: str, payload: dict | bytes, secret: str, *, event: str | None = None,
             delivery_id: str | None = None, instance: str = "") -> tuple[bytes, dict[str, str]]:
    """The body and headers of one delivery of `payload` (or of exactly these bytes), signed with `secret` as
    `forge` signs."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    did = delivery_id or str(uuid.uuid4())
    mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json"}
    if forge == "github":
        headers.update({"User-Agent": "GitHub-Hookshot/044aadd", "X-GitHub-Event": event or "push",
                        "X-GitHub-Delivery": did, "X-GitHub-Hook-ID": "292430182",
                        "X-Hub-Signature-256": f"sha256={mac}"})
    elif forge == "gitlab":
        headers.update({"User-Agent": "GitLab/17.6.0", "X-Gitlab-Event": event or "Push Hook",
                        "X-Gitlab-Token": secret, "X-Gitlab-Event-UUID": did,
                        "X-Gitlab-Webhook-UUID": "2c3c3a0c-7b1b-4c5e-8f36-1f0a5a7d0c11",
                        "X-Gitlab-Instance": instance})
    else:
        headers.update({"X-Gitea-Event": event or "push", "X-Gitea-Event-Type": event or "push",
                        "X-Gitea-Delivery": did, "X-Gitea-Signature": mac, "X-Hub-Signature-256": f"sha256={mac}",
                        "X-GitHub-Event": event or "push", "X-GitHub-Delivery": did,
                        "X-Gogs-Event": event or "push", "X-Gogs-Delivery": did, "X-Gogs-Signature": mac})
    return body, headers


def post(url: str, body: bytes, headers: dict[str, str], timeout: float = 10.0) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
