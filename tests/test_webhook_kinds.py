"""Webhook deliveries beyond a push to a branch, and deliveries that speak for another host, through the webhook face
(bot/faces/webhooks.py: WebhookFace.handle, as serve's WSGI side calls it) onto a real tracked repository whose sync
runs at once: what a person sees is the figure of the next report, checked against git over the forge's repository.

- A branch or tag created or deleted (GitHub's and Gitea's `create` and `delete` events, GitLab's Tag Push Hook)
  changes what counts: a commit only a new tag or branch reaches starts counting, one only a deleted ref reached
  stops. Each must sync the repository, as a push does.
- A delivery signed with one host's secret may speak only for that host's repositories: a body whose clone URL is
  on the signing host but whose other URLs name a repository tracked from another host schedules nothing.

Bodies are shaped as each forge documents them (tests/forgehooks.py).
"""

from __future__ import annotations

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import Query
from bot.faces.webhooks import WebhookFace
from tests.faults import GitHttpServer
from tests.forgehooks import (ForgeRepo, delivery, github_push, github_ref, gitea_push, gitea_ref, gitlab_push,
                              gitlab_tag_push)
from tests.gitbuild import RepoBuilder, oracle_gad

SECRET = "webhook-secret-0123456789abcdef"
EVIL = "evil-secret-0123456789abcdef"


class SyncNow:
    """The sync queue's part WebhookFace calls, syncing at once in this process (serve's queue does it in a worker)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.asked: list[tuple[str, str]] = []

    def request_repo(self, name: str) -> None:
        self.asked.append(("repo", name))
        (result,) = self.engine.sync([name])
        assert result.error is None, result.error

    def request_org(self, name: str) -> None:
        self.asked.append(("org", name))


class Site:
    """One repository on a loopback forge (git smart HTTP), tracked by its URL; its webhook face."""

    def __init__(self, tmp_path, git: GitHttpServer):
        self.git = git
        self.upstream = RepoBuilder(tmp_path / "srv" / "acme" / "web.git", bare=True)
        up = self.upstream
        up.commit(name="Ann", email="ann@example.com", date="2024-01-02")
        up.commit(name="Bob", email="bob@example.com", date="2024-01-03")
        # reached only by the branch `topic`, and only by the tag `v0.9`: deleting either stops a day counting
        up.commit("topic", parents=[up.tip("main")], name="Dee", email="dee@example.com", date="2024-02-01")
        up.commit("refs/tags/v0.9", parents=[up.tip("main")], name="Eve", email="eve@example.com", date="2024-02-02")
        settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"),
                                      "GAD_WEBHOOK_SECRETS": f"127.0.0.1={SECRET},evil.example={EVIL}"})
        self.engine = Engine.open(settings)
        self.engine.track(git.url("acme/web.git"), "web")
        self.queue = SyncNow(self.engine)
        self.face = WebhookFace(settings, self.engine, self.queue)
        self.repo = ForgeRepo(f"http://127.0.0.1:{git.port}", "acme/web")

    def figure(self) -> int:
        return self.engine.report(Query(repos=("web",))).totals.two_gad

    def git_figure(self) -> int:
        return 2 * oracle_gad(self.upstream.path)

    def send(self, forge: str, payload: dict, secret: str = SECRET, event: str | None = None):
        body, headers = delivery(forge, payload, secret, event=event, instance=self.repo.base)
        return self.face.handle(forge, {k.lower(): v for k, v in headers.items()}, body)


@pytest.fixture
def site(tmp_path):
    with GitHttpServer(tmp_path / "srv") as git:
        yield Site(tmp_path, git)


def new_branch(site: Site) -> str:
    up = site.upstream
    return str(up.commit("feature", parents=[up.tip("main")], name="Fay", email="fay@example.com", date="2024-03-01"))


def new_tag(site: Site) -> str:
    """v1.1 on a commit no branch reaches (a release cut from a detached build)."""
    up = site.upstream
    return str(up.commit("refs/tags/v1.1", parents=[up.tip("main")], name="Gus", email="gus@example.com",
                         date="2024-03-02"))


def delete_branch(site: Site) -> str:
    gone = str(site.upstream.tip("topic"))
    site.upstream.delete_ref("topic")
    return gone


def delete_tag(site: Site) -> str:
    gone = str(site.upstream.tip("refs/tags/v0.9"))
    site.upstream.delete_ref("refs/tags/v0.9")
    return gone


# (forge, the event header's value, what changes upstream, the body that tells of it given the commit concerned)
CASES = {
    "github create branch": ("github", "create", new_branch, lambda r, sha: github_ref(r, "feature", "branch", True)),
    "github create tag": ("github", "create", new_tag, lambda r, sha: github_ref(r, "v1.1", "tag", True)),
    "github delete branch": ("github", "delete", delete_branch, lambda r, sha: github_ref(r, "topic", "branch", False)),
    "github delete tag": ("github", "delete", delete_tag, lambda r, sha: github_ref(r, "v0.9", "tag", False)),
    "gitea create tag": ("gitea", "create", new_tag, lambda r, sha: gitea_ref(r, "v1.1", "tag", True, sha)),
    "gitea create branch": ("gitea", "create", new_branch, lambda r, sha: gitea_ref(r, "feature", "branch", True, sha)),
    "gitea delete branch": ("gitea", "delete", delete_branch, lambda r, sha: gitea_ref(r, "topic", "branch", False)),
    "gitlab tag push": ("gitlab", "Tag Push Hook", new_tag, lambda r, sha: gitlab_tag_push(r, "v1.1", None, sha)),
    "gitlab tag deleted": ("gitlab", "Tag Push Hook", delete_tag, lambda r, sha: gitlab_tag_push(r, "v0.9", sha, None)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_branch_or_tag_created_or_deleted_syncs_the_repository(site, case):
    forge, event, change, body = CASES[case]
    assert site.figure() == site.git_figure() == 2 * 4  # Ann, Bob, Dee (topic), Eve (v0.9): one day each
    sha = change(site)
    assert site.git_figure() != site.figure()  # the forge changed; gad-bot has not heard yet
    answer = site.send(forge, body(site.repo, sha), event=event)
    assert (answer.status, answer.text) == (202, "sync scheduled")
    assert site.queue.asked == [("repo", "web")]
    assert site.figure() == site.git_figure()


FORGE_PUSH = {"github": github_push, "gitea": gitea_push, "gitlab": gitlab_push}


def naming_another_host(forge: str, repo: ForgeRepo, before: str, after: str) -> dict:
    """A push body whose clone URL is on evil.example (the host whose secret signs it) and whose other URLs name the
    repository tracked from 127.0.0.1."""
    payload = FORGE_PUSH[forge](repo, before, after)
    if forge == "gitlab":
        payload["project"]["git_http_url"] = "https://evil.example/acme/web.git"
        payload["project"]["git_ssh_url"] = "git@evil.example:acme/web.git"
    else:
        payload["repository"]["clone_url"] = "https://evil.example/acme/web.git"
        payload["repository"]["ssh_url"] = "git@evil.example:acme/web.git"
    return payload


@pytest.mark.parametrize("forge", ["github", "gitea", "gitlab"])
def test_a_delivery_signed_by_one_host_cannot_sync_another_hosts_repository(site, forge):
    """evil.example's secret signs a body whose clone URL is on evil.example (so the body's host is the signer's) and
    whose web URL (GitLab: its repository.homepage and web_url) names the repository tracked from 127.0.0.1: nothing
    is scheduled. The same push signed by 127.0.0.1 syncs it."""
    up = site.upstream
    before = str(up.tip("main"))
    after = str(up.commit(name="Hal", email="hal@example.com", date="2024-04-01"))
    stale = site.figure()
    assert stale != site.git_figure()
    answer = site.send(forge, naming_another_host(forge, site.repo, before, after), secret=EVIL)
    assert (answer.status, answer.text) == (202, "ignored: not a tracked repository")
    assert site.queue.asked == [] and site.figure() == stale
    answer = site.send(forge, FORGE_PUSH[forge](site.repo, before, after))
    assert (answer.status, answer.text) == (202, "sync scheduled")
    assert site.queue.asked == [("repo", "web")] and site.figure() == site.git_figure()
